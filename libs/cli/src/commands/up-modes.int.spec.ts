import { mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { closeDataDir } from './up.js';

const mode = (p: string) => statSync(p).mode & 0o777;

describe('closeDataDir (gpunet up)', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'gpunet-up-modes-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('closes a data dir left open by an older version: secrets 0600, their directories 0700, passable (0711) only for job users', async () => {
    const data = join(dir, '.gpunet');
    mkdirSync(join(data, 'logs'), { recursive: true, mode: 0o755 });
    mkdirSync(join(data, 'nats', 'jetstream'), { recursive: true, mode: 0o755 });
    for (const f of ['events.db', 'events.db-wal', 'api-keys.yaml', 'state.json', 'logs/intake.log', 'nats/jetstream/meta.inf']) writeFileSync(join(data, f), 'x', { mode: 0o644 });

    await closeDataDir(data, true);
    expect(mode(data)).toBe(0o711);
    expect(mode(join(data, 'nodes'))).toBe(0o711);
    for (const f of ['events.db', 'events.db-wal', 'api-keys.yaml', 'state.json', 'logs/intake.log', 'nats/jetstream/meta.inf']) expect([f, mode(join(data, f))]).toEqual([f, 0o600]);
    for (const d of ['logs', 'nats', 'nats/jetstream']) expect([d, mode(join(data, d))]).toEqual([d, 0o700]);

    await closeDataDir(data, false); // no agents below it: nobody else needs to pass
    expect(mode(data)).toBe(0o700);
  });
});
