/**
 * Every job's view in memory, kept by applying the store's events in position order, and the
 * team-scoped list over them. Pure: the caller feeds events (fold at start, then follow).
 */
import { ValidationError } from '#errors';
import type { JobOutcome, JobState, JobView, ListJobsReply } from '#contracts';
import { evolveJob, jobIdOf, toSummary, type JobEvent, type JobRecord } from './job-view.js';

/** What `JobViews.list` takes: the parsed `ListJobs` request. */
export interface ListQuery {
  states?: readonly JobState[] | undefined;
  limit: number;
  cursor?: string | undefined;
  gpuModel?: string | undefined;
  nodeId?: string | undefined;
  outcome?: JobOutcome | undefined;
  /** ISO instants; `submittedAt` strings of one format compare in time order. */
  submittedFrom?: string | undefined;
  submittedTo?: string | undefined;
  team?: string | undefined;
}

/** Whether a job matches every filter of the query except its states (those make the group-by counts). */
function matches(view: JobView, q: ListQuery): boolean {
  if (q.outcome !== undefined && view.outcome !== q.outcome) return false;
  if (q.gpuModel !== undefined && view.spec.request.gpuModel !== q.gpuModel && !view.attempts.some((a) => a.gpuModel === q.gpuModel)) return false;
  if (q.nodeId !== undefined && !view.attempts.some((a) => a.nodeId === q.nodeId || a.nodes?.some((n) => n.nodeId === q.nodeId))) return false;
  if (q.submittedFrom !== undefined && Date.parse(view.submittedAt) < Date.parse(q.submittedFrom)) return false;
  if (q.submittedTo !== undefined && Date.parse(view.submittedAt) >= Date.parse(q.submittedTo)) return false;
  return true;
}

/** Whether the query filters by nothing but states. */
function onlyStates(q: ListQuery): boolean {
  return q.outcome === undefined && q.gpuModel === undefined && q.nodeId === undefined && q.submittedFrom === undefined && q.submittedTo === undefined;
}

const CURSOR = /^p(0|[1-9][0-9]{0,19})$/;

/** Cursors name the submit position of the last job of a page, so a page never shifts when jobs are added. */
function encodeCursor(position: bigint): string {
  return `p${position}`;
}

function decodeCursor(cursor: string): bigint {
  const m = CURSOR.exec(cursor);
  if (!m) {
    throw new ValidationError('cursor is not one this service handed out', [
      { path: 'cursor', message: 'is not a `nextCursor` of a previous reply', fix: 'pass `nextCursor` unchanged, or leave it out to start over' },
    ]);
  }
  return BigInt(m[1]!);
}

export class JobViews {
  private readonly records = new Map<string, JobRecord>();
  /** Job ids per team in submit order (oldest first). */
  private readonly byTeam = new Map<string, string[]>();
  /** Every job id in submit order (oldest first), for the every-team list (role compliance). */
  private readonly all: string[] = [];
  private head = 0n;
  private readonly states = new Map<JobState, number>();
  /** Jobs per state of each team, kept as events apply: a list with no filter but states counts without a walk. */
  private readonly teamStates = new Map<string, Map<JobState, number>>();

  /** Position of the last event applied (0n before any). */
  get position(): bigint {
    return this.head;
  }

  /** Jobs per state, kept as events apply (for `/metrics`: no walk over every job). */
  countsByState(): ReadonlyMap<JobState, number> {
    return this.states;
  }

  /** Number of jobs known. */
  get size(): number {
    return this.records.size;
  }

  /**
   * Applies one event. Events must come in position order; one at or before `position` is a
   * replay and ignored. Returns the job's record when the event changed it.
   */
  apply(event: JobEvent): JobRecord | undefined {
    if (event.position <= this.head) return undefined;
    this.head = event.position;
    const jobId = jobIdOf(event);
    if (jobId === undefined) return undefined;
    const before = this.records.get(jobId);
    const after = evolveJob(before, event);
    if (after === undefined || after === before) return undefined;
    this.records.set(jobId, after);
    if (before) this.states.set(before.view.state, (this.states.get(before.view.state) ?? 1) - 1);
    this.states.set(after.view.state, (this.states.get(after.view.state) ?? 0) + 1);
    const teamStates = this.teamStates.get(after.view.team) ?? new Map<JobState, number>();
    this.teamStates.set(after.view.team, teamStates);
    if (before) teamStates.set(before.view.state, (teamStates.get(before.view.state) ?? 1) - 1);
    teamStates.set(after.view.state, (teamStates.get(after.view.state) ?? 0) + 1);
    if (before === undefined) {
      const list = this.byTeam.get(after.view.team) ?? [];
      list.push(jobId);
      this.byTeam.set(after.view.team, list);
      this.all.push(jobId);
    }
    return after;
  }

  /** Marks everything up to `position` as seen (a read that found no more events). */
  advanceTo(position: bigint): void {
    if (position > this.head) this.head = position;
  }

  get(jobId: string): JobView | undefined {
    return this.records.get(jobId)?.view;
  }

  /**
   * One page of a team's jobs, newest first, filtered; with the count per state of every job that
   * matches the other filters (all pages), so a table can show its group-by without a second walk.
   */
  list(team: string, query: ListQuery): ListJobsReply {
    if (onlyStates(query)) return this.listByPosition(team, query);
    return this.page(this.byTeam.get(team) ?? [], query);
  }

  /**
   * One page of every team's jobs (or of `query.team`'s), newest first, filtered; with the counts
   * per state and, over the jobs matching every filter but the team, per team (the group-by team).
   * The caller checks that the key may read every team.
   */
  listAllTeams(query: ListQuery): ListJobsReply {
    const teams = new Map<string, number>();
    const reply = this.page(this.all, query, (view) => {
      teams.set(view.team, (teams.get(view.team) ?? 0) + 1);
      return query.team === undefined || view.team === query.team;
    });
    return { ...reply, countsByTeam: [...teams].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([team, count]) => ({ team, count })) };
  }

  private page(ids: readonly string[], query: ListQuery, inTeam: (view: JobView) => boolean = () => true): ListJobsReply {
    const before = query.cursor === undefined ? undefined : decodeCursor(query.cursor);
    const states = query.states && query.states.length > 0 ? new Set(query.states) : undefined;
    const counts = new Map<JobState, number>();
    const page: JobRecord[] = [];
    let more = false;
    for (let i = ids.length - 1; i >= 0; i--) {
      const record = this.records.get(ids[i]!)!;
      if (!matches(record.view, query)) continue;
      if (!inTeam(record.view)) continue;
      counts.set(record.view.state, (counts.get(record.view.state) ?? 0) + 1);
      if (before !== undefined && record.submittedPosition >= before) continue;
      if (states && !states.has(record.view.state)) continue;
      if (page.length === query.limit) {
        more = true;
        continue;
      }
      page.push(record);
    }
    return {
      jobs: page.map((r) => toSummary(r.view)),
      nextCursor: more ? encodeCursor(page.at(-1)!.submittedPosition) : null,
      countsByState: [...counts].map(([state, count]) => ({ state, count })),
    };
  }

  /**
   * `list` when no filter but states is set (the jobs page as it opens): the counts are the team's,
   * kept as events apply, and the page starts at its cursor by binary search over the team's jobs
   * in submit order, so a page costs its own rows, not a walk over every job of the team.
   */
  private listByPosition(team: string, query: ListQuery): ListJobsReply {
    const ids = this.byTeam.get(team) ?? [];
    const before = query.cursor === undefined ? undefined : decodeCursor(query.cursor);
    const states = query.states && query.states.length > 0 ? new Set(query.states) : undefined;
    let lo = 0;
    let hi = ids.length; // first index whose job was submitted at or after `before`
    if (before !== undefined) {
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if (this.records.get(ids[mid]!)!.submittedPosition < before) lo = mid + 1;
        else hi = mid;
      }
    }
    const page: JobRecord[] = [];
    let more = false;
    for (let i = hi - 1; i >= 0; i--) {
      const record = this.records.get(ids[i]!)!;
      if (states && !states.has(record.view.state)) continue;
      if (page.length === query.limit) {
        more = true;
        break;
      }
      page.push(record);
    }
    return {
      jobs: page.map((r) => toSummary(r.view)),
      nextCursor: more ? encodeCursor(page.at(-1)!.submittedPosition) : null,
      countsByState: [...(this.teamStates.get(team) ?? [])].filter(([, count]) => count > 0).map(([state, count]) => ({ state, count })),
    };
  }
}
