/**
 * How the audit projection's records (audit-projection.ts, the one fold) are kept in the store's
 * database: one row per job, the record as a JSON document, and the columns the list query
 * filters and orders by. Pure: records in, rows out, and back.
 */
import type { AuditJobsFilter } from '#contracts';
import type { ProjectionCondition, ProjectionQuery, ProjectionRow, ProjectionTableSpec } from '#event-store';
import { isSubmitted, jobOutcome, type JobAuditState } from './audit-projection.js';

/**
 * Bump when the fold or the document changes: a table written by another version is emptied
 * and refilled from the whole store when the ledger starts.
 */
export const AUDIT_FOLD_VERSION = 1;

/**
 * `submitted_ms` (the submission as epoch ms) is what `from`/`to` compare; the list is ordered by
 * it, then by the submission stamp and job id (the in-memory list's order for the stamps intake
 * writes). Null columns for a job not (yet) submitted: such a record is never listed.
 */
export const AUDIT_TABLE: ProjectionTableSpec = {
  name: 'audit_jobs',
  version: AUDIT_FOLD_VERSION,
  columns: [
    { name: 'team', type: 'text' },
    { name: 'submitted_ms', type: 'integer' },
    { name: 'submitted_at', type: 'text' },
    { name: 'outcome', type: 'text' },
  ],
  indexes: [
    ['team', 'submitted_ms', 'submitted_at', 'key'],
    ['submitted_ms', 'submitted_at', 'key'],
  ],
};

const ORDER = ['submitted_ms', 'submitted_at', 'key'] as const;

type Doc = Omit<JobAuditState, 'attempts' | 'lastPosition' | 'timeline' | 'keepTimeline'> & {
  attempts: (Omit<JobAuditState['attempts'][number], 'parts'> & { parts: [string, unknown][] })[];
  lastPosition: string;
};

/** The row of one record (kept without its timeline: one job's audit reads its events from the store). */
export function auditRow(s: JobAuditState): ProjectionRow {
  const { timeline: _timeline, keepTimeline: _keep, attempts, lastPosition, ...rest } = s;
  const doc: Doc = { ...rest, attempts: attempts.map((a) => ({ ...a, parts: [...a.parts] })), lastPosition: lastPosition.toString() };
  const listed = isSubmitted(s);
  const submittedMs = listed ? Date.parse(s.submittedAt) : NaN;
  return {
    key: s.jobId,
    doc: JSON.stringify(doc),
    values: {
      team: listed ? s.team : null,
      submitted_ms: listed && Number.isFinite(submittedMs) ? submittedMs : null,
      submitted_at: listed ? s.submittedAt : null,
      outcome: listed ? jobOutcome(s) : null,
    },
  };
}

/** The record a row's document holds (no timeline). */
export function auditRecordOf(doc: string): JobAuditState {
  const d = JSON.parse(doc) as Doc;
  return {
    ...d,
    attempts: d.attempts.map((a) => ({ ...a, parts: new Map(a.parts as [string, JobAuditState['attempts'][number]['parts'] extends Map<string, infer P> ? P : never][]) })),
    lastPosition: BigInt(d.lastPosition),
    timeline: [],
    keepTimeline: false,
  };
}

/**
 * The table query for a list filter. `exact` when the table's columns decide every field of the
 * filter, so the page and the total come from the database; otherwise (a node or GPU model) it
 * selects the candidates in order and the caller applies `matches` to them.
 */
export function auditQuery(filter: AuditJobsFilter): { query: ProjectionQuery; exact: boolean } {
  const where: ProjectionCondition[] = [{ column: 'submitted_ms', op: 'not null' }];
  if (filter.team !== undefined) where.push({ column: 'team', op: '=', value: filter.team });
  if (filter.from !== undefined) where.push({ column: 'submitted_ms', op: '>=', value: Date.parse(filter.from) });
  if (filter.to !== undefined) where.push({ column: 'submitted_ms', op: '<', value: Date.parse(filter.to) });
  if (filter.outcome !== undefined) where.push({ column: 'outcome', op: '=', value: filter.outcome });
  const exact = filter.nodeId === undefined && filter.gpuModel === undefined;
  return { query: { where, orderBy: ORDER, ...(exact ? { limit: filter.limit, offset: filter.offset } : {}) }, exact };
}
