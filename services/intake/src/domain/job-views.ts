/**
 * The job list's rules over job views (the fold is `evolveJob`, job-view.ts): which filters a job
 * matches, the cursor, and one page with its group-by counts from candidates given newest first.
 * Pure: the caller reads the candidates (the job views table selects them by its columns).
 */
import { ValidationError } from '#errors';
import { JOB_STATES, type JobOutcome, type JobState, type JobView, type ListJobsReply } from '#contracts';
import { toSummary, type JobRecord } from './job-view.js';

/** What a list takes: the parsed `ListJobs` request. */
export interface ListQuery {
  states?: readonly JobState[] | undefined;
  limit: number;
  cursor?: string | undefined;
  gpuModel?: string | undefined;
  nodeId?: string | undefined;
  outcome?: JobOutcome | undefined;
  /** ISO instants; compared as epoch ms. */
  submittedFrom?: string | undefined;
  submittedTo?: string | undefined;
  team?: string | undefined;
}

/** Whether a job matches every filter of the query except its team and states (those make the group-by counts). */
export function matches(view: JobView, q: ListQuery): boolean {
  if (q.outcome !== undefined && view.outcome !== q.outcome) return false;
  if (q.gpuModel !== undefined && view.spec.request.gpuModel !== q.gpuModel && !view.attempts.some((a) => a.gpuModel === q.gpuModel)) return false;
  if (q.nodeId !== undefined && !view.attempts.some((a) => a.nodeId === q.nodeId || a.nodes?.some((n) => n.nodeId === q.nodeId))) return false;
  if (q.submittedFrom !== undefined && Date.parse(view.submittedAt) < Date.parse(q.submittedFrom)) return false;
  if (q.submittedTo !== undefined && Date.parse(view.submittedAt) >= Date.parse(q.submittedTo)) return false;
  return true;
}

/**
 * Whether columns of a job (team, state, outcome, submission time, submit order) decide every
 * filter of the query: a GPU model or a node may be any attempt's, so those need the whole view.
 */
export function decidedByColumns(q: ListQuery): boolean {
  return q.gpuModel === undefined && q.nodeId === undefined;
}

const CURSOR = /^p(0|[1-9][0-9]{0,19})$/;

/** Cursors name the submit position of the last job of a page, so a page never shifts when jobs are added. */
export function encodeCursor(position: bigint): string {
  return `p${position}`;
}

/** The submit position a cursor names; a ValidationError on `cursor` for one this service did not hand out. */
export function decodeCursor(cursor: string): bigint {
  const m = CURSOR.exec(cursor);
  if (!m) {
    throw new ValidationError('cursor is not one this service handed out', [
      { path: 'cursor', message: 'is not a `nextCursor` of a previous reply', fix: 'pass `nextCursor` unchanged, or leave it out to start over' },
    ]);
  }
  return BigInt(m[1]!);
}

/** Counts per state in the contracts' order of states, without zeros. */
export function stateCounts(counts: ReadonlyMap<string, number>): { state: JobState; count: number }[] {
  return JOB_STATES.filter((s) => (counts.get(s) ?? 0) > 0).map((state) => ({ state, count: counts.get(state)! }));
}

/** Counts per team, by team id. */
export function teamCounts(counts: ReadonlyMap<string, number>): { team: string; count: number }[] {
  return [...counts]
    .filter(([, count]) => count > 0)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([team, count]) => ({ team, count }));
}

/**
 * One page from candidates newest first (a superset of the matching jobs: every filter is applied
 * here), with the count per state of every job matching the filters (all pages), and, when
 * `byTeam`, the count per team of the jobs matching every filter but the team.
 */
export function pageOf(candidates: Iterable<JobRecord>, query: ListQuery, options: { byTeam?: boolean } = {}): ListJobsReply {
  const before = query.cursor === undefined ? undefined : decodeCursor(query.cursor);
  const states = query.states && query.states.length > 0 ? new Set(query.states) : undefined;
  const counts = new Map<string, number>();
  const teams = new Map<string, number>();
  const page: JobRecord[] = [];
  let more = false;
  for (const record of candidates) {
    if (!matches(record.view, query)) continue;
    teams.set(record.view.team, (teams.get(record.view.team) ?? 0) + 1);
    if (query.team !== undefined && record.view.team !== query.team) continue;
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
    countsByState: stateCounts(counts),
    ...(options.byTeam ? { countsByTeam: teamCounts(teams) } : {}),
  };
}
