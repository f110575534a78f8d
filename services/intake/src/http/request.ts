/** Reading HTTP request parts into what the use cases take, with field-naming errors. */
import { HEADERS, JobId, ListJobs, TraceId, formatIssues, type JobState } from '#contracts';
import { ValidationError } from '#errors';
import { newId } from '#service-kit';

type QueryValue = string | string[] | undefined;

/** The correlation id of a request: `Gpunet-Correlation-Id` or `X-Request-Id` when valid, else a new id. */
export function correlationIdOf(headers: Record<string, string | string[] | undefined>): string {
  for (const name of [HEADERS.correlationId.toLowerCase(), 'x-request-id']) {
    const value = headers[name];
    if (typeof value === 'string' && TraceId.safeParse(value).success) return value;
  }
  return newId();
}

/** A job id from the path, or a ValidationError naming `jobId`. */
export function jobIdParam(value: unknown): string {
  const parsed = JobId.safeParse(value);
  if (!parsed.success) throw new ValidationError(`\`${String(value)}\` is not a job id`, formatIssues(parsed.error).map((i) => ({ ...i, path: 'jobId' })));
  return parsed.data;
}

/** The one value of a query parameter (the last when repeated). */
export function single(value: QueryValue): string | undefined {
  return Array.isArray(value) ? value.at(-1) : value;
}

/** Whether a flag parameter is on: `?follow`, `?follow=1`, `?follow=true`. */
export function flag(value: QueryValue): boolean {
  const v = single(value);
  return v !== undefined && !['0', 'false', 'no'].includes(v.toLowerCase());
}

/**
 * `GET /v1/jobs?state=running&state=placed&limit=20&cursor=…&gpuModel=&nodeId=&outcome=&submittedFrom=&submittedTo=`
 * as a `ListJobs` request; `state` may also be comma-separated. Errors name the query parameters.
 */
export function listQuery(query: Record<string, QueryValue>): ListJobs {
  const states = [query.state ?? []].flat().flatMap((s) => s.split(',')).map((s) => s.trim()).filter((s) => s !== '');
  const limit = single(query.limit);
  const cursor = single(query.cursor);
  const allTeams = single(query.allTeams);
  const filters = Object.fromEntries(
    (['gpuModel', 'nodeId', 'outcome', 'submittedFrom', 'submittedTo', 'team'] as const).flatMap((name) => {
      const value = single(query[name]);
      return value === undefined || value === '' ? [] : [[name, value]];
    }),
  );
  const raw = {
    ...filters,
    ...(states.length > 0 ? { states: states as JobState[] } : {}),
    ...(limit !== undefined ? { limit: /^\d{1,6}$/.test(limit) ? Number(limit) : limit } : {}),
    ...(cursor !== undefined ? { cursor } : {}),
    ...(allTeams !== undefined ? { allTeams: allTeams === 'true' ? true : allTeams === 'false' ? false : allTeams } : {}),
  };
  const parsed = ListJobs.safeParse(raw);
  if (parsed.success) return parsed.data;
  const issues = formatIssues(parsed.error).map((i) => ({ ...i, path: i.path.replace(/^states(\[\d+\])?/, 'state') }));
  throw new ValidationError(`invalid query: ${issues.map((i) => i.path).join(', ')}`, issues);
}
