/**
 * A long history, made fast: the events the services record for N jobs (about 13 per job, as a
 * real run writes them, in the streams each service writes), several teams, spread over days, a
 * few jobs lost with their node and run again. Written straight into a store in large batches
 * (`buildHistoryStore`), not through the services: for benches and tests of what happens at a
 * million jobs (bench:audit, bench:restart). Deterministic for a seed.
 */
import type { EventStore, EventToAppend, SqliteEventStore } from '#event-store';
import { PostgresEventStore, appendOnClient } from '#event-store';

export interface HistoryOptions {
  /** Jobs in the history. */
  jobs: number;
  /** Team ids: `team-0` … Default 8. */
  teams?: number;
  /** Days the submissions are spread over, ending at `start + days`. Default 30. */
  days?: number;
  /** Submission time of the first job. Default 2026-01-01T00:00:00Z. */
  start?: string;
  /** Nodes the jobs run on. Default 64. */
  nodes?: number;
  /** One job in this many loses its node on its first attempt and runs again. Default 500. */
  lostEvery?: number;
  seed?: number;
}

/** One append of the history: a stream and its events (one service's). */
export interface HistoryAppend {
  streamId: string;
  events: EventToAppend[];
}

export const HISTORY_DEFAULTS = { teams: 8, days: 30, start: '2026-01-01T00:00:00.000Z', nodes: 64, lostEvery: 500, seed: 1 } as const;

/** The id of job `i` (UUID-shaped; stable for a seed; not in submission order, as random ids are not). */
export function historyJobId(i: number, seed: number = HISTORY_DEFAULTS.seed): string {
  const hex = (n: number, width: number) => (n >>> 0).toString(16).padStart(width, '0').slice(-width);
  const mixed = Math.imul(i + 1, 2654435761) ^ seed;
  return `${hex(mixed, 8)}-${hex(seed, 4)}-4${hex(i >>> 24, 3)}-8${hex(i >>> 12, 3)}-${hex(i, 12)}`;
}

/** The team of job `i`. */
export function historyTeam(i: number, options: Pick<HistoryOptions, 'teams'> = {}): string {
  return `team-${i % (options.teams ?? HISTORY_DEFAULTS.teams)}`;
}

/** When job `i` was submitted (evenly spread over the days). */
export function historySubmittedMs(i: number, options: HistoryOptions): number {
  const start = Date.parse(options.start ?? HISTORY_DEFAULTS.start);
  const span = (options.days ?? HISTORY_DEFAULTS.days) * 86_400_000;
  return start + Math.floor((i * span) / Math.max(1, options.jobs));
}

let counter = 0;
/** A UUID-shaped event id, unique in this process (the store checks the shape and uniqueness only). */
function eventId(seed: number): string {
  counter += 1;
  const c = counter;
  const hex = (n: number, width: number) => (n >>> 0).toString(16).padStart(width, '0').slice(-width);
  return `${hex(seed * 7919 + process.pid, 8)}-${hex(c / 2 ** 32, 4)}-4${hex(c >>> 20, 3)}-9${hex(c >>> 8, 3)}-${hex(Date.now() & 0xffff, 4)}${hex(c, 8)}`;
}

const SHA = (n: number, ch: string) => `${ch.repeat(56)}${(n >>> 0).toString(16).padStart(8, '0')}`;
const GPU_MODELS = ['A100', 'H100', 'L40S'] as const;
/** Distinct input blobs: job `i` reads blob `i % INPUT_BLOBS` of its team. */
const INPUT_BLOBS = 5_000;
const gcd = (a: number, b: number): number => (b === 0 ? a : gcd(b, a % b));

/** The appends of job `i`, in the order the services record them. */
export function historyJob(i: number, options: HistoryOptions): HistoryAppend[] {
  const seed = options.seed ?? HISTORY_DEFAULTS.seed;
  const jobId = historyJobId(i, seed);
  const team = historyTeam(i, options);
  const nodes = options.nodes ?? HISTORY_DEFAULTS.nodes;
  const teams = options.teams ?? HISTORY_DEFAULTS.teams;
  const lostEvery = options.lostEvery ?? HISTORY_DEFAULTS.lostEvery;
  const lost = i % lostEvery === lostEvery - 1;
  const t0 = historySubmittedMs(i, options);
  const at = (ms: number) => new Date(t0 + ms).toISOString();
  const gpuModel = GPU_MODELS[i % GPU_MODELS.length]!;
  const gpus = 1 + (i % 4);
  const gpuIndices = Array.from({ length: gpus }, (_, k) => k);
  const runMs = 30_000 + ((i * 7919) % 3_600_000);
  const meta = (producer: string, occurredMs: number) => ({
    correlationId: jobId,
    causationId: jobId,
    jobId,
    team,
    producer,
    occurredAt: at(occurredMs),
  });
  const ev = (type: string, data: Record<string, unknown>, producer: string, occurredMs: number): EventToAppend => ({ eventId: eventId(seed), type, data, metadata: meta(producer, occurredMs) });
  const spec = {
    name: `train-${i % 97}`,
    work: { kind: 'script', script: { inline: `python train.py --shard ${i % 1000}` } },
    data: { inputs: [{ name: 'data', path: 'data/train', sha256: SHA(i % INPUT_BLOBS, 'a'), size: 1_000_000 + (i % 1000) }] },
    request: { gpus, timeLimitMs: 7_200_000, network: false },
    outputs: { globs: ['out/**'], maxBytes: 1_000_000_000 },
  };
  const out: HistoryAppend[] = [];
  out.push({ streamId: `intake-job-${jobId}`, events: [ev('JobSubmitted', { jobId, team, spec, submittedAt: at(0), submittedBy: `key-${team}` }, 'intake', 0)] });
  out.push({ streamId: `storage-job-${jobId}`, events: [ev('InputsStaged', { jobId, inputs: [{ name: 'data', sha256: SHA(i % INPUT_BLOBS, 'a'), size: 1_000_000 + (i % 1000) }], totalBytes: 1_000_000 + (i % 1000), stagedAt: at(800) }, 'storage', 800)] });
  let clock = 1_000;
  const attempts = lost ? 2 : 1;
  for (let attempt = 1; attempt <= attempts; attempt++) {
    const attemptId = `${jobId.slice(0, 24)}${attempt.toString(16).padStart(12, '0')}`;
    const nodeId = `node-${(i + attempt) % nodes}`;
    const placed = clock;
    const placement: EventToAppend[] = [];
    if (attempt === 1) placement.push(ev('JobQuoted', { jobId, expectedStart: at(placed), expectedEnd: at(placed + 7_200_000), quotedAt: at(900) }, 'placement', 900));
    placement.push(ev('JobPlaced', { jobId, attemptId, attempt, nodeId, gpuIndices, gpuModel, placedAt: at(placed) }, 'placement', placed));
    out.push({ streamId: `placement-job-${jobId}`, events: placement });
    const held = placed + 500;
    const started = held + 200;
    const agent: EventToAppend[] = [
      ev('ComputeHeld', { jobId, attemptId, nodeId, gpuIndices, gpuModel, gpus, heldAt: at(held) }, 'execution', held),
      ev('JobStarted', { jobId, attemptId, nodeId, startedAt: at(started), work: { kind: 'script', digest: `sha256:${SHA(i, 'b')}` } }, 'execution', started),
    ];
    const execStream = `execution-${nodeId}-attempt-${attemptId}`;
    if (attempt < attempts) {
      // The node is lost: placement records it, the attempt ends as node_lost and is run again.
      const lostAt = started + 10_000;
      out.push({ streamId: execStream, events: agent });
      out.push({
        streamId: `placement-node-${nodeId}`,
        events: [ev('NodeLost', { nodeId, reason: 'heartbeat_timeout', lastSeenAt: at(lostAt), detectedAt: at(lostAt + 900), affectedAttempts: [{ jobId, attemptId }] }, 'placement', lostAt + 900)],
      });
      out.push({ streamId: execStream, events: [ev('JobFinished', { jobId, attemptId, nodeId, outcome: 'node_lost', exitCode: null, signal: null, finishedAt: at(lostAt + 1_000) }, 'execution', lostAt + 1_000)] });
      out.push({ streamId: `placement-job-${jobId}`, events: [ev('JobRequeued', { jobId, previousAttemptId: attemptId, reason: 'node_lost', nextAttempt: attempt + 1, requeuedAt: at(lostAt + 1_100) }, 'placement', lostAt + 1_100)] });
      clock = lostAt + 2_000;
      continue;
    }
    const finished = started + runMs;
    agent.push(
      ev('JobCheckpointed', { jobId, attemptId, nodeId, sequence: 1, sha256: SHA(i, 'c'), size: 4096, checkpointedAt: at(started + Math.floor(runMs / 2)) }, 'execution', started + Math.floor(runMs / 2)),
      ev('JobFinished', { jobId, attemptId, nodeId, outcome: 'completed', exitCode: 0, signal: null, finishedAt: at(finished) }, 'execution', finished),
    );
    out.push({ streamId: execStream, events: agent });
    out.push({
      streamId: `storage-job-${jobId}`,
      events: [ev('OutputsStored', { jobId, attemptId, files: [{ path: 'out/model.bin', sha256: SHA(i, 'd'), size: 4096 + (i % 100) }], totalBytes: 4096 + (i % 100), truncated: false, logs: [], storedAt: at(finished + 700) }, 'storage', finished + 700)],
    });
    out.push({ streamId: execStream, events: [ev('ComputeReleased', { jobId, attemptId, nodeId, gpuIndices, releasedAt: at(finished + 800) }, 'execution', finished + 800)] });
    // Storage removes the job's input at its release, as it does for an input kept 0 ms that no
    // other job of the team needs then. The team's next job with the same bytes comes `sameBlob`
    // jobs later and, at up to a million jobs over the default days, is submitted after this
    // release; when it is not, it still needs the blob, and its own release removes it for both.
    const sameBlob = (INPUT_BLOBS * teams) / gcd(INPUT_BLOBS, teams);
    if (historySubmittedMs(i + sameBlob, options) > t0 + finished + 800) {
      const input = { sha256: SHA(i % INPUT_BLOBS, 'a'), size: 1_000_000 + (i % 1000) };
      out.push({ streamId: `storage-job-${jobId}`, events: [ev('DataRemoved', { jobId, scope: 'inputs', blobs: [input], reason: 'job_released', removedAt: at(finished + 850) }, 'storage', finished + 850)] });
    }
    const billableMs = finished - held;
    const rate = 3_600_000;
    out.push({
      streamId: `ledger-usage-${jobId}`,
      events: [
        ev(
          'UsageRecorded',
          {
            jobId,
            attemptId,
            team,
            nodeId,
            gpuModel,
            gpus,
            outcome: 'completed',
            heldFrom: at(held),
            finishedAt: at(finished),
            billableMs,
            rateMicrosPerGpuHour: rate,
            amountMicros: Math.floor((gpus * billableMs * rate + 1_800_000) / 3_600_000),
            currency: 'EUR',
            priceListVersion: 1,
            rounding: 'per-line-half-up-micros',
            recordedAt: at(finished + 900),
          },
          'ledger',
          finished + 900,
        ),
      ],
    });
    const files = [{ path: 'out/model.bin', sha256: SHA(i, 'd'), size: 4096 + (i % 100) }];
    const amountMicros = Math.floor((gpus * billableMs * rate + 1_800_000) / 3_600_000);
    out.push({
      streamId: `ledger-job-${jobId}`,
      events: [
        ev(
          'JobEnded',
          { jobId, team, outcome: 'completed', attempts, exitCode: 0, billed: { billableMs, totals: [{ currency: 'EUR', amountMicros }] }, outputs: { files, totalBytes: 4096 + (i % 100), rejected: 0 }, endedAt: at(finished + 1_000) },
          'ledger',
          finished + 1_000,
        ),
      ],
    });
  }
  return out;
}

/** Writes appends in one transaction per batch: straight into the store, far faster than one append each. */
export async function appendBatch(store: SqliteEventStore | PostgresEventStore, appends: readonly HistoryAppend[]): Promise<void> {
  if (store instanceof PostgresEventStore) {
    const client = await store.connect();
    try {
      await client.query('BEGIN');
      // The history is written before anything reads it: no need to wait for each commit's flush.
      await client.query("SET LOCAL synchronous_commit = 'off'");
      let last = 0n;
      for (const a of appends) last = (await appendOnClient(client, store.appendSettings, a.streamId, a.events)).position;
      await client.query('COMMIT');
      store.notifyAppended(last);
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      client.release();
    }
    return;
  }
  await store.appendMany(appends.map((a) => ({ streamId: a.streamId, events: a.events })));
}

/**
 * Builds a history of `jobs` jobs into `store`, `batchJobs` jobs per transaction (interleaving
 * their appends, as concurrent jobs do). Calls `progress` after each batch.
 */
export async function buildHistoryStore(
  store: SqliteEventStore | PostgresEventStore,
  options: HistoryOptions & { batchJobs?: number; progress?: (jobsDone: number) => void },
): Promise<{ jobs: number; events: number }> {
  const batchJobs = options.batchJobs ?? 2_000;
  let events = 0;
  for (let from = 0; from < options.jobs; from += batchJobs) {
    const perJob: HistoryAppend[][] = [];
    for (let i = from; i < Math.min(options.jobs, from + batchJobs); i++) perJob.push(historyJob(i, options));
    // Round-robin over the batch's jobs: each job's appends stay in order, jobs interleave.
    const appends: HistoryAppend[] = [];
    for (let step = 0; perJob.some((j) => step < j.length); step++) for (const j of perJob) if (step < j.length) appends.push(j[step]!);
    for (const a of appends) events += a.events.length;
    await appendBatch(store, appends);
    options.progress?.(Math.min(options.jobs, from + batchJobs));
  }
  return { jobs: options.jobs, events };
}

/**
 * Puts every named process's outbox relay checkpoint (`relay-<name>`) at the store's head, and
 * returns the head. A history built here goes straight into the store, not through the services'
 * relays: left at 0, each relay's first start publishes its service's whole share of the history
 * to the bus (2,000,000 of the ledger's events at a million jobs), and a bench then measures that
 * backlog, not what it means to. The history's events were on the bus when they were recorded, so
 * every relay starts at the head, as it would in the network that recorded them.
 */
export async function relaysAtHead(store: EventStore, processNames: readonly string[]): Promise<bigint> {
  const head = await store.headPosition();
  for (const name of processNames) await store.saveCheckpoint(`relay-${name}`, head);
  return head;
}
