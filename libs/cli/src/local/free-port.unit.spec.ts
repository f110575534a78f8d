import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { freePort } from './environment.js';

describe('freePort', () => {
  it('never hands out a port twice in one process, though the OS may offer a closed one again', async () => {
    const ports: number[] = [];
    for (let i = 0; i < 300; i++) ports.push(await freePort());
    expect(new Set(ports).size).toBe(ports.length);
    expect(ports.every((p) => p > 0 && p < 65_536)).toBe(true);
  });

  it('picks below the kernel\'s ephemeral ports, which outgoing connections take by themselves', async () => {
    const [low] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
    const ports: number[] = [];
    for (let i = 0; i < 50; i++) ports.push(await freePort());
    expect(ports.every((p) => p >= 20_000 && p < low!)).toBe(true);
  });

  it('never hands out a port something listens on', async () => {
    const taken: Server[] = [];
    try {
      // Occupy a port, then check that nothing handed out is one in use.
      for (let i = 0; i < 20; i++) {
        const port = await freePort();
        const server = createServer();
        await new Promise<void>((resolve, reject) => {
          server.once('error', reject);
          server.listen(port, '127.0.0.1', () => resolve());
        });
        taken.push(server);
      }
      expect(taken).toHaveLength(20);
    } finally {
      await Promise.all(taken.map((s) => new Promise((r) => s.close(r))));
    }
  });
});
