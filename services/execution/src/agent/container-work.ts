import type { ContainerRuntime, Work } from '#contracts';
import { execFile } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { containerEnv, containerRunArgs, parseImageId, type GpuAccess, type Launch } from '../domain/index.js';
import { findExecutable, type JobUser, type RunDirs } from '../run/index.js';

const run = promisify(execFile);

/** Container name of an attempt: the agent kills and removes it by this name. */
export const containerName = (attemptId: string) => `gpunet-${attemptId}`;

/**
 * Resolves the image to the id it runs by, so the digest recorded in JobStarted is the one that
 * runs: an image the node already holds is used as it is (no registry is asked), any other is
 * pulled now (staging: before compute is held, not billed).
 */
export async function pullImage(runtime: ContainerRuntime, image: string, globalArgs: readonly string[] = []): Promise<{ bin: string; imageId: string; pulled: boolean }> {
  const bin = await findExecutable(runtime, process.env.PATH);
  if (bin === null) throw new Error(`${runtime} is not installed on this node`);
  const inspect = () => run(bin, [...globalArgs, 'image', 'inspect', '--format', '{{.Id}}', image], { timeout: 60_000 }).then((r) => r.stdout, () => undefined);
  let stdout = await inspect();
  const pulled = stdout === undefined;
  if (pulled) {
    await run(bin, [...globalArgs, 'pull', image], { timeout: 30 * 60_000, maxBuffer: 16 * 1024 * 1024 }).catch((err: { stderr?: string; message: string }) => {
      throw new Error(`${runtime} could not pull ${image}: ${(err.stderr || err.message).trim().split('\n').at(-1)}`);
    });
    stdout = await inspect();
  }
  const imageId = stdout === undefined ? undefined : parseImageId(stdout);
  if (imageId === undefined) throw new Error(`${runtime} did not report a sha256 id for ${image}: ${(stdout ?? '').trim().slice(0, 200)}`);
  return { bin, imageId, pulled };
}

/** The tag a loaded archive gets on the node: the node's cache of loaded images is keyed by the archive's sha256. */
export const archiveTag = (sha256: string) => `localhost/gpunet-image:${sha256}`;

/**
 * Loads an image archive staged among the inputs (`work.archive`) unless the node already
 * loaded the same archive (its tag {@link archiveTag} exists): then nothing is read at all.
 * Resolves the id it runs by. Before compute is held, like the staging itself.
 */
export async function loadArchive(runtime: ContainerRuntime, file: string, sha256: string, globalArgs: readonly string[] = []): Promise<{ imageId: string; loaded: boolean }> {
  const bin = await findExecutable(runtime, process.env.PATH);
  if (bin === null) throw new Error(`${runtime} is not installed on this node`);
  const tag = archiveTag(sha256);
  const inspect = () => run(bin, [...globalArgs, 'image', 'inspect', '--format', '{{.Id}}', tag], { timeout: 60_000 }).then((r) => parseImageId(r.stdout), () => undefined);
  let imageId = await inspect();
  if (imageId !== undefined) return { imageId, loaded: false };
  const { stdout } = await run(bin, [...globalArgs, 'load', '--input', file], { timeout: 30 * 60_000, maxBuffer: 16 * 1024 * 1024 }).catch((err: { stderr?: string; message: string }) => {
    throw new Error(`the image archive sha256:${sha256} could not be loaded: ${(err.stderr || err.message).trim().split('\n').at(-1)}`);
  });
  const loaded = loadedImage(stdout);
  if (loaded === undefined) throw new Error(`${runtime} load named no image for the archive sha256:${sha256}: ${stdout.trim().slice(0, 200)}`);
  await run(bin, [...globalArgs, 'tag', loaded, tag], { timeout: 60_000 });
  imageId = await inspect();
  if (imageId === undefined) throw new Error(`the image loaded from the archive sha256:${sha256} has no sha256 id`);
  return { imageId, loaded: true };
}

/** The image `podman load` / `docker load` reports (`Loaded image: ref`, `Loaded image(s): ref`, `Loaded image ID: sha256:…`). */
export function loadedImage(stdout: string): string | undefined {
  const m = /Loaded image(?:\(s\)| ID)?:\s*(\S+)/.exec(stdout);
  return m?.[1]?.split(',')[0];
}

/** The launch of a container attempt: the runtime's client, which stays attached and forwards signals to the container's init. */
export function containerLaunch(args: {
  runtime: ContainerRuntime;
  imageId: string;
  work: Extract<Work, { kind: 'container' }>;
  jobId: string;
  attemptId: string;
  dirs: RunDirs;
  user?: JobUser;
  network: boolean;
  memoryBytes?: number;
  maxProcesses?: number;
  gpus?: GpuAccess;
  globalArgs?: readonly string[];
  openFiles?: number;
  tmpfsBytes?: number;
}): Launch {
  const env = containerEnv({ ...args.work.env, LANG: 'C.UTF-8', TZ: 'UTC', GPUNET_JOB_ID: args.jobId, GPUNET_ATTEMPT_ID: args.attemptId });
  return {
    // A bare name, looked up on the run's PATH (the run engine starts nothing by a path outside the run).
    command: args.runtime,
    args: containerRunArgs({
      runtime: args.runtime,
      name: containerName(args.attemptId),
      imageId: args.imageId,
      ...(args.work.command !== undefined && { command: args.work.command }),
      args: args.work.args,
      env,
      dirs: args.dirs,
      ...(args.user && { user: args.user }),
      network: args.network,
      ...(args.memoryBytes !== undefined && { memoryBytes: args.memoryBytes }),
      ...(args.maxProcesses !== undefined && { maxProcesses: args.maxProcesses }),
      ...(args.gpus !== undefined && { gpus: args.gpus }),
      ...(args.globalArgs !== undefined && { globalArgs: args.globalArgs }),
      ...(args.openFiles !== undefined && { openFiles: args.openFiles }),
      ...(args.tmpfsBytes !== undefined && { tmpfsBytes: args.tmpfsBytes }),
    }),
    env: {},
  };
}

/**
 * Removes the images loaded from archives whose cached copy was just removed from this node
 * (`removed`: their sha256s), so the node's image storage does not keep what its cache let go.
 * One listing per call; an image a running container still uses is refused by the runtime and
 * stays (its next removal takes it). Returns the sha256s whose image went.
 */
export async function removeLoadedArchives(runtime: string, removed: readonly string[], globalArgs: readonly string[] = []): Promise<string[]> {
  if (removed.length === 0) return [];
  const listed = await run(runtime, [...globalArgs, 'images', '--format', '{{.Repository}}:{{.Tag}}'], { timeout: 60_000 }).then(
    (r) => r.stdout.split('\n').map((l) => l.trim()),
    () => [] as string[],
  );
  const loaded = new Set(listed.filter((l) => l.startsWith(`${archiveTag('')}`)).map((l) => l.slice(archiveTag('').length)));
  const gone: string[] = [];
  for (const sha of removed) {
    if (!loaded.has(sha)) continue;
    const ok = await run(runtime, [...globalArgs, 'rmi', archiveTag(sha)], { timeout: 60_000 }).then(
      () => true,
      () => false,
    );
    if (ok) gone.push(sha);
  }
  return gone;
}

/** Kills and removes the attempt's container if it is still there (the client was killed before it). */
export async function removeContainer(runtime: string, attemptId: string, globalArgs: readonly string[] = []): Promise<void> {
  await run(runtime, [...globalArgs, 'rm', '--force', ...(runtime === 'podman' ? ['--time', '0'] : []), containerName(attemptId)], { timeout: 60_000 }).catch(() => undefined);
}

/** The runtime's answer while a container is still being made: not there yet, or made but not running. */
const NOT_RUNNING_YET = /no container with name|no such container|state created|state configured|container state improper|is not running/i;

/**
 * Sends `signal` to the attempt's container through the runtime (`kill --signal`), which hands
 * it to the container's init and so to the job. The runtime's attached client drops a signal
 * that reaches it before the container runs, so while the runtime says the container is not
 * running yet this asks again every `retryMs` until it is, or `done` aborts (the run ended).
 * Any other refusal is thrown with the runtime's message.
 */
export async function signalContainer(
  runtime: string,
  attemptId: string,
  signal: NodeJS.Signals,
  done: AbortSignal,
  opts: { globalArgs?: readonly string[]; retryMs?: number } = {},
): Promise<void> {
  const args = [...(opts.globalArgs ?? []), 'kill', '--signal', signal, containerName(attemptId)];
  for (;;) {
    done.throwIfAborted();
    const refused = await run(runtime, args, { timeout: 60_000 }).then(
      () => undefined,
      (err: { stderr?: string; message: string }) => (err.stderr?.trim() || err.message),
    );
    if (refused === undefined) return;
    if (!NOT_RUNNING_YET.test(refused)) throw new Error(`${runtime} kill --signal ${signal}: ${refused}`);
    await sleep(opts.retryMs ?? 100, undefined, { signal: done }).catch(() => undefined);
  }
}
