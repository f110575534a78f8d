import { AuditJobsFilter, Queries, formatIssues, type AuditJobReply, type AuditJobReport, type AuditJobsReply, type AuditRequester, type ChainStatus } from '#contracts';
import { NotFoundError, ValidationError } from '#errors';
import { RemoteQueryError, requestQuery } from '#messaging';
import { EVENT_STORE, NATS_CONNECTION } from '#service-kit';
import type { EventStore } from '#event-store';
import { z } from 'zod';
import { AuditQueried } from '#contracts';
import type { NatsConnection } from '@nats-io/transport-node';
import { Controller, Get, Inject, Param, Req } from '@nestjs/common';
import type { Request } from 'express';
import type { Principal } from '../auth/api-keys.js';
import { Authenticator } from '../auth/authenticator.js';
import { allows, authorize, callerPrincipal } from '../auth/permissions.js';
import { ForbiddenError } from '../common/errors.js';
import { correlationIdOf, jobIdParam, single } from '../http/request.js';

/** Query parameters of `GET /v1/audit/jobs`, by filter field. */
const FILTER_PARAMS = { team: 'team', from: 'from', to: 'to', node: 'nodeId', gpuModel: 'gpuModel', outcome: 'outcome', limit: 'limit', offset: 'offset' } as const;

/** Who asks, as the ledger records it: the key's id, team and role, and whether it reads every team. */
export function requesterOf(principal: Principal): AuditRequester {
  return callerPrincipal(principal, allows(principal, 'audit:read-all-teams'));
}

/** How long `GET /v1/audit/chain` waits for the ledger: a full pass walks the whole store. */
const CHAIN_TIMEOUT_MS = 60_000;

/** Most records in one answer of `GET /v1/audit/queries`. */
const QUERIES_MAX = 500;

export const AuditQueriesReply = z
  .object({
    queries: z
      .array(AuditQueried.extend({ eventId: z.string().describe('Id of the AuditQueried event (what an audit answer names as `recordedAs`).'), position: z.string().describe('Its store position (decimal).') }))
      .describe('Newest first.'),
  })
  .describe('The record of audit queries: who asked what, when, and whether it was refused.');
export type AuditQueriesReply = z.output<typeof AuditQueriesReply>;

/**
 * The audit over HTTP, asked of the ledger's audit projection over NATS (`AuditJobs`, `AuditJob`),
 * which records every query (who, what, when) before answering it:
 *
 * - `GET /v1/audit/jobs?team=&from=&to=&node=&gpuModel=&outcome=&limit=&offset=`: jobs for an audit, a page at a time;
 * - `GET /v1/audit/jobs/{jobId}`: one job's full audit across every service;
 * - `GET /v1/audit/queries?limit=`: the record of those queries (the AuditQueried events, read from the store), compliance only;
 * - `GET /v1/audit/chain?full=`: the chain's verification status (`VerifyChain`), compliance and billing.
 *
 * A team key sees its own team only (naming another team is 403, recorded as refused); a `compliance` key sees every team.
 */
@Controller('v1/audit')
export class AuditHttpController {
  constructor(
    private readonly auth: Authenticator,
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
    @Inject(EVENT_STORE) private readonly store: EventStore,
  ) {}

  /** Who asked which audit query, newest first: every team's, so only for a key that may read every team's audit. */
  @Get('queries')
  async queries(@Req() req: Request): Promise<AuditQueriesReply> {
    const principal = this.auth.fromHttp(req.headers.authorization);
    authorize(principal, 'audit:read-all-teams');
    const raw = single((req.query as Record<string, string | string[] | undefined>).limit);
    const limit = raw === undefined ? 100 : /^\d{1,4}$/.test(raw) ? Number(raw) : NaN;
    if (!(limit >= 1 && limit <= QUERIES_MAX)) {
      throw new ValidationError('invalid query: limit', [{ path: 'limit', message: `must be a whole number from 1 to ${QUERIES_MAX}`, fix: 'write e.g. `limit=100`' }]);
    }
    const found: AuditQueriesReply['queries'] = [];
    let from = 0n;
    for (;;) {
      const batch = await this.store.readAll({ fromPosition: from, maxCount: 1_000, filter: { types: ['AuditQueried'] } });
      if (batch.length === 0) break;
      for (const e of batch) found.push({ ...(e.data as AuditQueried), eventId: e.eventId, position: e.position.toString() });
      from = batch.at(-1)!.position;
    }
    return { queries: found.reverse().slice(0, limit) };
  }

  /**
   * Whether the store's history holds, verified by the ledger now: the tail since its last pass, or
   * with `full=true` the whole store (slow on a large one, hence the longer wait).
   */
  @Get('chain')
  async chain(@Req() req: Request): Promise<ChainStatus> {
    const principal = this.auth.fromHttp(req.headers.authorization);
    authorize(principal, 'audit:chain');
    const raw = single((req.query as Record<string, string | string[] | undefined>).full);
    if (raw !== undefined && raw !== 'true' && raw !== 'false') {
      throw new ValidationError('invalid query: full', [{ path: 'full', message: 'must be `true` or `false`', fix: 'write `full=true` to walk the whole store, or leave it out for the tail since the last pass' }]);
    }
    const query = Queries.VerifyChain;
    return requestQuery<ChainStatus>(this.nc, query.subject, { full: raw === 'true' }, { request: query.schema, response: query.replySchema }, { correlationId: correlationIdOf(req.headers), timeoutMs: CHAIN_TIMEOUT_MS });
  }

  @Get('jobs')
  async jobs(@Req() req: Request): Promise<AuditJobsReply> {
    const principal = this.auth.fromHttp(req.headers.authorization);
    authorize(principal, 'audit:read');
    const requester = requesterOf(principal);
    const q = req.query as Record<string, string | string[] | undefined>;
    const raw: Record<string, unknown> = {};
    for (const [param, field] of Object.entries(FILTER_PARAMS)) {
      const value = single(q[param]);
      if (value !== undefined) raw[field] = (field === 'limit' || field === 'offset') && /^\d{1,9}$/.test(value) ? Number(value) : value;
    }
    const parsed = AuditJobsFilter.safeParse(raw);
    if (!parsed.success) {
      const issues = formatIssues(parsed.error).map((i) => ({ ...i, path: i.path === 'nodeId' ? 'node' : i.path }));
      throw new ValidationError(`invalid query: ${issues.map((i) => i.path).join(', ')}`, issues);
    }
    // The ledger enforces the scope, so that a refused query is recorded like any other.
    const query = Queries.AuditJobs;
    return requestQuery<AuditJobsReply>(this.nc, query.subject, { requester, filter: parsed.data }, { request: query.schema, response: query.replySchema }, { correlationId: correlationIdOf(req.headers) }).catch(
      (err: unknown) => {
        throw err instanceof RemoteQueryError && err.code === 'forbidden' ? new ForbiddenError(err.message, { cause: err }) : err;
      },
    );
  }

  @Get('jobs/:jobId')
  async job(@Param('jobId') jobIdRaw: string, @Req() req: Request): Promise<AuditJobReport & { asOfPosition: string; recordedAs: string }> {
    const principal = this.auth.fromHttp(req.headers.authorization);
    authorize(principal, 'audit:read');
    const jobId = jobIdParam(jobIdRaw);
    const query = Queries.AuditJob;
    const reply = await requestQuery<AuditJobReply>(this.nc, query.subject, { requester: requesterOf(principal), jobId }, { request: query.schema, response: query.replySchema }, { correlationId: correlationIdOf(req.headers) });
    if (!reply.job) {
      const scope = allows(principal, 'audit:read-all-teams') ? 'in the event store' : `of team ${principal.team}`;
      throw new NotFoundError(`no job ${jobId} ${scope} (as of store position ${reply.asOfPosition}); check the id with \`gpunet audit jobs\``);
    }
    return { ...reply.job, asOfPosition: reply.asOfPosition, recordedAs: reply.recordedAs };
  }
}
