/**
 * Which staged inputs some job still needs: a small reference read model folded from the event
 * store, and the removal plans derived from it.
 *
 * A job holds its inputs while it may still run (submitted … running, and after a `node_lost`
 * attempt, which placement requeues). It becomes final when its staging fails, it is rejected or
 * withdrawn, or an attempt that did not end `node_lost` releases its compute. From then on each
 * input is kept for its `keepMs` (0 when the spec says nothing) counted from that moment, so
 * related jobs can reuse it. A blob of a team is removed once no job of that team needs it, and
 * `DataRemoved` records it; blobs are team-scoped, so teams never share a reference. A final job
 * leaves the model once its inputs are removed, or once it has ended and a later job holds every
 * input it still has at least as long (`supersedes`): so the model holds the jobs that may still
 * run and, per kept blob, the last jobs to keep it, not every job that ever named a dataset.
 *
 * Outputs, logs and checkpoints live in the same team-scoped, content-addressed store and are
 * never removed by this model: a blob any of them refers to is never removed as an input, since an
 * output with the same bytes as an input *is* that blob. Those references grow with every job ever
 * run, so the model does not hold them: `retainedBy` names the ones an event adds, the caller
 * keeps them in the store's database, and a plan is given the ones it asks about (`RetainedOf`).
 *
 * Folder inputs are addressed by their manifest; their files are blobs of their own, possibly
 * shared with other folders or file inputs. Plans therefore take `filesOf`, the files of each
 * manifest, which the caller reads from the object store (manifests are immutable).
 */
import type {
  BlobRef,
  ComputeReleased,
  DataRemoved,
  JobCheckpointed,
  JobEnded,
  JobFinished,
  JobOutcome,
  JobRejected,
  JobRequeued,
  JobSubmitted,
  JobWithdrawn,
  OutputsStored,
  StagingFailed,
} from '#contracts';

/** An event as the model needs it (a recorded event or a bus event). */
export interface RefEvent {
  eventId: string;
  type: string;
  data: unknown;
  /** `team`: the team the event concerns (every recorded event of a job carries it). */
  metadata: { correlationId: string; team?: string };
}

/** The event a removal is recorded as caused by: ids derive from it, correlation carries over. */
export interface CauseRef {
  eventId: string;
  metadata: { correlationId: string };
}

export interface RefInput {
  name: string;
  kind: 'file' | 'folder';
  sha256: string;
  size: number;
  /** How long after the job became final the input is kept; 0: not kept. */
  keepMs: number;
  /** The team's dataset name the spec gave it: kept until a later job names the dataset with other bytes. */
  dataset?: string;
}

export interface JobRefs {
  jobId: string;
  team: string;
  inputs: RefInput[];
  /**
   * Set once the job can no longer run: when, the event that made it so, and its place among the
   * jobs that became final (`DataRefs.finals` then), so an input several jobs held is removed
   * under the last of them to end: the release that made it unneeded.
   */
  final: { atMs: number; cause: CauseRef; seq: number } | undefined;
  /**
   * `JobEnded` folded: the ledger records it once placement decided the job runs no more (no
   * retry, no requeue), so a final job that has ended never needs its inputs again.
   */
  ended: boolean;
  /** Outcome of each finished attempt, to tell a released `node_lost` attempt (requeued) from an end. */
  outcomes: Map<string, JobOutcome>;
  /** Input blobs (sha256) already removed. */
  removed: Set<string>;
}

export interface DataRefs {
  jobs: Map<string, JobRefs>;
  /** Job ids by team, for the team-wide "still needed" question. */
  byTeam: Map<string, Set<string>>;
  /** `<team>/<dataset>` → the bytes the dataset name means now, and since when (epoch ms of the submission that named them). */
  datasets: Map<string, { sha256: string; sinceMs: number }>;
  /** How many times a job became final so far: the next `final.seq`. */
  finals: number;
}

/** Event types the model folds; all others leave it unchanged. */
export const DATA_REF_EVENT_TYPES = [
  'JobSubmitted',
  'StagingFailed',
  'JobRejected',
  'JobWithdrawn',
  'JobFinished',
  'ComputeReleased',
  'JobRequeued',
  'DataRemoved',
  'OutputsStored',
  'JobCheckpointed',
  'JobEnded',
] as const;

export interface EvolveOptions {
  /**
   * Forget an ended job once a later one holds every input it still has, at least as long
   * (`supersedes`): without it every job that named a dataset stayed for as long as the dataset
   * kept its bytes. Default true; false keeps every job, as a reference for tests.
   */
  supersede?: boolean;
}

export function initialDataRefs(): DataRefs {
  return { jobs: new Map(), byTeam: new Map(), datasets: new Map(), finals: 0 };
}

/**
 * A blob of a team that an output or a log refers to (`file`), or a checkpoint's manifest
 * (`folder`, whose files a plan expands): never removed as an input. References are only ever
 * added, so a set of them written ahead of the model, or twice, is still right.
 */
export interface RetainedRef {
  team: string;
  sha256: string;
  kind: 'file' | 'folder';
}

/**
 * A team's retained blobs as a plan needs them: `files` holds at least every retained file among
 * the blobs the plan may remove (see `inputBlobs`), `folders` every retained checkpoint manifest.
 */
export interface Retained {
  files: ReadonlySet<string>;
  folders: Iterable<string>;
}

/** A team's retained blobs; undefined when not known, and then a plan removes nothing of the team. */
export type RetainedOf = (team: string) => Retained | undefined;

/**
 * The references `event` adds (an output's files and logs, a checkpoint's manifest), of the
 * team its metadata names, else of its job while the model holds it. Ask before folding the event.
 */
export function retainedBy(model: DataRefs, event: RefEvent): RetainedRef[] {
  if (event.type === 'OutputsStored') {
    const e = event.data as OutputsStored;
    const team = teamOfEvent(model, e.jobId, event.metadata.team);
    if (team === undefined) return [];
    return [...e.files, ...(e.logs ?? [])].map((f) => ({ team, sha256: f.sha256, kind: 'file' as const }));
  }
  if (event.type === 'JobCheckpointed') {
    const e = event.data as JobCheckpointed;
    const team = teamOfEvent(model, e.jobId, event.metadata.team);
    // Not e.size: that is the checkpoint files' total, not the manifest's size; read with it, the
    // manifest failed its size check and its files went unprotected.
    return e.sha256 === undefined || team === undefined ? [] : [{ team, sha256: e.sha256, kind: 'folder' }];
  }
  return [];
}

/** Retained references held in memory, as a plan asks for them (tests; a small store). */
export function retainedIn(refs: Iterable<RetainedRef>): RetainedOf {
  const byTeam = new Map<string, { files: Set<string>; folders: Set<string> }>();
  for (const r of refs) {
    let kept = byTeam.get(r.team);
    if (!kept) byTeam.set(r.team, (kept = { files: new Set(), folders: new Set() }));
    (r.kind === 'file' ? kept.files : kept.folders).add(r.sha256);
  }
  return (team) => byTeam.get(team) ?? { files: new Set(), folders: [] };
}

/**
 * Folds one event into the model (in place). Idempotent: applying an event twice changes
 * nothing more, so live events may overlap the fold at start.
 */
export function evolve(model: DataRefs, event: RefEvent, options: EvolveOptions = {}): void {
  const supersede = options.supersede ?? true;
  switch (event.type) {
    case 'JobSubmitted': {
      const e = event.data as JobSubmitted;
      if (model.jobs.has(e.jobId)) return;
      const inputs = e.spec.data.inputs.map((i) => ({ name: i.name, kind: i.kind, sha256: i.sha256, size: i.size, keepMs: i.keepMs ?? 0, ...(i.dataset ? { dataset: i.dataset } : {}) }));
      for (const i of inputs) {
        if (!i.dataset) continue;
        const key = `${e.team}/${i.dataset}`;
        if (model.datasets.get(key)?.sha256 !== i.sha256) model.datasets.set(key, { sha256: i.sha256, sinceMs: Date.parse(e.submittedAt) });
      }
      model.jobs.set(e.jobId, { jobId: e.jobId, team: e.team, inputs, final: undefined, ended: false, outcomes: new Map(), removed: new Set() });
      const ids = model.byTeam.get(e.team) ?? new Set<string>();
      ids.add(e.jobId);
      model.byTeam.set(e.team, ids);
      return;
    }
    case 'StagingFailed':
      return finish(model, (event.data as StagingFailed).jobId, (event.data as StagingFailed).failedAt, event, supersede);
    case 'JobRejected':
      return finish(model, (event.data as JobRejected).jobId, (event.data as JobRejected).rejectedAt, event, supersede);
    case 'JobWithdrawn':
      return finish(model, (event.data as JobWithdrawn).jobId, (event.data as JobWithdrawn).withdrawnAt, event, supersede);
    case 'JobFinished': {
      const e = event.data as JobFinished;
      model.jobs.get(e.jobId)?.outcomes.set(e.attemptId, e.outcome);
      return;
    }
    case 'ComputeReleased': {
      const e = event.data as ComputeReleased;
      const job = model.jobs.get(e.jobId);
      // A node_lost attempt is requeued by placement: the job still needs its inputs.
      if (!job || job.outcomes.get(e.attemptId) === 'node_lost') return;
      return finish(model, e.jobId, e.releasedAt, event, supersede);
    }
    case 'JobRequeued': {
      const job = model.jobs.get((event.data as JobRequeued).jobId);
      if (job) job.final = undefined;
      return;
    }
    case 'JobEnded': {
      const job = model.jobs.get((event.data as JobEnded).jobId);
      if (!job || job.ended) return;
      job.ended = true;
      if (supersede && job.final && supersededNow(model, job)) forget(model, job);
      return;
    }
    // OutputsStored and JobCheckpointed change nothing here: see `retainedBy`.
    case 'DataRemoved': {
      const e = event.data as DataRemoved;
      if (e.scope !== 'inputs' || e.nodeId !== undefined || e.jobId === undefined) return;
      // Storage records its removals with the team; the job named may have left the model since.
      const team = event.metadata.team ?? model.jobs.get(e.jobId)?.team;
      if (team === undefined) return;
      // The blob is gone for every job of the team that is done with it, not only the one named.
      const gone = new Set(e.blobs.map((b) => b.sha256));
      for (const id of model.byTeam.get(team) ?? []) {
        const job = model.jobs.get(id)!;
        if (!job.final) continue;
        for (const input of job.inputs) if (gone.has(input.sha256)) job.removed.add(input.sha256);
        prune(model, job);
      }
      return;
    }
  }
}

/**
 * The team of an event of `jobId`: from the event's metadata, else from the job while the model
 * holds it. A job's team is not kept once its inputs are settled: that was a map growing with
 * every job ever run, and the event says it.
 */
function teamOfEvent(model: DataRefs, jobId: string, eventTeam: string | undefined): string | undefined {
  return eventTeam ?? model.jobs.get(jobId)?.team;
}

function finish(model: DataRefs, jobId: string, at: string, cause: RefEvent, supersede: boolean): void {
  const job = model.jobs.get(jobId);
  if (!job || job.final) return;
  job.final = { atMs: Date.parse(at), cause: { eventId: cause.eventId, metadata: { correlationId: cause.metadata.correlationId } }, seq: model.finals++ };
  if (prune(model, job) || !supersede) return;
  for (const id of model.byTeam.get(job.team) ?? []) {
    const earlier = model.jobs.get(id)!;
    if (earlier !== job && supersedes(job, earlier)) forget(model, earlier);
  }
}

/**
 * Whether `later` makes `earlier` irrelevant to every plan from now on: both final, `earlier`
 * ended (it runs no more) and before `later` in the order jobs became final, and every input
 * `earlier` still has is an input `later` still has, of the same kind, kept at least as long.
 *
 * Then whatever plan removes such a blob, `later` needed it as long and is the one it is recorded
 * under (the last to end first), so plans are those of a model that keeps `earlier`. The one
 * difference: a repeated release plan of `earlier` alone finds nothing, and the next sweep
 * removes the blobs under `later`. A later job run again (requeued) needs the blobs while it
 * runs, and ends after `earlier` again.
 */
/** Whether a job of `job`'s team in the model supersedes it now. */
function supersededNow(model: DataRefs, job: JobRefs): boolean {
  for (const id of model.byTeam.get(job.team)!) if (supersedes(model.jobs.get(id)!, job)) return true;
  return false;
}

function supersedes(later: JobRefs, earlier: JobRefs): boolean {
  const lf = later.final;
  const ef = earlier.final;
  if (!lf || !ef || !earlier.ended || ef.seq >= lf.seq) return false;
  return earlier.inputs.every(
    (i) =>
      earlier.removed.has(i.sha256) ||
      later.inputs.some(
        (k) =>
          k.sha256 === i.sha256 &&
          k.kind === i.kind &&
          !later.removed.has(k.sha256) &&
          // A dataset is kept while its name means these bytes, then until the later of the job's end
          // and the renaming; a plain input for its keep. A dataset input keeps at least until its end.
          (i.dataset !== undefined ? k.dataset === i.dataset && lf.atMs >= ef.atMs : lf.atMs + (k.dataset !== undefined ? 0 : k.keepMs) >= ef.atMs + i.keepMs),
      ),
  );
}

/** A final job with nothing left to remove needs no place in the model; true when it left. */
function prune(model: DataRefs, job: JobRefs): boolean {
  if (!job.final || job.inputs.some((i) => !job.removed.has(i.sha256))) return false;
  forget(model, job);
  return true;
}

function forget(model: DataRefs, job: JobRefs): void {
  model.jobs.delete(job.jobId);
  const ids = model.byTeam.get(job.team);
  ids?.delete(job.jobId);
  if (ids?.size === 0) model.byTeam.delete(job.team);
}

/** The files of a folder manifest; empty when the manifest is unknown (it cannot be materialized then). */
export type FilesOf = (team: string, manifestSha256: string) => readonly BlobRef[];

/** One `DataRemoved` to record after deleting `blobs`. */
export interface Removal {
  jobId: string;
  team: string;
  reason: 'job_released' | 'retention_expired';
  /** Every blob to delete, each once: the inputs and the files of folder inputs that no job needs. */
  blobs: BlobRef[];
  cause: CauseRef;
  /** Stable for the same removal, so a repeated plan records under the same event id. */
  discriminator: string;
}

/** Folder manifests a plan may read: the given teams' folder inputs not yet removed (with their size), and their checkpoints (size unknown). */
export function foldersToRead(model: DataRefs, teams: Iterable<string>, retained: RetainedOf): { team: string; sha256: string; size?: number }[] {
  const out: { team: string; sha256: string; size?: number }[] = [];
  for (const team of teams) {
    for (const id of model.byTeam.get(team) ?? []) {
      const job = model.jobs.get(id)!;
      for (const input of job.inputs) if (input.kind === 'folder' && !job.removed.has(input.sha256)) out.push({ team, sha256: input.sha256, size: input.size });
    }
    for (const sha256 of retained(team)?.folders ?? []) out.push({ team, sha256 });
  }
  return out;
}

/** Teams with at least one final job that still has inputs: where a sweep may find work. */
export function teamsWithFinalJobs(model: DataRefs, only?: string): string[] {
  if (only !== undefined) {
    const job = model.jobs.get(only);
    return job?.final ? [job.team] : [];
  }
  const teams = new Set<string>();
  for (const job of model.jobs.values()) if (job.final) teams.add(job.team);
  return [...teams];
}

/**
 * Per team, every blob a plan of these teams may remove: the inputs not yet removed of the team's
 * jobs, and the files of its folder inputs. A plan asks about these only, so the caller looks up
 * which of them are retained rather than holding every retained blob.
 */
export function inputBlobs(model: DataRefs, teams: Iterable<string>, filesOf: FilesOf): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  for (const team of teams) {
    const blobs = new Set<string>();
    for (const id of model.byTeam.get(team) ?? []) {
      const job = model.jobs.get(id)!;
      for (const input of job.inputs) {
        if (job.removed.has(input.sha256)) continue;
        blobs.add(input.sha256);
        if (input.kind === 'folder') for (const file of filesOf(team, input.sha256)) blobs.add(file.sha256);
      }
    }
    out.set(team, blobs);
  }
  return out;
}

/**
 * The removals due at `nowMs`: inputs of final jobs whose keep has passed and that no job of the
 * same team still needs (an unfinished job, or a final one still keeping it) and no output, log
 * or checkpoint of the team refers to (`retained`), with the files of folder inputs that nothing
 * else needs. `only` restricts the plan to one job (its release).
 */
export function planRemovals(model: DataRefs, nowMs: number, filesOf: FilesOf, retained: RetainedOf, only?: string): Removal[] {
  const removals: Removal[] = [];
  for (const team of teamsWithFinalJobs(model, only)) {
    const jobs = [...(model.byTeam.get(team) ?? [])].map((id) => model.jobs.get(id)!);
    const expand = (input: RefInput): readonly BlobRef[] => (input.kind === 'folder' ? filesOf(team, input.sha256) : []);

    const needed = new Set<string>();
    const kept = retained(team);
    // Not known whether an output refers to them: nothing of the team goes.
    if (!kept) continue;
    for (const sha256 of kept.files) needed.add(sha256);
    for (const manifest of kept.folders) {
      needed.add(manifest);
      for (const file of filesOf(team, manifest)) needed.add(file.sha256);
    }
    for (const job of jobs) {
      for (const input of job.inputs) {
        if (job.removed.has(input.sha256) || (job.final && keptUntil(model, job, input, job.final.atMs) <= nowMs)) continue;
        needed.add(input.sha256);
        for (const file of expand(input)) needed.add(file.sha256);
      }
    }

    const planned = new Set<string>();
    // The last job to end first: a blob several final jobs held is removed under the one whose
    // end made it unneeded, whether a sweep or that job's release plans it.
    const ended = jobs.filter((job) => job.final && (only === undefined || job.jobId === only)).sort((a, b) => b.final!.seq - a.final!.seq);
    for (const job of ended) {
      if (!job.final) continue;
      const byReason = new Map<Removal['reason'], BlobRef[]>();
      for (const input of job.inputs) {
        if (job.removed.has(input.sha256) || needed.has(input.sha256) || keptUntil(model, job, input, job.final.atMs) > nowMs) continue;
        const reason = input.keepMs > 0 || input.dataset ? 'retention_expired' : 'job_released';
        const blobs = byReason.get(reason) ?? [];
        for (const blob of [{ sha256: input.sha256, size: input.size }, ...expand(input)]) {
          if (needed.has(blob.sha256) || planned.has(blob.sha256)) continue;
          planned.add(blob.sha256);
          blobs.push({ sha256: blob.sha256, size: blob.size });
        }
        byReason.set(reason, blobs);
      }
      for (const [reason, blobs] of byReason) {
        // Empty when another job's removal takes the same blobs: its DataRemoved settles them for this job too.
        if (blobs.length === 0) continue;
        const discriminator = `${reason}:${blobs.map((b) => b.sha256).sort().join(',')}`;
        removals.push({ jobId: job.jobId, team, reason, blobs, cause: job.final.cause, discriminator });
      }
    }
  }
  return removals;
}

/**
 * Until when (epoch ms) a final job's input is kept: a named dataset while the name still means
 * these bytes (then from when a later job renamed it, or the job's end if later); otherwise its
 * `keepMs` after the job became final.
 */
function keptUntil(model: DataRefs, job: JobRefs, input: RefInput, finalAtMs: number): number {
  if (input.dataset) {
    const current = model.datasets.get(`${job.team}/${input.dataset}`);
    if (!current || current.sha256 === input.sha256) return Infinity;
    return Math.max(finalAtMs, current.sinceMs);
  }
  return finalAtMs + input.keepMs;
}

/** Jobs per part of the snapshot: one string of a million jobs' model is longer than V8 allows (about 512 MiB). */
export const JOBS_PER_PART = 20_000;

/** Maps and Sets tagged; a job not final yet keeps its `final` key (as null), so a decoded job has its keys in the order a fold gives them. */
function tagged(key: string, value: unknown): unknown {
  if (key === 'final' && value === undefined) return null;
  if (value instanceof Map) return { $map: [...value] };
  if (value instanceof Set) return { $set: [...value] };
  return value;
}

function untagged(_key: string, value: unknown): unknown {
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    const t = value as { $map?: [unknown, unknown][]; $set?: unknown[] };
    if (Array.isArray(t.$map)) return new Map(t.$map);
    if (Array.isArray(t.$set)) return new Set(t.$set);
  }
  return value;
}

/**
 * The model as snapshot parts (decisions 0044, 0045): first its fields but the jobs, with the
 * number of jobs, then the jobs in insertion order, `JOBS_PER_PART` to a part, each as JSON with
 * Maps and Sets tagged. A model decoded and folded on encodes like the model folded from zero.
 */
export function encodeDataRefsParts(model: DataRefs): string[] {
  const parts = [JSON.stringify({ byTeam: model.byTeam, datasets: model.datasets, finals: model.finals, jobs: model.jobs.size }, tagged)];
  let chunk: [string, JobRefs][] = [];
  for (const entry of model.jobs) {
    chunk.push(entry);
    if (chunk.length === JOBS_PER_PART) {
      parts.push(JSON.stringify(chunk, tagged));
      chunk = [];
    }
  }
  if (chunk.length > 0) parts.push(JSON.stringify(chunk, tagged));
  return parts;
}

/** A model from parts {@link encodeDataRefsParts} wrote; throws when they are not such a model. */
export function decodeDataRefsParts(parts: readonly string[]): DataRefs {
  const bad = (why: string) => new Error(`not a storage reference model: ${why}`);
  if (parts.length === 0) throw bad('no parts');
  const head = JSON.parse(parts[0]!, untagged) as Partial<Omit<DataRefs, 'jobs'>> & { jobs?: unknown } | null;
  if (!head || !(head.byTeam instanceof Map) || !(head.datasets instanceof Map) || typeof head.finals !== 'number' || typeof head.jobs !== 'number') {
    throw bad('byTeam, datasets, finals or jobs missing');
  }
  const jobs = new Map<string, JobRefs>();
  for (const part of parts.slice(1)) {
    const entries = JSON.parse(part, untagged) as unknown;
    if (!Array.isArray(entries)) throw bad('a part of jobs is not a list');
    for (const [id, job] of entries as [string, JobRefs & { final: JobRefs['final'] | null }][]) {
      if (job.final === null) job.final = undefined;
      jobs.set(id, job);
    }
  }
  if (jobs.size !== head.jobs) throw bad(`${jobs.size} jobs in its parts, its first part says ${head.jobs}`);
  return { jobs, byTeam: head.byTeam, datasets: head.datasets, finals: head.finals };
}

/** The snapshot parts as one text, a part a line (JSON holds no raw newline): for a small model, and tests. */
export function encodeDataRefs(model: DataRefs): string {
  return encodeDataRefsParts(model).join('\n');
}

/** A model from text {@link encodeDataRefs} wrote; throws when the text is not such a model. */
export function decodeDataRefs(text: string): DataRefs {
  return decodeDataRefsParts(text.split('\n'));
}
