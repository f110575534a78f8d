import type { BlobStore } from '#blobs';
import { imageArchivePath, type ContainerRuntime, type JobCancelRequested, type JobSpec, type JobStarted, type JobSubmitted } from '#contracts';
import { NotFoundError, ValidationError } from '#errors';
import type { EventStore } from '#event-store';
import type { Identity } from '#identity';
import type { Clock } from '#service-kit';
import type { JetStreamClient } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { existsSync } from 'node:fs';
import { mkdir, open, rmdir, stat, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { gpuAccess, missingRuntimeMessage, needsOutputs, planLaunch, stagingFault, stagingGivesUp, stagingMessage, UnsupportedWorkError, type Launch, type ScriptLocation } from '../domain/index.js';
import type { ExecutionConfig } from '../execution.config.js';
import { LogStreamer, type LogFiles } from '../logs/log-streamer.js';
import { selectOutputs, storeOutputs } from '../outputs/output-handover.js';
import { prepareRunDirs, removeRunDirs, runCgroupName, runProcess, runSpecIssues, sealInputs, signalGroup, type RunDirs, type RunOptions, type RunResult, type RunSpec } from '../run/index.js';
import type { InputCache } from '../staging/input-cache.js';
import type { NodeData } from '../staging/node-data.js';
import type { AttemptHandle } from './attempt-handle.js';
import { workCopyStreamId } from '../journal/journal.js';
import { writeProcessMarker } from './leftover-process.js';
import { CheckpointKeeper, latestCheckpoint, restoreCheckpoint } from './checkpoints.js';
import { containerLaunch, loadArchive, pullImage, removeContainer, signalContainer } from './container-work.js';
import type { AttemptConfinement, NodeConfinement } from './node-confinement.js';

/** What every attempt of this agent shares. */
export interface AgentContext {
  readonly nodeId: string;
  readonly workDir: string;
  readonly config: ExecutionConfig;
  readonly store: EventStore;
  readonly clock: Clock;
  readonly nc: NatsConnection;
  readonly js: JetStreamClient;
  /** The node's own bucket (`gpunet-node-<nodeId>`): the only one it may touch. */
  readonly blobs: BlobStore;
  /** Storage's copies between the team's bucket and the node's. */
  readonly nodeData: NodeData;
  readonly cache: InputCache;
  /** The node key: signs the outputs report (the journal's reports are signed by the relay). */
  readonly identity: Identity;
  /** How jobs are confined on this node (job users, network namespace, cgroups, container runtimes). */
  readonly confine: NodeConfinement;
}

/** What the intake stream says of a job: who submitted what, and whether it was cancelled. */
export interface JobFacts {
  readonly team: string;
  readonly spec: JobSpec;
  readonly cancel?: JobCancelRequested;
}

/** The journal's copy of intake's stream of one job (`intake-job-<jobId>`), as the recorder sent it with the placement. */
export const intakeJobStreamId = (jobId: string) => workCopyStreamId(`intake-job-${jobId}`);

/** Reads a job's submission and cancel request from the journal's copy of intake's stream. */
export async function readJobFacts(store: EventStore, jobId: string): Promise<JobFacts | undefined> {
  const events = await store.readStream(intakeJobStreamId(jobId));
  const submitted = events.find((e) => e.type === 'JobSubmitted')?.data as JobSubmitted | undefined;
  if (!submitted) return undefined;
  const cancel = events.find((e) => e.type === 'JobCancelRequested')?.data as JobCancelRequested | undefined;
  return { team: submitted.team, spec: submitted.spec, ...(cancel && { cancel }) };
}

/** Name of an inline script written into the run's root (beside `inputs/`, outside the job's `work/`). */
const INLINE_SCRIPT = 'job-script';
/** Staging tries before giving the placement back as `node_lost` (a fault of this node, not of the job). */
const STAGING_TRIES = 3;

/**
 * Drives one attempt through the run engine. `prepare()` is the part the JobPlaced handler
 * awaits (stage the inputs, then ComputeHeld); `complete()` runs in the background (process,
 * JobFinished, outputs, ComputeReleased, directory removal) and also finishes an attempt that
 * ended early or was found by recovery.
 */
export class AttemptRunner {
  private dirs: RunDirs | undefined;
  private launch: Launch | undefined;
  private logFiles: LogFiles | undefined;
  private confined: AttemptConfinement | undefined;
  /** What runs, for JobStarted (script sha256 or image id). */
  private work: JobStarted['work'];
  /** Files the agent wrote for the job outside its own directories (an inline script): readable by the job user. */
  private readableFiles: string[] = [];
  /** Sequence of the checkpoint restored into this attempt, if any; and the job's highest sequence so far. */
  private resumedFrom: number | undefined;
  private lastSequence = 0;
  /** The runtime of a container attempt and its global arguments, to remove the container by name. */
  private container: { runtime: ContainerRuntime; globalArgs: readonly string[] } | undefined;
  /** The run ended with no process of the job user left (see RunResult.noneLeftOfJobUser). */
  private noneLeftOfJobUser = false;
  /** Agent notices from before the log stream existed (e.g. the checkpoint restore). */
  private readonly pendingNotices: string[] = [];

  constructor(
    private readonly ctx: AgentContext,
    readonly handle: AttemptHandle,
    private job: JobFacts | undefined,
  ) {}

  private now = (): string => this.ctx.clock.now().toISOString();

  private get runRoot(): string {
    const { jobId, attemptId } = this.handle.state.placement;
    return join(resolve(this.ctx.workDir), 'runs', jobId, attemptId);
  }

  /**
   * placed → staging → held. Resolves `true` once ComputeHeld is recorded, `false` when the
   * attempt ended before (refused, cancelled, inputs missing); `complete()` then releases it.
   */
  async prepare(): Promise<boolean> {
    const h = this.handle;
    const { jobId, attemptId } = h.state.placement;
    const refuse = (outcome: 'failed' | 'node_lost', message: string) =>
      h.execute((s) => (s.finished ? undefined : { type: 'Finish', outcome, exitCode: null, signal: null, message, at: this.now() }));

    if (!this.job) {
      await refuse('failed', `job ${jobId} has no JobSubmitted in the node's journal (the recorder sends it before the placement)`);
      return false;
    }
    const { team, spec } = this.job;
    if (this.job.cancel) {
      await h.stop('cancelled', this.job.cancel.reason ?? 'cancelled by request', this.now);
      return false;
    }

    this.dirs = await prepareRunDirs(this.ctx.workDir, jobId, attemptId);
    const [began] = await h.execute((s) => (s.phase === 'placed' ? { type: 'BeginStaging' } : undefined));
    if (began === undefined) return false; // stopped meanwhile (the agent is stopping)
    for (let tryNo = 1; ; tryNo++) {
      try {
        const report = await this.ctx.cache.stage(team, spec.data.inputs, this.dirs.inputs, h.signal, { attemptId: h.attemptId, jobId });
        h.log.info({ ...report, inputs: spec.data.inputs.length }, 'inputs staged');
        break;
      } catch (err) {
        if (h.state.finished) return false; // stopped meanwhile
        const message = stagingMessage(err, this.dirs.inputs);
        // The job's own inputs or layout: every node would fail the same way, so it ends here
        // (given back as node_lost, placement requeued it without end).
        if (stagingFault(err) === 'job') {
          await refuse('failed', message);
          return false;
        }
        if (tryNo >= STAGING_TRIES) {
          // The object store or this node's disk let us down, not the job: placement requeues it —
          // unless the same kind of trouble has followed the job to its last attempt.
          const outcome = stagingGivesUp(err, h.state.placement.attempt ?? 1);
          await refuse(outcome, outcome === 'failed' ? `${message} (attempt ${h.state.placement.attempt}: staging failed on every node tried)` : message);
          return false;
        }
        h.log.warn({ err: (err as Error).message, tryNo }, 'staging failed; retrying');
        await sleep(500 * tryNo);
      }
    }

    try {
      this.launch = await this.prepareWork(spec, this.dirs);
      const issues = runSpecIssues(this.runSpec(this.launch));
      if (issues.length > 0) throw new ValidationError(issues.map((i) => `${i.path}: ${i.message}${i.fix ? ` (${i.fix})` : ''}`).join('; '), issues);
      await sealInputs(this.dirs.inputs);
      await this.restoreLastCheckpoint(team, jobId, this.dirs);
      await this.ctx.confine.grant(this.dirs, this.confined?.user, this.readableFiles);
    } catch (err) {
      await refuse('failed', `the job cannot be started: ${(err as Error).message}`);
      return false;
    }

    // A cancel recorded while the inputs were staged waits behind this handler: never hold for it.
    const latest = await readJobFacts(this.ctx.store, jobId);
    if (latest?.cancel) {
      await h.stop('cancelled', latest.cancel.reason ?? 'cancelled by request', this.now);
      return false;
    }
    const [held] = await h.execute((s) => (s.phase === 'staging' ? { type: 'Hold', at: this.now() } : undefined));
    return held !== undefined;
  }

  /** Removes what `prepare()` created, for a placement handed back to the bus before anything was recorded. */
  async discard(): Promise<void> {
    // The uid is handed back only after its files are gone: the next attempt under it must not
    // find this one's work/ (its gid still passes the attempt directory).
    // Nothing can start under the uid once none of it is left: the run's end looked already.
    const noneLeft = this.noneLeftOfJobUser || (await this.ctx.confine.killLeft(this.confined?.user));
    try {
      if (existsSync(this.runRoot)) await removeRunDirs({ root: this.runRoot });
      // The job's directory goes with its last attempt (another attempt of it may still be here).
      await rmdir(dirname(this.runRoot)).catch(() => undefined);
    } finally {
      await this.ctx.confine.release(this.handle.attemptId, this.confined?.user, noneLeft);
    }
  }

  /**
   * The rest of the attempt from wherever it is: run the process when held, record how it ended,
   * hand the outputs over when it ran, release the GPUs, remove the run directory.
   */
  async complete(): Promise<void> {
    const h = this.handle;
    let streamer: LogStreamer | undefined;
    try {
      if (h.state.phase === 'held') streamer = await this.run();
      if (needsOutputs(h.state) && h.state.phase === 'finished') await this.settleOutputs(streamer);
      else await streamer?.close();
      streamer = undefined;
      await h.execute((s) => (s.phase === 'finished' || s.phase === 'outputs' ? { type: 'Release', at: this.now() } : undefined));
      if (h.state.phase === 'released') h.log.info({ outcome: h.state.finished?.outcome, outputsStored: h.state.outputsStored }, 'attempt released');
      if (h.state.phase === 'released') {
        // Cached inputs no job on this node needs any more go (DataRemoved, scope node_cache).
        const removed = await this.ctx.cache.release(h.attemptId, { requeued: h.state.finished?.outcome === 'node_lost' }).catch((err: unknown) => h.log.warn({ err }, 'cached inputs not removed'));
        if (removed && removed.length > 0) h.log.info({ removed: removed.map((r) => ({ reason: r.reason, blobs: r.blobs.length })) }, 'cached inputs removed');
      }
      else h.log.error({ phase: h.state.phase }, 'attempt left unreleased; a restarted agent finishes it');
    } catch (err) {
      h.log.error({ err }, 'attempt could not be completed; a restarted agent resumes it');
      await streamer?.close().catch(() => undefined);
      return;
    }
    await this.discard().catch((err: unknown) => h.log.warn({ err }, 'run directory not removed'));
  }

  /** held → running → finished. */
  private async run(): Promise<LogStreamer> {
    const h = this.handle;
    const { jobId, attemptId } = h.state.placement;
    const dirs = (this.dirs ??= await prepareRunDirs(this.ctx.workDir, jobId, attemptId));
    const streamer = new LogStreamer(this.ctx.js, this.job!.team, jobId, this.ctx.nodeId, attemptId, dirs.logs, { now: this.now });
    this.logFiles = streamer.files;
    for (const line of this.pendingNotices.splice(0)) streamer.notice(line);
    const keeper = this.checkpointKeeper(streamer, dirs);
    // A gang's checkpoint is rank 0's, like its outputs: every part restores it, only rank 0 saves it.
    const savesCheckpoints = (h.state.placement.rank ?? 0) === 0;
    let result: RunResult;
    try {
      if (this.launch === undefined) throw new Error('no launch plan (the attempt was not prepared by this agent)');
      const launch = this.launch;
      result = await runProcess(this.runSpec(launch), {
        clock: { now: () => this.ctx.clock.now().getTime() },
        signal: h.signal,
        onLog: streamer.push,
        maxLogBytes: this.ctx.config.GPUNET_MAX_LOG_BYTES,
        cgroupBases: this.ctx.confine.cgroupBases,
        ...(this.ctx.confine.confineHelper !== undefined && { confineHelperPath: this.ctx.confine.confineHelper }),
        cgroupName: runCgroupName(this.ctx.nodeId, attemptId),
        diskCheckMs: this.ctx.config.GPUNET_DISK_CHECK_MS,
        ...(this.container && { deliverWarning: this.warnContainer(this.container, attemptId) }),
        onSpawn: (pid, startedAt) => {
          h.pgid = pid;
          writeProcessMarker(dirs.root, pid, attemptId, new Date(startedAt).toISOString());
          const resumedFromCheckpoint = this.resumedFrom;
          h.execute((s) =>
            s.phase === 'held'
              ? { type: 'Start', at: new Date(startedAt).toISOString(), work: this.work, ...(resumedFromCheckpoint !== undefined && { resumedFromCheckpoint }) }
              : undefined,
          ).then(
            () => (savesCheckpoints ? keeper.start() : undefined),
            (err: unknown) => h.log.error({ err }, 'JobStarted could not be recorded'),
          );
          h.log.info({ pid, command: launch.command }, 'job started');
        },
      });
    } catch (err) {
      // The agent's own trouble (log file, limits it cannot apply), not the job's.
      await h.execute((s) =>
        s.finished ? undefined : { type: 'Finish', outcome: 'failed', exitCode: null, signal: null, message: `the agent could not run the job: ${(err as Error).message}`, at: this.now() },
      );
      return streamer;
    }
    // The last checkpoint is recorded before the end, so a requeued attempt always finds it.
    if (savesCheckpoints) await keeper.finish();
    // The client was killed (after the grace, or the agent stops): the container may outlive it.
    if (this.container) await removeContainer(this.container.runtime, attemptId, this.container.globalArgs);
    const r = result;
    // A container's processes are podman's, not the job user's: those are looked for again at release.
    this.noneLeftOfJobUser = this.container === undefined && r.noneLeftOfJobUser === true;
    await h.execute((s) =>
      s.finished
        ? undefined
        : {
            type: 'Finish',
            outcome: r.outcome,
            exitCode: r.exitCode,
            signal: r.signal,
            ...(r.error !== undefined && { message: r.error }),
            ...(r.limit === 'disk_limit' && { message: `stopped at its disk limit of ${this.confined?.diskBytes ?? '?'} bytes (resources.disk); it used ${r.diskBytes ?? '?'} bytes` }),
            ...(r.limit === 'memory_limit' && { message: `a process was killed at the memory limit of ${this.confined?.memoryBytes ?? '?'} bytes (resources.memory)` }),
            ...(r.limit !== undefined && { limit: r.limit }),
            at: new Date(r.endedAt).toISOString(),
          },
    );
    h.log.info({ outcome: h.state.finished?.outcome, exitCode: r.exitCode, signal: r.signal, logBytes: r.logBytes, truncated: r.truncated, ...(r.limit && { limit: r.limit }) }, 'job finished');
    return streamer;
  }

  /** finished → outputs: select, upload, StoreOutputs; given up (and logged) rather than holding the GPUs forever. */
  private async settleOutputs(streamer: LogStreamer | undefined): Promise<void> {
    const h = this.handle;
    const { jobId, attemptId, nodeId } = h.state.placement;
    if (!existsSync(this.runRoot)) {
      h.log.error('the run directory is gone: outputs cannot be stored');
      await streamer?.close();
      await h.execute({ type: 'SettleOutputs', stored: false });
      return;
    }
    const dirs = this.dirs ?? (await prepareRunDirs(this.ctx.workDir, jobId, attemptId));
    let stored = false;
    try {
      this.job ??= await readJobFacts(this.ctx.store, jobId);
      if (!this.job) throw new NotFoundError(`job ${jobId} has no JobSubmitted in the node's journal (the recorder sends it before the placement)`);
      const selection = await selectOutputs(dirs.outputs, this.job.spec.outputs.globs, this.job.spec.outputs.maxBytes);
      for (const line of selection.notices) streamer?.notice(line);
      await streamer?.close(); // the log files are complete before they are uploaded
      streamer = undefined;
      const logFiles = this.logFiles ?? { stdout: join(dirs.logs, 'stdout.log'), stderr: join(dirs.logs, 'stderr.log') };
      const reply = await storeOutputs(this.ctx.blobs, this.ctx.nc, this.ctx.identity, { team: this.job.team, jobId, attemptId, nodeId, correlationId: h.correlationId }, selection, logFiles, h.log, {
        requestTimeoutMs: this.ctx.config.GPUNET_STORE_OUTPUTS_TIMEOUT_MS,
        giveUpAfterMs: this.ctx.config.GPUNET_STORE_OUTPUTS_GIVE_UP_MS,
      });
      stored = true;
      h.log.info({ files: reply.files, totalBytes: reply.totalBytes, duplicate: reply.duplicate }, 'outputs stored');
    } catch (err) {
      h.log.error({ err }, 'outputs could not be stored; they are given up');
      await streamer?.close().catch(() => undefined);
    }
    await h.execute({ type: 'SettleOutputs', stored });
  }

  /** The script to run: a file among the staged inputs, or the inline text written beside them. */
  private async scriptLocation(spec: JobSpec, dirs: RunDirs): Promise<ScriptLocation> {
    if (spec.work.kind !== 'script') return { file: '', firstLine: '' }; // planLaunch refuses it
    let file: string;
    if ('inline' in spec.work.script) {
      file = join(dirs.root, INLINE_SCRIPT);
      await writeFile(file, spec.work.script.inline, { mode: 0o500 });
    } else {
      file = resolve(dirs.inputs, spec.work.script.path);
      if (!(await stat(file).catch(() => undefined))?.isFile()) {
        throw new ValidationError(`work.script.path ${spec.work.script.path} is not a file among the staged inputs`, [
          { path: 'work.script.path', message: 'not among the inputs', fix: 'add the script as an input, or point at one that is' },
        ]);
      }
    }
    return { file, firstLine: await firstLine(file) };
  }

  private runSpec(launch: Launch): RunSpec {
    const { jobId, attemptId, gpuIndices, rank, gangNodes } = this.handle.state.placement;
    return {
      jobId,
      attemptId,
      ...(gangNodes !== undefined && { gang: { rank: rank ?? 0, nodes: gangNodes } }),
      dirs: this.dirs!,
      command: launch.command,
      args: launch.args,
      env: launch.env,
      gpus: gpuIndices,
      timeLimitMs: this.job!.spec.request.timeLimitMs,
      graceMs: this.ctx.config.GPUNET_KILL_GRACE_MS,
      ...this.unattended(),
    };
  }

  /**
   * Confinement, then the launch: a script (its sha256 is what JobStarted records) or a container
   * image pulled now, before compute is held (its id is recorded and is what runs).
   */
  private async prepareWork(spec: JobSpec, dirs: RunDirs): Promise<Launch> {
    const { jobId, attemptId, gpuIndices } = this.handle.state.placement;
    this.confined = this.ctx.confine.forAttempt(attemptId, spec, this.handle.state.placement.gangNodes !== undefined, dirs.root);
    if (spec.work.kind === 'container') {
      const runtime = this.ctx.confine.containerRuntimes[0];
      if (runtime === undefined) throw new UnsupportedWorkError(missingRuntimeMessage(spec.work.image, this.ctx.nodeId));
      const host = this.ctx.confine.containers;
      const globalArgs = runtime === 'podman' ? host.podmanArgs : [];
      const archive = spec.work.archive;
      let imageId: string;
      if (archive !== undefined) {
        // Staged with the inputs (content-addressed, cached on this node); loaded once per node.
        const got = await loadArchive(runtime, join(dirs.inputs, imageArchivePath(archive.sha256)), archive.sha256, globalArgs);
        imageId = got.imageId;
        this.handle.log.info({ image: spec.work.image, archive: archive.sha256, imageId, loaded: got.loaded }, 'container image ready');
      } else {
        const got = await pullImage(runtime, spec.work.image, globalArgs);
        imageId = got.imageId;
        this.handle.log.info({ image: spec.work.image, imageId, pulled: got.pulled }, 'container image ready');
      }
      const gpus = gpuAccess(host.gpus, gpuIndices);
      this.work = {
        kind: 'container',
        digest: imageId,
        runtime,
        image: spec.work.image,
        ...(archive && { archive: archive.sha256 }),
        ...(gpus && { gpus: { mode: gpus.mode, devices: [...gpus.devices] } }),
      };
      this.container = { runtime, globalArgs };
      const { user, confinement } = this.confined;
      return containerLaunch({
        runtime,
        imageId,
        work: spec.work,
        jobId,
        attemptId,
        dirs,
        ...(user && { user }),
        network: spec.request.network,
        memoryBytes: this.confined.memoryBytes,
        maxProcesses: confinement.cgroup?.maxProcesses ?? this.ctx.config.GPUNET_JOB_MAX_PROCESSES,
        ...(gpus && { gpus }),
        globalArgs,
        openFiles: host.openFiles,
        tmpfsBytes: this.confined.diskBytes,
      });
    }
    const script = await this.scriptLocation(spec, dirs);
    this.work = { kind: 'script', digest: `sha256:${(await this.ctx.blobs.hashFile(script.file)).sha256}` };
    if (!script.file.startsWith(`${dirs.inputs}/`)) this.readableFiles.push(script.file);
    return planLaunch(spec.work, script);
  }

  /** Puts the job's last checkpoint (from any earlier attempt) into `checkpoints/`, before compute is held. */
  private async restoreLastCheckpoint(team: string, jobId: string, dirs: RunDirs): Promise<void> {
    const last = await latestCheckpoint(this.ctx.store, jobId);
    if (!last) return;
    this.lastSequence = last.sequence;
    try {
      const got = await restoreCheckpoint(this.ctx.blobs, team, last, dirs.checkpoints, (shas) => this.ctx.nodeData.stage(jobId, this.handle.attemptId, shas).then(() => undefined));
      this.resumedFrom = last.sequence;
      this.pendingNotices.push(`[gpunet] resumed from checkpoint ${last.sequence} of attempt ${last.attemptId} (${got.files} file(s), ${got.bytes} bytes)`);
      this.handle.log.info({ sequence: last.sequence, from: last.attemptId, files: got.files, bytes: got.bytes }, 'checkpoint restored');
    } catch (err) {
      // Progress is lost, the job is not: it starts from the beginning, and says so in its log.
      this.pendingNotices.push(`[gpunet] checkpoint ${last.sequence} could not be restored, starting without it: ${(err as Error).message}`);
      this.handle.log.error({ err, sequence: last.sequence }, 'checkpoint not restored');
      await removeRunDirs({ root: dirs.checkpoints }).catch(() => undefined);
      await mkdir(dirs.checkpoints, { recursive: true, mode: 0o700 });
    }
  }

  /** Saves `checkpoints/` while the job runs and at its end (JobCheckpointed). */
  private checkpointKeeper(streamer: LogStreamer, dirs: RunDirs): CheckpointKeeper {
    const h = this.handle;
    return new CheckpointKeeper({
      blobs: this.ctx.blobs,
      team: this.job!.team,
      dir: dirs.checkpoints,
      scratch: join(dirs.root, 'checkpoint-snapshot'),
      ...(this.confined?.user && { ownerUid: this.confined.user.uid }),
      intervalMs: this.job!.spec.checkpoint?.intervalMs ?? this.ctx.config.GPUNET_CHECKPOINT_INTERVAL_MS,
      lastSequence: this.lastSequence,
      collect: async (sha256) => void (await this.ctx.nodeData.checkpoint(h.state.placement.jobId, h.attemptId, sha256)),
      record: async ({ sequence, sha256, size }) => {
        const facts = await h.execute((s) => (s.phase === 'running' ? { type: 'Checkpoint', sequence, sha256, size, at: this.now() } : undefined));
        if (facts.length === 0) throw new Error('the attempt is no longer running');
      },
      notice: (line) => streamer.notice(line),
      log: h.log,
    });
  }

  /**
   * Confinement, limits and the time-limit warning of the run. A container's confinement is in
   * its own arguments (the runtime's client must run as root, in no namespace of ours); its disk
   * cap is measured on the run's directories like a script's.
   */
  private unattended(): Pick<RunSpec, 'confinement' | 'limits' | 'warnSignal' | 'warnBeforeMs' | 'diskLimitBytes'> {
    const spec = this.job!.spec;
    const warning = spec.request.warning;
    const c = spec.work.kind === 'script' ? this.confined : undefined;
    return {
      ...(c && { confinement: c.confinement }),
      ...(this.confined && { diskLimitBytes: this.confined.diskBytes }),
      ...(c?.limits && { limits: c.limits }),
      ...(warning !== undefined && warning.beforeMs < spec.request.timeLimitMs && { warnSignal: warning.signal, warnBeforeMs: warning.beforeMs }),
    };
  }

  /** A container's warning goes to the container, once it runs (its client would drop it before). */
  private warnContainer(c: { runtime: ContainerRuntime; globalArgs: readonly string[] }, attemptId: string): NonNullable<RunOptions['deliverWarning']> {
    return (signal, done) => signalContainer(c.runtime, attemptId, signal, done, { globalArgs: c.globalArgs });
  }

  /** SIGKILLs the job's process group now (the agent is stopping and the grace is over). */
  killNow(): void {
    if (this.handle.pgid !== undefined) {
      try {
        signalGroup(this.handle.pgid, 'SIGKILL');
      } catch (err) {
        this.handle.log.warn({ err }, 'could not kill the process group');
      }
    }
  }
}

/** First line of a file (up to 512 bytes), for its `#!`. */
async function firstLine(path: string): Promise<string> {
  const fh = await open(path, 'r');
  try {
    const buf = Buffer.alloc(512);
    const { bytesRead } = await fh.read(buf, 0, buf.length, 0);
    const text = buf.subarray(0, bytesRead).toString('utf8');
    const nl = text.search(/\r?\n/);
    return nl < 0 ? text : text.slice(0, nl);
  } finally {
    await fh.close();
  }
}
