/**
 * How job views (job-view.ts, the one fold) are kept in the store's database: one row per job,
 * its record as a JSON document, and the columns the job list filters, orders and counts by.
 * Pure: records in, rows out, and back; a list query in, table queries out.
 */
import type { JobView } from '#contracts';
import type { ProjectionCondition, ProjectionRow, ProjectionTableSpec } from '#event-store';
import type { JobRecord } from '../domain/job-view.js';
import { decodeCursor, type ListQuery } from '../domain/job-views.js';

/**
 * Bump when the fold or the document changes: a table written by another version is emptied
 * and refilled from the whole store when intake starts.
 */
export const JOB_VIEWS_FOLD_VERSION = 1;

/**
 * `newest` is the job's submit position negated (tables order ascending): the list's order,
 * newest first, and what a cursor compares. `submitted_ms` is the submission as epoch ms.
 */
export const JOB_VIEWS_TABLE: ProjectionTableSpec = {
  name: 'job_views',
  version: JOB_VIEWS_FOLD_VERSION,
  columns: [
    { name: 'team', type: 'text' },
    { name: 'state', type: 'text' },
    { name: 'outcome', type: 'text' },
    { name: 'submitted_ms', type: 'integer' },
    { name: 'newest', type: 'integer' },
  ],
  indexes: [['team', 'newest'], ['newest'], ['team', 'state'], ['state']],
};

interface Doc {
  view: JobView;
  submittedPosition: string;
  lastPosition: string;
}

/** The row of one job's record. */
export function jobViewRow(r: JobRecord): ProjectionRow {
  const doc: Doc = { view: r.view, submittedPosition: r.submittedPosition.toString(), lastPosition: r.lastPosition.toString() };
  const submittedMs = Date.parse(r.view.submittedAt);
  return {
    key: r.view.jobId,
    doc: JSON.stringify(doc),
    values: {
      team: r.view.team,
      state: r.view.state,
      outcome: r.view.outcome ?? null,
      submitted_ms: Number.isFinite(submittedMs) ? submittedMs : null,
      newest: -Number(r.submittedPosition),
    },
  };
}

/** The record a row's document holds. */
export function jobRecordOf(doc: string): JobRecord {
  const d = JSON.parse(doc) as Doc;
  return { view: d.view, submittedPosition: BigInt(d.submittedPosition), lastPosition: BigInt(d.lastPosition) };
}

/**
 * The conditions of a list's filters on the columns: `team` (when given), outcome and submission
 * time always; with `paged`, its states and its cursor too (the group-by counts leave those out).
 */
export function listConditions(query: ListQuery, options: { team?: string | undefined; paged: boolean }): ProjectionCondition[] {
  const where: ProjectionCondition[] = [];
  if (options.team !== undefined) where.push({ column: 'team', op: '=', value: options.team });
  if (query.outcome !== undefined) where.push({ column: 'outcome', op: '=', value: query.outcome });
  if (query.submittedFrom !== undefined) where.push({ column: 'submitted_ms', op: '>=', value: Date.parse(query.submittedFrom) });
  if (query.submittedTo !== undefined) where.push({ column: 'submitted_ms', op: '<', value: Date.parse(query.submittedTo) });
  if (options.paged) {
    if (query.states && query.states.length > 0) where.push({ column: 'state', op: 'in', values: query.states });
    // Older than the cursor's job: a greater `newest`.
    if (query.cursor !== undefined) where.push({ column: 'newest', op: '>=', value: -Number(decodeCursor(query.cursor)) + 1 });
  }
  return where;
}
