/**
 * Container work's costs, each beside a raw figure of the same run:
 * - start-to-exit of a container job (`podman run` of the busybox image, `true`) versus the same
 *   script job (`sh -c true`), both through the agent's run engine (`runProcess`), median of N;
 * - a 1 GiB image (busybox + 1 GiB of random bytes) as data: pushed into the team's blobs,
 *   staged for a first job through the node's input cache and loaded (the agent's path), then
 *   staged and loaded for a second job on the same node (bytes moved: 0, nothing loaded), beside
 *   a raw `podman load` of the same archive.
 *
 *   npm run bench:containers -- [--mib 1024] [--runs 5] [--dir /tmp]
 *
 * Needs podman (and runc where crun refuses), as `npm test` installs them. Removes everything it
 * made (images, files, the nats-server's store). Ends with one JSON line per figure:
 *   {"bench":"containers.start_to_exit","value":N,"unit":"ms","raw":R,"ratio":X}
 */
import { BlobStore } from '#blobs';
import { connect } from '@nats-io/transport-node';
import { Command } from 'commander';
import { execFile } from 'node:child_process';
import { randomFillSync } from 'node:crypto';
import { existsSync } from 'node:fs';
import { copyFile, mkdir, mkdtemp, open, rm, statfs, symlink, chmod } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { podmanGlobalArgs } from '../../services/execution/src/domain/index.js';
import { containerLaunch, loadArchive, archiveTag } from '../../services/execution/src/agent/container-work.js';
import { prepareRunDirs, runProcess, findExecutable } from '../../services/execution/src/run/index.js';
import { InputCache } from '../../services/execution/src/staging/input-cache.js';
import { busyboxImage } from '../support/container-image.js';
import { startNatsServer } from '../support/nats-server.js';
import { positive } from './args.js';

const run = promisify(execFile);
const opts = new Command('containers.bench')
  .option('--mib <n>', 'size of the big image\'s payload in MiB', positive, 1024)
  .option('--runs <n>', 'start-to-exit runs of each kind (median reported)', positive, 5)
  .option('--dir <path>', 'where the image files, the JetStream store and the node cache go', process.env.TMPDIR ?? '/tmp')
  .parse()
  .opts<{ mib: number; runs: number; dir: string }>();

const MiB = 1024 * 1024;
const round = (n: number, digits = 1) => Math.round(n * 10 ** digits) / 10 ** digits;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function timed<T>(fn: () => Promise<T>): Promise<{ result: T; ms: number }> {
  const started = performance.now();
  const result = await fn();
  return { result, ms: performance.now() - started };
}

async function podmanArgs(): Promise<string[]> {
  const cgroupV2 = (await statfs('/sys/fs/cgroup')).type === 0x63677270;
  return podmanGlobalArgs({ cgroupV2, systemd: existsSync('/run/systemd/system'), runc: await findExecutable('runc', `${process.env.PATH ?? ''}:/usr/sbin:/sbin`), ociRuntime: 'auto' });
}

/** Start-to-exit of one run through the run engine: spawn → the last process of its group gone. */
async function startToExit(root: string, i: number, kind: 'script' | 'container', imageId: string, globalArgs: string[]): Promise<number> {
  const dirs = await prepareRunDirs(root, `bench-${kind}`, `bench-${kind}-a${i}`);
  const launch =
    kind === 'script'
      ? { command: 'sh', args: ['-c', 'true'], env: {} }
      : containerLaunch({
          runtime: 'podman',
          imageId,
          work: { kind: 'container', image: imageId, command: ['/bin/sh', '-c', 'true'], args: [], env: {} },
          jobId: 'bench',
          attemptId: `bench-container-a${i}`,
          dirs,
          network: false,
          maxProcesses: 256,
          globalArgs,
          openFiles: 1024,
          tmpfsBytes: 64 * MiB,
        });
  const result = await runProcess({ jobId: 'bench', attemptId: `bench-${kind}-a${i}`, dirs, command: launch.command, args: launch.args, env: launch.env, timeLimitMs: 60_000 });
  if (result.outcome !== 'completed') throw new Error(`${kind} run ${i} ended ${result.outcome} (exit ${result.exitCode}): see ${result.logFile}`);
  return result.endedAt - result.startedAt;
}

/** A root file system of busybox plus `bytes` of random data, imported and saved as an OCI archive. */
async function bigImage(root: string, bytes: number): Promise<{ ref: string; archive: string }> {
  const fs = join(root, 'rootfs');
  await mkdir(join(fs, 'bin'), { recursive: true });
  await mkdir(join(fs, 'data'), { recursive: true });
  await copyFile('/bin/busybox', join(fs, 'bin', 'busybox'));
  await chmod(join(fs, 'bin', 'busybox'), 0o755);
  await symlink('busybox', join(fs, 'bin', 'sh'));
  const handle = await open(join(fs, 'data', 'weights.bin'), 'w');
  const block = Buffer.allocUnsafe(4 * MiB);
  for (let done = 0; done < bytes; done += block.length) {
    randomFillSync(block);
    await handle.write(block, 0, Math.min(block.length, bytes - done));
  }
  await handle.close();
  await run('tar', ['-C', fs, '-cf', join(root, 'rootfs.tar'), '.']);
  await rm(fs, { recursive: true, force: true });
  const ref = `localhost/gpunet-bench-big:${process.pid}`;
  await run('podman', ['import', join(root, 'rootfs.tar'), ref], { maxBuffer: 16 * MiB });
  await rm(join(root, 'rootfs.tar'));
  const archive = join(root, 'image.tar');
  await run('podman', ['save', '--format', 'oci-archive', '--output', archive, ref]);
  await run('podman', ['rmi', '--force', ref]);
  return { ref, archive };
}

async function main(): Promise<void> {
  const bytes = opts.mib * MiB;
  const needed = 6 * bytes + 512 * MiB; // archive, JetStream, node cache, podman's storage (load twice over the run), the rootfs while building
  const fs = await statfs(opts.dir);
  if (fs.bavail * fs.bsize < needed) throw new Error(`--dir ${opts.dir} has ${round((fs.bavail * fs.bsize) / 2 ** 30, 2)} GiB free, the bench needs ${round(needed / 2 ** 30, 2)} GiB: free space or pass --dir / a smaller --mib`);
  const globalArgs = await podmanArgs();
  const root = await mkdtemp(join(opts.dir, 'gpunet-bench-containers-'));
  const cleanup: string[] = [];
  try {
    // 1. Start-to-exit: container job vs script job through the run engine.
    const small = await busyboxImage();
    await startToExit(join(root, 'warm'), 0, 'container', small.id, globalArgs); // first run pays one-time setup
    const script: number[] = [];
    const container: number[] = [];
    for (let i = 1; i <= opts.runs; i++) {
      script.push(await startToExit(join(root, 'runs'), i, 'script', small.id, globalArgs));
      container.push(await startToExit(join(root, 'runs'), i, 'container', small.id, globalArgs));
    }
    const scriptMs = median(script);
    const containerMs = median(container);
    console.log(`start-to-exit, median of ${opts.runs}: script ${scriptMs} ms, container ${containerMs} ms (podman ${globalArgs.join(' ')})`);

    // 2. A big image as data.
    console.log(`building a ${opts.mib} MiB image in ${root}`);
    const big = await bigImage(root, bytes);
    const raw = await timed(() => run('podman', [...globalArgs, 'load', '--input', big.archive], { maxBuffer: 16 * MiB }));
    const rawRef = /Loaded image(?:\(s\))?:\s*(\S+)/.exec(raw.result.stdout)?.[1];
    if (rawRef) await run('podman', ['rmi', '--force', rawRef]).catch(() => undefined);
    cleanup.push(big.ref);
    console.log(`raw podman load: ${Math.round(raw.ms)} ms`);

    const server = await startNatsServer({ storeDir: join(root, 'jetstream') });
    const nc = await connect({ servers: server.url });
    const storageNc = await connect({ servers: server.url });
    try {
      const teamBlobs = await BlobStore.open(nc);
      const pushed = await timed(() => teamBlobs.uploadFile('team-bench', big.archive));
      console.log(`push (hash + send): ${Math.round(pushed.ms)} ms, ${pushed.result.bytesSent} bytes`);
      cleanup.push(archiveTag(pushed.result.sha256));
      const nodeBlobs = await BlobStore.open(nc, { node: 'bench-node' });
      const storageView = await BlobStore.open(storageNc, { node: 'bench-node' });
      const storageTeam = await BlobStore.open(storageNc);
      const cache = new InputCache(nodeBlobs, join(root, 'node', 'cache'), {
        prepare: async (team, _attempt, shas) => {
          for (const sha of shas) await storageView.copyFrom(storageTeam, team, sha);
        },
      });
      const input = { name: 'gpunet-image', path: `.gpunet-image/${pushed.result.sha256}.tar`, kind: 'file' as const, sha256: pushed.result.sha256, size: pushed.result.size };
      const stageAndLoad = async (job: string) => {
        const inputs = join(root, 'node', 'runs', job, 'inputs');
        await mkdir(inputs, { recursive: true });
        await nc.flush();
        const before = nc.stats().inBytes;
        const staged = await timed(() => cache.stage('team-bench', [input], inputs, undefined, { attemptId: `${job}-a1`, jobId: job }));
        const loaded = await timed(() => loadArchive('podman', join(inputs, input.path), input.sha256, globalArgs));
        cleanup.push(loaded.result.imageId); // the load restores the image's own name too: removed by id
        await nc.flush();
        return { stageMs: staged.ms, loadMs: loaded.ms, downloaded: staged.result.downloadedBytes, received: nc.stats().inBytes - before, loaded: loaded.result.loaded };
      };
      const first = await stageAndLoad('job-1');
      const second = await stageAndLoad('job-2');
      const firstMs = first.stageMs + first.loadMs;
      const secondMs = second.stageMs + second.loadMs;
      console.log(`job 1: stage ${Math.round(first.stageMs)} ms (${first.downloaded} bytes from the object store) + load ${Math.round(first.loadMs)} ms (loaded: ${first.loaded})`);
      console.log(`job 2, same node: stage ${Math.round(second.stageMs)} ms (${second.downloaded} bytes from the object store, ${second.received} received) + load ${Math.round(second.loadMs)} ms (loaded: ${second.loaded})`);

      const line = (o: object) => console.log(JSON.stringify(o));
      line({ bench: 'containers.start_to_exit', value: containerMs, unit: 'ms', raw: scriptMs, ratio: round(containerMs / Math.max(1, scriptMs), 2) });
      line({ bench: 'containers.image_first_stage_and_load', value: Math.round(firstMs), unit: 'ms', raw: Math.round(raw.ms), ratio: round(firstMs / raw.ms, 3) });
      line({ bench: 'containers.image_second_stage_and_load', value: Math.round(secondMs), unit: 'ms', raw: Math.round(raw.ms), ratio: round(secondMs / raw.ms, 3) });
      line({ bench: 'containers.image_second_stage_bytes_moved', value: second.downloaded, unit: 'bytes', received: second.received, loaded: second.loaded });
    } finally {
      await nc.close().catch(() => undefined);
      await storageNc.close().catch(() => undefined);
      await server.stop();
    }
  } finally {
    for (const ref of cleanup) await run('podman', ['rmi', '--force', ref]).catch(() => undefined);
    await rm(root, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exitCode = 1;
});
