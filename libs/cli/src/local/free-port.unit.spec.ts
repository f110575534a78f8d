import { freePort } from './environment.js';

describe('freePort', () => {
  it('never hands out a port twice in one process, though the OS may offer a closed one again', async () => {
    const ports: number[] = [];
    for (let i = 0; i < 300; i++) ports.push(await freePort());
    expect(new Set(ports).size).toBe(ports.length);
    expect(ports.every((p) => p > 0 && p < 65_536)).toBe(true);
  });
});
