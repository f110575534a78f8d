import { mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer, type Server } from 'node:net';
import { freePort, reservePort } from './environment.js';

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

  it('keeps a port another process reserved in the last minutes from being handed out again, and takes back an old reservation', () => {
    const dir = mkdtempSync(join(tmpdir(), 'gpunet-ports-test-'));
    try {
      expect(reservePort(21_001, dir)).toBe(true);
      expect(readFileSync(join(dir, '21001'), 'utf8')).toBe(String(process.pid));
      // Another process's fresh reservation: not this one's to take.
      writeFileSync(join(dir, '21002'), '999999');
      expect(reservePort(21_002, dir)).toBe(false);
      expect(reservePort(21_001, dir)).toBe(false);
      // Ten minutes old: its process has bound the port long since, or never will.
      const old = new Date(Date.now() - 10 * 60_000);
      utimesSync(join(dir, '21002'), old, old);
      expect(reservePort(21_002, dir)).toBe(true);
      expect(readFileSync(join(dir, '21002'), 'utf8')).toBe(String(process.pid));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
