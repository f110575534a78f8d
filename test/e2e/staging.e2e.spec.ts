/**
 * Getting data to the compute with every process real: `gpunet up` with one agent, a dataset
 * uploaded by the `gpunet` command run as its own process, SIGKILLed halfway through the upload
 * and run again (it must continue where it stopped), then two jobs reading the dataset on the
 * same node (the second must move no bytes: the agent's input cache serves it, and placement says
 * it chose the node for the data it holds).
 */
import type { JobView } from '#contracts';
import { blobBucket, BlobStore } from '#blobs';
import { jetstreamManager } from '@nats-io/jetstream';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFile, spawn } from 'node:child_process';
import { createHash, randomFillSync } from 'node:crypto';
import { mkdir, mkdtemp, open, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CHUNK_HEADER_ROOM, uploadNuid } from '../../libs/blobs/src/chunked-put.js';
import { TestNetwork, withLogsOnFailure, NETWORK_START_HOOK_MS } from '../support/network.js';
import { until } from '../support/poll.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const BIN = join(ROOT, 'bin', 'gpunet.js');
const MiB = 1024 * 1024;
const DATASET_BYTES = 192 * MiB;

let net: TestNetwork | undefined;
let dir: string;
const network = () => net!;
const e2e = (body: () => Promise<void>) => withLogsOnFailure(() => net, body);

beforeAll(async () => {
  net = await TestNetwork.start({ agents: 1, gpus: 2 });
  dir = await mkdtemp(join(tmpdir(), 'gpunet-staging-e2e-'));
}, NETWORK_START_HOOK_MS);

afterAll(async () => {
  await net?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
}, 60_000);

/** `gpunet … --json` as its own process against the test network; resolves with its exit code and output. */
function gpunet(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args, '--data-dir', network().dataDir, '--json'], { cwd: dir, env: { ...process.env, GPUNET_URL: '', GPUNET_API_KEY: '' }, maxBuffer: 16 * MiB }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr });
    });
  });
}

async function writeDataset(path: string): Promise<string> {
  const hash = createHash('sha256');
  const handle = await open(path, 'w');
  const block = Buffer.allocUnsafe(4 * MiB);
  for (let done = 0; done < DATASET_BYTES; done += block.length) {
    randomFillSync(block);
    hash.update(block);
    await handle.write(block);
  }
  await handle.close();
  return hash.digest('hex');
}

/** The agent's `inputs staged` log line of a job: how many bytes it fetched from the object store. */
async function stagingReport(jobId: string): Promise<{ bytes: number; downloadedBytes: number }> {
  const text = await readFile(join(network().dataDir, 'logs', `${network().nodeIds[0]}.log`), 'utf8');
  const line = text
    .split('\n')
    .filter((l) => l.includes('"inputs staged"') && l.includes(jobId))
    .at(-1);
  if (!line) throw new Error(`no "inputs staged" line for ${jobId} in the agent's log`);
  return JSON.parse(line) as { bytes: number; downloadedBytes: number };
}

describe('data to the compute across real processes', () => {
  it(
    'continues a SIGKILLed upload where it stopped, and a second job on the same node moves no bytes',
    e2e(async () => {
      const sha256 = await writeDataset(join(dir, 'dataset.bin'));
      const job = (name: string) =>
        [
          `name: ${name}`,
          'work: { kind: script, script: { inline: "sha256sum \\"$GPUNET_INPUT_DIR/data/dataset.bin\\" | cut -d\\" \\" -f1 > \\"$GPUNET_OUTPUT_DIR/sum.txt\\"" } }',
          'data:',
          '  inputs:',
          '    - { name: dataset, path: data/dataset.bin, from: ./dataset.bin, keep: 1h }',
          'request: { gpus: 1, timeLimit: 5m }',
          'outputs: { globs: [sum.txt] }',
        ].join('\n');
      await writeFile(join(dir, 'first.yaml'), job('first'));
      await writeFile(join(dir, 'second.yaml'), job('second'));

      // Kill the CLI once a third of the dataset's chunks are stored.
      const chunkBytes = MiB - CHUNK_HEADER_ROOM;
      const chunks = Math.ceil(DATASET_BYTES / chunkBytes);
      const bucket = blobBucket(network().team);
      const subject = `$O.${bucket}.C.${uploadNuid(bucket, `${network().team}/${sha256}`, chunkBytes)}`;
      const jsm = await jetstreamManager(await network().nats());
      const stored = async () => {
        const info = await jsm.streams.info(`OBJ_${bucket}`, { subjects_filter: subject }).catch(() => undefined);
        return info?.state.subjects?.[subject] ?? 0;
      };
      const child = spawn(process.execPath, [BIN, 'submit', 'first.yaml', '--data-dir', network().dataDir, '--json'], { cwd: dir, env: { ...process.env, GPUNET_URL: '', GPUNET_API_KEY: '' }, stdio: 'ignore' });
      const exited = new Promise<NodeJS.Signals | number | null>((resolve) => child.once('exit', (code, signal) => resolve(signal ?? code)));
      await until('a third of the upload stored', async () => (await stored()) >= chunks / 3, { timeoutMs: 120_000, intervalMs: 25 });
      child.kill('SIGKILL');
      expect(await exited).toBe('SIGKILL');
      const keptChunks = await stored();
      expect(keptChunks).toBeLessThan(chunks); // killed midway, not after the end

      const rerun = await gpunet(['submit', 'first.yaml']);
      expect(rerun.stderr).toContain('resumed');
      expect(rerun.code).toBe(0);
      const first = JSON.parse(rerun.stdout) as { jobId: string; inputs: { sha256: string; size: number; bytesUploaded: number; resumedFromBytes: number }[] };
      expect(first.inputs[0]).toMatchObject({ sha256, size: DATASET_BYTES });
      expect(first.inputs[0]!.resumedFromBytes).toBeGreaterThanOrEqual(keptChunks * chunkBytes);
      expect(first.inputs[0]!.bytesUploaded).toBe(DATASET_BYTES - first.inputs[0]!.resumedFromBytes);

      const client = network().client();
      const done = async (jobId: string) => {
        const view = await client.waitFor(jobId, { timeoutMs: 180_000 });
        expect(view.state).toBe('completed');
        return view as JobView;
      };
      const firstView = await done(first.jobId);
      const sum = await client.downloadOutput(first.jobId, 'sum.txt', join(dir, 'first-sum.txt'));
      expect((await readFile(sum.dest, 'utf8')).trim()).toBe(sha256); // the job read the whole, intact dataset
      expect(await stagingReport(first.jobId)).toMatchObject({ bytes: DATASET_BYTES, downloadedBytes: DATASET_BYTES });

      // The same dataset again: nothing is uploaded, and the node's cache serves the job.
      const again = await gpunet(['submit', 'second.yaml']);
      expect(again.code).toBe(0);
      const second = JSON.parse(again.stdout) as { jobId: string; inputs: { skipped: boolean; bytesUploaded: number }[] };
      expect(second.inputs[0]).toMatchObject({ skipped: true, bytesUploaded: 0 });
      const secondView = await done(second.jobId);
      expect(secondView.attempts.at(-1)?.nodeId).toBe(firstView.attempts.at(-1)?.nodeId);
      expect(await stagingReport(second.jobId)).toMatchObject({ bytes: DATASET_BYTES, downloadedBytes: 0 });
      // Placement knew the node held the data (the agent's heartbeat lists its cache) and says so.
      const placedEvents = (await network().events({ types: ['JobPlaced'] })).filter((e) => (e.data as { jobId: string }).jobId === second.jobId);
      expect((placedEvents[0]!.data as { reason?: string }).reason).toMatch(/already holds input dataset .* in its cache/);
    }),
    420_000,
  );

  it(
    'refuses outputs that leave the output directory or pass the size cap, with the reason in the job\'s record',
    e2e(async () => {
      const client = network().client();
      const script = [
        'cd "$GPUNET_OUTPUT_DIR"',
        'ln -s /etc/passwd escape.txt',
        'mkdir -p deep && ln -s ../../inputs deep/up',
        'head -c 1000 /dev/zero > a-small.bin',
        'head -c 5000 /dev/zero > b-big.bin',
      ].join('\n');
      const { jobId } = await client.submit({ work: { kind: 'script', script: { inline: script } }, request: { gpus: 1, timeLimit: '1m' }, outputs: { globs: ['**'], maxBytes: 2000 } } as never);
      const view = await client.waitFor(jobId, { timeoutMs: 120_000 });
      expect(view.state).toBe('completed');
      expect(view.outputs?.files.map((f) => f.path)).toEqual(['a-small.bin']);
      expect(view.outputs?.truncated).toBe(true);
      const rejected = Object.fromEntries((view.outputs?.rejected ?? []).map((r) => [r.path, r]));
      expect(rejected['escape.txt']).toEqual({ path: 'escape.txt', reason: 'symlink_outside', message: 'escape.txt is a symlink pointing outside the output directory; it was not followed' });
      expect(rejected['deep/up']?.reason).toMatch(/symlink_outside|not_regular_file|symlink_dangling/);
      expect(rejected['b-big.bin']).toMatchObject({ reason: 'size_cap', message: expect.stringContaining('size cap of 2000 bytes') });
    }),
    180_000,
  );

  it(
    'lists an output whose name cannot be stored (a newline in it) as refused with its reason, in the outputs listing and in gpunet output',
    e2e(async () => {
      const client = network().client();
      const script = 'cd "$GPUNET_OUTPUT_DIR" && printf kept > good.txt && printf lost > "$(printf \'bad\\nname.txt\')"';
      const { jobId } = await client.submit({ work: { kind: 'script', script: { inline: script } }, request: { gpus: 1, timeLimit: '1m' } } as never);
      expect((await client.waitFor(jobId, { timeoutMs: 120_000 })).state).toBe('completed');
      const refused = { path: 'bad\\nname.txt', reason: 'invalid_name', message: expect.stringContaining('control character') };
      const listing = await client.outputs(jobId);
      expect(listing.files.map((f) => f.path)).toEqual(['good.txt']);
      expect(listing.rejected).toEqual([refused]);

      const json = await gpunet(['output', jobId, '--dest', join(dir, `out-${jobId}`)]);
      expect(json.code).toBe(0);
      expect(JSON.parse(json.stdout)).toMatchObject({ jobId, files: [expect.objectContaining({ path: 'good.txt' })], rejected: [refused] });
      const human = await new Promise<string>((resolve) =>
        execFile(process.execPath, [BIN, 'output', jobId, '--dest', join(dir, `out2-${jobId}`), '--data-dir', network().dataDir], { cwd: dir, env: { ...process.env, GPUNET_URL: '', GPUNET_API_KEY: '' } }, (_err, stdout) => resolve(stdout)),
      );
      expect(human).toMatch(/refused +bad\\nname\.txt +invalid_name: .*control character/);
    }),
    180_000,
  );

  it(
    'ends a job whose inputs no node can lay out `failed` with the reason after one attempt, instead of requeueing it without end',
    e2e(async () => {
      // A folder input puts a file at d/x; the next input wants d/x to be a directory. The spec
      // cannot see it (the folder's files are in its manifest); staging fails the same on any node.
      await mkdir(join(dir, 'layout', 'tree'), { recursive: true });
      await writeFile(join(dir, 'layout', 'tree', 'x'), 'a file where the next input wants a directory\n');
      await writeFile(join(dir, 'layout', 'y.txt'), 'y\n');
      await writeFile(
        join(dir, 'layout.yaml'),
        [
          'work: { kind: script, script: { inline: "true" } }',
          'data:',
          '  inputs:',
          '    - { name: tree, kind: folder, path: d, from: ./layout/tree }',
          '    - { name: y, path: d/x/y.txt, from: ./layout/y.txt }',
          'request: { gpus: 1, timeLimit: 1m }',
        ].join('\n'),
      );
      const run = await gpunet(['submit', 'layout.yaml']);
      expect(run.code).toBe(0);
      const { jobId } = JSON.parse(run.stdout) as { jobId: string };
      // Requeued as node_lost, it never ended (431 attempts in 11 minutes): no final state at all.
      const view = await network().client().waitFor(jobId, { timeoutMs: 90_000 });
      expect(view.state).toBe('failed');
      expect(view.attempts).toHaveLength(1);
      expect(view.attempts[0]).toMatchObject({ outcome: 'failed', exitCode: null, message: expect.stringMatching(/^inputs could not be staged: .*\$GPUNET_INPUT_DIR\/d\/x/) });
      expect(view.attempts[0]!.message).not.toContain(network().dataDir); // the node's own paths stay its own
      expect(await network().events({ types: ['JobRequeued', 'ComputeHeld'], jobId })).toEqual([]);
    }),
    150_000,
  );

  it(
    'removes staged data no job needs once its job is released, in the object store and the node cache, each removal recorded',
    e2e(async () => {
      await writeFile(join(dir, 'once.bin'), Buffer.from(`used by one job only ${Date.now()}\n`));
      await writeFile(
        join(dir, 'once.yaml'),
        // `wc -c`, not `cat`: a log with the input's very bytes would be the same blob, which stays (next test).
        ['work: { kind: script, script: { inline: "wc -c \\"$GPUNET_INPUT_DIR/once.bin\\"" } }', 'data: { inputs: [{ name: once, path: once.bin, from: ./once.bin }] }', 'request: { gpus: 1, timeLimit: 1m }'].join('\n'),
      );
      const run = await gpunet(['submit', 'once.yaml']);
      expect(run.code).toBe(0);
      const { jobId, inputs } = JSON.parse(run.stdout) as { jobId: string; inputs: { sha256: string }[] };
      expect((await network().client().waitFor(jobId, { timeoutMs: 120_000 })).state).toBe('completed');
      const removals = await until('both removals recorded', async () => {
        const found = (await network().events({ types: ['DataRemoved'] })).map((e) => e.data as { jobId?: string; scope: string; nodeId?: string; reason: string; blobs: { sha256: string }[] }).filter((d) => d.jobId === jobId);
        return found.length >= 2 ? found : undefined;
      }, { timeoutMs: 60_000 });
      const byScope = Object.fromEntries(removals.map((r) => [r.scope, r]));
      expect(byScope['inputs']).toMatchObject({ reason: 'job_released', blobs: [{ sha256: inputs[0]!.sha256 }] });
      expect(byScope['node_cache']).toMatchObject({ reason: 'job_released', nodeId: network().nodeIds[0], blobs: [{ sha256: inputs[0]!.sha256 }] });
    }),
    180_000,
  );

  it(
    'keeps an input whose bytes the job also saved in its checkpoint: the checkpoint still holds its file after the release',
    e2e(async () => {
      await writeFile(join(dir, 'cp.bin'), Buffer.from(`the same bytes in the checkpoint ${Date.now()}\n`));
      await writeFile(
        join(dir, 'cp.yaml'),
        ['work: { kind: script, script: { inline: "cp \\"$GPUNET_INPUT_DIR/cp.bin\\" \\"$GPUNET_CHECKPOINT_DIR/state.bin\\" && echo two > \\"$GPUNET_CHECKPOINT_DIR/step.txt\\"" } }', 'data: { inputs: [{ name: cp, path: cp.bin, from: ./cp.bin }] }', 'request: { gpus: 1, timeLimit: 1m }'].join('\n'),
      );
      const run = await gpunet(['submit', 'cp.yaml']);
      expect(run.code).toBe(0);
      const { jobId, inputs } = JSON.parse(run.stdout) as { jobId: string; inputs: { sha256: string }[] };
      expect((await network().client().waitFor(jobId, { timeoutMs: 120_000 })).state).toBe('completed');
      const [checkpoint] = (await network().events({ types: ['JobCheckpointed'], jobId })).map((e) => e.data as { sha256?: string });
      expect(checkpoint?.sha256).toEqual(expect.any(String)); // saved at exit, recorded before the release
      await until('the node cache removal', async () => (await network().events({ types: ['DataRemoved'], jobId })).some((e) => (e.data as { scope: string }).scope === 'node_cache'), { timeoutMs: 60_000 });
      await until('storage to take every event so far', async () => {
        const b = await network().consumerBacklog('storage');
        return b.pending === 0 && b.ackPending === 0;
      }, { timeoutMs: 30_000, intervalMs: 200 });
      // The checkpoint's manifest was read with its files' total as its size and failed: its files went unprotected.
      expect((await network().events({ types: ['DataRemoved'], jobId })).filter((e) => (e.data as { scope: string }).scope === 'inputs')).toEqual([]);
      const store = await BlobStore.open(await network().nats());
      expect(await store.exists(network().team, inputs[0]!.sha256)).toBe(true);
      const manifest = await store.readFolderManifest(network().team, checkpoint!.sha256!);
      expect(manifest.entries.map((e) => e.sha256)).toContain(inputs[0]!.sha256);
    }),
    180_000,
  );

  it(
    'keeps an input whose bytes the job also wrote as an output: the output still downloads, verified, after the release',
    e2e(async () => {
      await writeFile(join(dir, 'same.bin'), Buffer.from(`the same bytes in and out ${Date.now()}\n`));
      await writeFile(
        join(dir, 'same.yaml'),
        ['work: { kind: script, script: { inline: "cp \\"$GPUNET_INPUT_DIR/same.bin\\" \\"$GPUNET_OUTPUT_DIR/copy.bin\\"" } }', 'data: { inputs: [{ name: same, path: same.bin, from: ./same.bin }] }', 'request: { gpus: 1, timeLimit: 1m }'].join('\n'),
      );
      const run = await gpunet(['submit', 'same.yaml']);
      expect(run.code).toBe(0);
      const { jobId, inputs } = JSON.parse(run.stdout) as { jobId: string; inputs: { sha256: string }[] };
      const client = network().client();
      expect((await client.waitFor(jobId, { timeoutMs: 120_000 })).state).toBe('completed');
      const [copy] = (await client.outputs(jobId)).files;
      expect(copy).toMatchObject({ path: 'copy.bin', sha256: inputs[0]!.sha256 });
      // The node's cache copy goes at release; the object store's blob stays, since the output is that blob.
      const removals = await until('the node cache removal', async () => {
        const found = (await network().events({ types: ['DataRemoved'] })).map((e) => e.data as { jobId?: string; scope: string; blobs: { sha256: string }[] }).filter((d) => d.jobId === jobId);
        return found.some((d) => d.scope === 'node_cache') && found;
      }, { timeoutMs: 60_000 });
      expect(removals.filter((r) => r.scope === 'inputs')).toEqual([]);
      // Storage has handled the release (its own consumer is caught up) and kept the blob.
      await until('storage to take every event so far', async () => {
        const b = await network().consumerBacklog('storage');
        return b.pending === 0 && b.ackPending === 0;
      }, { timeoutMs: 30_000, intervalMs: 200 });
      expect((await network().events({ types: ['DataRemoved'], jobId })).filter((e) => (e.data as { scope: string }).scope === 'inputs')).toEqual([]);
      const got = await client.downloadOutput(jobId, 'copy.bin', join(dir, 'copy-back.bin'));
      expect(got.sha256).toBe(inputs[0]!.sha256);
    }),
    180_000,
  );
});
