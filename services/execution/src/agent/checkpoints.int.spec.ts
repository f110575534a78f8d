import { BlobStore } from '#blobs';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { chown, link, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { startNatsServer, type TestNatsServer } from '../../../../test/support/nats-server.js';
import { CheckpointKeeper, restoreCheckpoint } from './checkpoints.js';

// The agent (root) reads a job's checkpoint directory; a job must not make it read anything else.
const TEAM = 'team-ckpt';
const JOB_UID = 61950;

let nats: TestNatsServer;
let nc: NatsConnection;
let blobs: BlobStore;
let dir: string;

beforeAll(async () => {
  [nats, dir] = await Promise.all([startNatsServer(), mkdtemp(join(tmpdir(), 'gpunet-ckpt-'))]);
  nc = await connect({ servers: nats.url });
  blobs = await BlobStore.open(nc);
});
afterAll(async () => {
  await nc?.close();
  await nats?.stop();
  await rm(dir, { recursive: true, force: true });
});

function keeper(name: string, recorded: { sequence: number; sha256: string; size: number }[], notices: string[], lastSequence = 0) {
  return new CheckpointKeeper({
    blobs,
    team: TEAM,
    dir: join(dir, name, 'checkpoints'),
    scratch: join(dir, name, 'snapshot'),
    ownerUid: JOB_UID,
    intervalMs: 60_000,
    lastSequence,
    record: async (cp) => {
      recorded.push(cp);
    },
    notice: (line) => notices.push(line),
    log: pino({ level: 'silent' }),
  });
}

async function jobFile(path: string, text: string): Promise<void> {
  await writeFile(path, text);
  await chown(path, JOB_UID, JOB_UID);
}

it('saves the directory at the end, skips an unchanged one, and restores it into another attempt', async () => {
  const ck = join(dir, 'a', 'checkpoints');
  await mkdir(join(ck, 'sub'), { recursive: true });
  await jobFile(join(ck, 'state.json'), '{"step":7}');
  await jobFile(join(ck, 'sub', 'weights.bin'), 'w'.repeat(1000));
  const recorded: { sequence: number; sha256: string; size: number }[] = [];
  const notices: string[] = [];
  const k = keeper('a', recorded, notices, 3);
  await k.finish();
  expect(recorded).toEqual([{ sequence: 4, sha256: expect.stringMatching(/^[0-9a-f]{64}$/), size: 1010 }]);
  expect(notices[0]).toMatch(/checkpoint 4 saved \(2 file\(s\), 1010 bytes, exit\)/);
  await k.finish(); // nothing changed: nothing new recorded
  expect(recorded).toHaveLength(1);

  const into = join(dir, 'b-checkpoints');
  await mkdir(into);
  const got = await restoreCheckpoint(blobs, TEAM, { jobId: 'j', attemptId: 'j-a1', nodeId: 'n', sequence: 4, sha256: recorded[0]!.sha256, size: 1010, checkpointedAt: new Date().toISOString() }, into);
  expect(got).toEqual({ files: 2, bytes: 1010 });
  expect(await readFile(join(into, 'state.json'), 'utf8')).toBe('{"step":7}');
  expect(await readFile(join(into, 'sub', 'weights.bin'), 'utf8')).toBe('w'.repeat(1000));
});

it.each([
  ['a symlink to a file the agent can read', async (ck: string) => symlink('/etc/shadow', join(ck, 'stolen'))],
  ['a hard link to a file of another user', async (ck: string) => link(join(dir, 'root-secret'), join(ck, 'stolen'))],
  ['a file the job does not own', async (ck: string) => writeFile(join(ck, 'stolen'), 'root wrote this')],
])('refuses a checkpoint holding %s, and says so in the job log', async (_what, plant) => {
  await writeFile(join(dir, 'root-secret'), 'root only', { mode: 0o600 });
  const name = `evil-${Math.random().toString(36).slice(2)}`;
  const ck = join(dir, name, 'checkpoints');
  await mkdir(ck, { recursive: true });
  await jobFile(join(ck, 'ok.txt'), 'fine');
  await plant(ck);
  const recorded: { sequence: number; sha256: string; size: number }[] = [];
  const notices: string[] = [];
  await keeper(name, recorded, notices).finish();
  expect(recorded).toEqual([]);
  expect(notices).toEqual([expect.stringMatching(/^\[gpunet\] checkpoint not saved: stolen (is a symlink|does not belong to the job)/)]);
});
