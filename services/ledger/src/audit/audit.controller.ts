import { HEADERS, Queries, type AuditJob, type AuditJobReply, type AuditJobs, type AuditJobsReply, type AuditQueried, type AuditRequester } from '#contracts';
import { GpunetError } from '#errors';
import type { EventStore, ReadAllFilter, RecordedEvent } from '#event-store';
import { CLOCK, EVENT_STORE, EVENT_WRITER, NatsQueryContext, newId, type Clock, type EventWriter } from '#service-kit';
import { Controller, Inject } from '@nestjs/common';
import { Ctx, MessagePattern, Payload } from '@nestjs/microservices';
import { LEDGER_STREAM_PREFIX, nodesOfAttempts, placementNodeStreamId } from '../domain/index.js';
import { emptyJobAudit, evolveJobAudit, isSubmitted, jobIdsOf, jobReport } from './audit-projection.js';
import { AuditProjectionService } from './audit-projection.service.js';

/** `ledger-audit`: every AuditQueried, one chain, so the record of who asked what is itself tamper-evident. */
export const AUDIT_STREAM = `${LEDGER_STREAM_PREFIX}audit`;

/** The requester's key may not read what it asked for (another team). Answered with code `forbidden`. */
export class AuditScopeError extends GpunetError {
  readonly code = 'forbidden';
  readonly retryable = false;
}

/** Events read per page when folding one job. */
const PAGE = 1_000;

/**
 * Answers the audit queries (`gpunet.qry.ledger.AuditJobs`, `AuditJob`). Each query is first
 * recorded as AuditQueried in `ledger-audit` (who asked, what, when); a query that cannot be
 * recorded is not answered. The requester's scope is applied here too: a key that may not read
 * every team sees only its own, whatever it asks.
 */
@Controller()
export class AuditController {
  constructor(
    private readonly projection: AuditProjectionService,
    @Inject(EVENT_STORE) private readonly store: EventStore,
    @Inject(EVENT_WRITER) private readonly writer: EventWriter,
    @Inject(CLOCK) private readonly clock: Clock,
  ) {}

  @MessagePattern(Queries.AuditJobs.subject)
  async auditJobs(@Payload() query: AuditJobs, @Ctx() ctx: NatsQueryContext): Promise<AuditJobsReply> {
    const { requester } = query;
    if (!requester.allTeams && query.filter.team !== undefined && query.filter.team !== requester.team) {
      // Refused, and recorded as refused: an attempt to read another team is itself an audit fact.
      const reason = `team ${query.filter.team} is not yours: API key \`${requester.keyId}\` (role ${requester.role}) audits team ${requester.team} only; every team needs a key with role compliance`;
      await this.record('AuditJobs', query.filter, requester, ctx, reason);
      throw new AuditScopeError(reason);
    }
    const filter = { ...query.filter, ...(requester.allTeams ? {} : { team: requester.team }) };
    const recordedAs = await this.record('AuditJobs', filter, requester, ctx);
    const { jobs, total, asOf } = await this.projection.list(filter);
    return { jobs, total, asOfPosition: asOf.toString(), recordedAs };
  }

  @MessagePattern(Queries.AuditJob.subject)
  async auditJob(@Payload() query: AuditJob, @Ctx() ctx: NatsQueryContext): Promise<AuditJobReply> {
    const recordedAs = await this.record('AuditJob', { jobId: query.jobId }, query.requester, ctx);
    // One job: read straight from the store through its job index, as of the head seen first,
    // with the NodeLost events that list its attempts. Those name no single job: placement
    // records each in the lost node's stream, so the streams of the nodes the job was placed on
    // hold every one (as for the job's end; a read of every NodeLost in the store grew with history).
    const head = await this.store.headPosition();
    const own = await this.readUpTo(head, { jobId: query.jobId });
    const nodeStreams = await Promise.all(nodesOfAttempts(own).map((nodeId) => this.store.readStream(placementNodeStreamId(nodeId))));
    const lost = nodeStreams.flat().filter((e) => e.type === 'NodeLost' && e.position <= head && jobIdsOf(e).includes(query.jobId));
    const state = emptyJobAudit(query.jobId);
    for (const e of [...own, ...lost].sort((a, b) => (a.position < b.position ? -1 : 1))) evolveJobAudit(state, e);
    const visible = isSubmitted(state) && (query.requester.allTeams || state.team === query.requester.team);
    return { job: visible ? jobReport(state) : null, asOfPosition: head.toString(), recordedAs };
  }

  private async readUpTo(head: bigint, filter: ReadAllFilter): Promise<RecordedEvent[]> {
    const all: RecordedEvent[] = [];
    let from = 0n;
    for (;;) {
      const page = await this.store.readAll({ fromPosition: from, toPosition: head, maxCount: PAGE, filter });
      all.push(...page);
      if (page.length < PAGE) return all;
      from = page[page.length - 1]!.position;
    }
  }

  private async record(name: AuditQueried['query'], parameters: Record<string, unknown>, requester: AuditRequester, ctx: NatsQueryContext, refused?: string): Promise<string> {
    const correlationId = correlationOf(ctx);
    const data: AuditQueried = {
      query: name,
      parameters: Object.fromEntries(Object.entries(parameters).filter(([, v]) => v !== undefined)),
      requestedBy: requester,
      ...(correlationId ? { correlationId } : {}),
      askedAt: this.clock.now().toISOString(),
      ...(refused ? { refused } : {}),
    };
    const eventId = newId();
    await this.writer.append(AUDIT_STREAM, [{ type: 'AuditQueried', data, eventId }], { team: requester.team, ...(correlationId ? { correlationId } : {}) });
    return eventId;
  }
}

function correlationOf(ctx: NatsQueryContext): string | undefined {
  return ctx.getHeaders()?.get(HEADERS.correlationId) || undefined;
}
