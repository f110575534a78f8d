/**
 * Getting data to the compute: upload a dataset (default 1 GiB of random bytes) into the team's
 * blobs and stage it into a job's inputs through a node's input cache, beside a raw read +
 * sha256 of the same file on the same disk in the same run. Then stages the same dataset for a
 * second job on the same node and counts the bytes that moved (the goal: none).
 *
 *   npm run bench:staging -- [--mib 1024] [--dir /tmp]
 *
 * Real parts: a nats-server with JetStream file storage in a directory beside the dataset, the
 * `#blobs` store (the CLI's upload path) and the execution agent's `InputCache` (the agent's
 * staging path). Figures:
 * - raw: read + sha256 of the dataset file (what hashing an input costs at best);
 * - raw write: the same bytes written to the same disk and fsync'd (JetStream persists every
 *   chunk it acks, so this bounds any upload through it);
 * - upload: hashing + sending until the object record is written;
 * - stage: the first job's inputs as a node gets them (decision 0036): the node reads the blob
 *   through storage (`gpunet.data.<nodeId>.read`, 32 reads in flight; storage has nats-server
 *   answer each with the blob's next chunk from the team's bucket), verifies it into its cache and
 *   hard-links it into `inputs/`;
 * - second stage: bytes the NATS connection received while staging the same data for job 2;
 * - CPU per GiB of the upload and the first stage: this process's (the client; for a stage the
 *   node and storage, both here) and nats-server's.
 * Ends with one JSON line per figure:
 *   {"bench":"staging.upload","value":N,"unit":"MB/s","raw":R,"ratio":X}
 * `raw` is the raw read + sha256 for `staging.upload` and `staging.stage`, the raw fsync'd write for
 * `…_vs_disk_write`: on a machine other work loads, compare ratios of one run, not MB/s of
 * different runs.
 */
import { BlobStore } from '#blobs';
import { nodeDataSubject } from '#contracts';
import { connect } from '@nats-io/transport-node';
import { Command } from 'commander';
import { execFileSync } from 'node:child_process';
import { createHash, randomFillSync } from 'node:crypto';
import { mkdir, mkdtemp, open, rm, stat, statfs } from 'node:fs/promises';
import { join } from 'node:path';
import { pino } from 'pino';
import { InputCache } from '../../services/execution/src/staging/input-cache.js';
import { NodeData } from '../../services/execution/src/staging/node-data.js';
import { NodeReads } from '../../services/storage/src/node-data/node-reads.js';
import { startNatsServer } from '../support/nats-server.js';
import { positive } from './args.js';
import { cpuDelta, processCpu } from './cpu.js';


const opts = new Command('staging.bench')
  .option('--mib <n>', 'dataset size in MiB', positive, 1024)
  .option('--dir <path>', 'where the dataset, the JetStream store and the node cache go (one disk)', process.env.TMPDIR ?? '/tmp')
  .parse()
  .opts<{ mib: number; dir: string }>();

const MiB = 1024 * 1024;
const BLOCK = 4 * MiB;
const mbps = (bytes: number, ms: number) => bytes / 1e6 / (ms / 1000);
const round = (n: number, digits = 1) => Math.round(n * 10 ** digits) / 10 ** digits;

async function timed<T>(fn: () => Promise<T>): Promise<{ result: T; ms: number }> {
  const started = performance.now();
  const result = await fn();
  return { result, ms: performance.now() - started };
}

/**
 * `fn` timed, with the CPU this process (client, and for a stage storage too: the bench runs both)
 * and nats-server used meanwhile, in ms per GiB moved: on a 2-core machine the two together are
 * what bounds the rate, and unlike MB/s they hardly move with the disk's mood.
 */
async function timedCpu<T>(serverPid: number, bytes: number, fn: () => Promise<T>): Promise<{ result: T; ms: number; cpu: { bench: number; server: number } }> {
  const server = processCpu(serverPid);
  const own = process.cpuUsage();
  const run = await timed(fn);
  const used = process.cpuUsage(own);
  const perGiB = (ms: number) => Math.round((ms * 2 ** 30) / bytes);
  return { ...run, cpu: { bench: perGiB((used.user + used.system) / 1000), server: perGiB(cpuDelta(server, processCpu(serverPid)).ownMs) } };
}

/** Writes `bytes` of random data in 4 MiB blocks (each block freshly random, so nothing compresses or dedups). */
async function writeDataset(path: string, bytes: number): Promise<void> {
  const handle = await open(path, 'w');
  try {
    const block = Buffer.allocUnsafe(BLOCK);
    for (let done = 0; done < bytes; done += BLOCK) {
      const n = Math.min(BLOCK, bytes - done);
      randomFillSync(block, 0, n);
      await handle.write(block, 0, n);
    }
  } finally {
    await handle.close();
  }
}

/** Raw: read the file and hash it, the least any upload or staging of it must do. */
async function readAndHash(path: string): Promise<string> {
  const handle = await open(path, 'r');
  try {
    const hash = createHash('sha256');
    const buffer = Buffer.allocUnsafe(BLOCK);
    for (;;) {
      const { bytesRead } = await handle.read(buffer, 0, BLOCK, null);
      if (bytesRead === 0) break;
      hash.update(buffer.subarray(0, bytesRead));
    }
    return hash.digest('hex');
  } finally {
    await handle.close();
  }
}

/** Raw write: the file's bytes copied to the same disk and fsync'd. */
async function copySynced(from: string, to: string): Promise<void> {
  const src = await open(from, 'r');
  const dst = await open(to, 'w');
  try {
    const buffer = Buffer.allocUnsafe(BLOCK);
    for (;;) {
      const { bytesRead } = await src.read(buffer, 0, BLOCK, null);
      if (bytesRead === 0) break;
      await dst.write(buffer, 0, bytesRead);
    }
    await dst.sync();
  } finally {
    await src.close();
    await dst.close();
  }
}

async function main(): Promise<void> {
  const bytes = opts.mib * MiB;
  // Dataset, its synced copy (removed at once), the JetStream copy and the node cache's copy.
  const needed = 3 * bytes + 256 * MiB;
  const fs = await statfs(opts.dir);
  const free = fs.bavail * fs.bsize;
  if (free < needed) {
    throw new Error(`--dir ${opts.dir} has ${round(free / 2 ** 30, 2)} GiB free, the bench needs ${round(needed / 2 ** 30, 2)} GiB: free space or pass --dir / a smaller --mib`);
  }
  console.log(execFileSync('df', ['-h', opts.dir], { encoding: 'utf8' }).trim());

  const root = await mkdtemp(join(opts.dir, 'gpunet-bench-staging-'));
  const server = await startNatsServer({ storeDir: join(root, 'jetstream') });
  // Without a stack trace captured per request, as the SDK, the CLI, the agents and the services connect.
  const nc = await connect({ servers: server.url, noAsyncTraces: true });
  // Storage's own connection: its reads of the team's bucket do not count as bytes the node received.
  const storageNc = await connect({ servers: server.url, noAsyncTraces: true });
  try {
    const dataset = join(root, 'dataset.bin');
    console.log(`writing a ${opts.mib} MiB dataset of random bytes in ${root}`);
    await writeDataset(dataset, bytes);

    const raw = await timed(() => readAndHash(dataset));
    const rawMbps = mbps(bytes, raw.ms);
    console.log(`raw read + sha256:         ${round(rawMbps)} MB/s (${Math.round(raw.ms)} ms)`);
    const rawWrite = await timed(() => copySynced(dataset, join(root, 'copy.bin')));
    await rm(join(root, 'copy.bin'));
    const rawWriteMbps = mbps(bytes, rawWrite.ms);
    console.log(`raw write + fsync (same disk): ${round(rawWriteMbps)} MB/s (${Math.round(rawWrite.ms)} ms)`);

    const blobs = await BlobStore.open(nc);
    const upload = await timedCpu(server.pid, bytes, () => blobs.uploadFile('team-bench', dataset));
    if (upload.result.sha256 !== raw.result) throw new Error('the upload hashed the dataset differently from the raw read');
    const uploadMbps = mbps(bytes, upload.ms);
    console.log(`upload (hash + send):      ${round(uploadMbps)} MB/s (${Math.round(upload.ms)} ms, ${upload.result.bytesSent} bytes sent) = ${round(uploadMbps / rawMbps, 3)} of raw read, ${round(uploadMbps / rawWriteMbps, 3)} of raw write`);
    console.log(`  CPU per GiB: client ${upload.cpu.bench} ms, nats-server ${upload.cpu.server} ms`);

    // The node reads through storage (here in-process, on its own connection, as the service
    // does it; admission is storage's store check, which the bench leaves out) from the team's bucket.
    const teamBlobs = await BlobStore.open(storageNc);
    const reads = new NodeReads(teamBlobs, () => Promise.resolve({ team: 'team-bench' }), pino({ level: 'warn' }));
    storageNc.subscribe(nodeDataSubject('bench-node', 'read'), { callback: (err, msg) => void (err ? undefined : reads.answer('bench-node', msg)) });
    await storageNc.flush();
    const nodeData = new NodeData(nc, 'bench-node', 30_000);
    const cache = new InputCache(await BlobStore.open(nc, { node: 'bench-node' }), join(root, 'node', 'cache'), {
      read: async (team, attempt, blob, dest, mode) => void (await nodeData.readTo(attempt.jobId, attempt.attemptId, team, blob.sha256, dest, { size: blob.size, mode })),
    });
    const input = { name: 'dataset', path: 'data/dataset.bin', kind: 'file' as const, sha256: upload.result.sha256, size: bytes };
    const stageFor = async (job: string) => {
      const inputs = join(root, 'node', 'runs', job, 'inputs');
      await mkdir(inputs, { recursive: true });
      await nc.flush();
      const before = nc.stats().inBytes;
      const run = await timedCpu(server.pid, bytes, () => cache.stage('team-bench', [input], inputs, undefined, { attemptId: `${job}-a1`, jobId: job }));
      await nc.flush();
      const received = nc.stats().inBytes - before;
      const placed = await stat(join(inputs, 'data', 'dataset.bin'));
      if (placed.size !== bytes) throw new Error(`${job}: the staged input has ${placed.size} bytes, expected ${bytes}`);
      return { ...run, received };
    };
    const first = await stageFor('job-1');
    const stageMbps = mbps(bytes, first.ms);
    console.log(`stage, job 1 (read through storage, verify, link): ${round(stageMbps)} MB/s (${Math.round(first.ms)} ms, ${first.result.downloadedBytes} bytes from the object store, ${first.received} bytes received) = ${round(stageMbps / rawMbps, 3)} of raw read, ${round(stageMbps / rawWriteMbps, 3)} of raw write`);
    console.log(`  CPU per GiB: node and storage ${first.cpu.bench} ms, nats-server ${first.cpu.server} ms`);
    const second = await stageFor('job-2');
    console.log(`stage, job 2 same node, same dataset: ${Math.round(second.ms)} ms, ${second.result.downloadedBytes} bytes from the object store, ${second.received} bytes received on the connection`);

    const line = (o: object) => console.log(JSON.stringify(o));
    line({ bench: 'staging.upload', value: round(uploadMbps), unit: 'MB/s', raw: round(rawMbps), ratio: round(uploadMbps / rawMbps, 3) });
    line({ bench: 'staging.upload_vs_disk_write', value: round(uploadMbps), unit: 'MB/s', raw: round(rawWriteMbps), ratio: round(uploadMbps / rawWriteMbps, 3) });
    line({ bench: 'staging.stage', value: round(stageMbps), unit: 'MB/s', raw: round(rawMbps), ratio: round(stageMbps / rawMbps, 3) });
    line({ bench: 'staging.stage_vs_disk_write', value: round(stageMbps), unit: 'MB/s', raw: round(rawWriteMbps), ratio: round(stageMbps / rawWriteMbps, 3) });
    line({ bench: 'staging.upload_cpu', value: upload.cpu.bench + upload.cpu.server, unit: 'CPU-ms/GiB', client: upload.cpu.bench, server: upload.cpu.server });
    line({ bench: 'staging.stage_cpu', value: first.cpu.bench + first.cpu.server, unit: 'CPU-ms/GiB', node_and_storage: first.cpu.bench, server: first.cpu.server });
    line({ bench: 'staging.second_stage_bytes_moved', value: second.result.downloadedBytes, unit: 'bytes', received: second.received });
  } finally {
    await nc.close().catch(() => undefined);
    await storageNc.close().catch(() => undefined);
    await server.stop();
    await rm(root, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exitCode = 1;
});
