import { Queries, type EstimateJobReply, type EstimateReply, type JobSubmitted, type QuoteReply } from '#contracts';
import { ConcurrencyError } from '#errors';
import { WrongExpectedVersionError, type EventStore } from '#event-store';
import { requestQuery } from '#messaging';
import { CLOCK, EVENT_STORE, EVENT_WRITER, LOGGER, NATS_CONNECTION, newId, type Clock, type EventWriter } from '#service-kit';
import type { NatsConnection } from '@nats-io/transport-node';
import { Inject, Injectable } from '@nestjs/common';
import type { Logger } from 'pino';
import type { Principal } from '../auth/api-keys.js';
import { authorize } from '../auth/permissions.js';
import type { RequestTrace } from '../common/trace.js';
import { decideEstimateUse, estimateGiven, estimateIdFromUuid, estimateStreamId, type EstimatedRequest } from '../domain/estimates.js';
import { parseSubmission } from '../domain/submission.js';
import { BudgetsService } from '../budgets/budgets.service.js';

/** Appends of an EstimateUsed retried when another submit wrote to the estimate's stream first. */
const USE_ATTEMPTS = 3;

/**
 * Estimates before submitting, one code path for HTTP and NATS: the spec is validated exactly as
 * a submit would be (same issues, same deadline resolution), then placement says where it would
 * land (`Estimate`) and the ledger prices its whole time limit on the model it would get at the
 * expected start (`Quote`). An answer with an expected start is recorded before it is given
 * (EstimateGiven, `intake-estimate-<estimateId>`) and names its `estimateId`: a submit naming it
 * is held to it ({@link use}). A store that refuses the record does not stop the answer (logged;
 * the answer has no `estimateId` then), as for placement's JobQuoted: the estimate is still true.
 */
@Injectable()
export class EstimateService {
  constructor(
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(EVENT_STORE) private readonly store: EventStore,
    @Inject(EVENT_WRITER) private readonly writer: EventWriter,
    @Inject(LOGGER) private readonly logger: Logger,
    private readonly budgets: BudgetsService,
  ) {}

  /** `body`: a spec or `{ spec }`, as for submit. Needs the right to submit: it answers "what if I submitted this". */
  async estimate(principal: Principal, body: unknown, trace: RequestTrace = {}): Promise<EstimateJobReply> {
    authorize(principal, 'jobs:submit');
    const submission = parseSubmission(body, undefined, this.clock.now(), principal.timeZone);
    const { gpus, timeLimitMs } = submission.spec.request;
    const options = trace.correlationId !== undefined ? { correlationId: trace.correlationId } : {};
    const e = await this.placement(principal.team, submission.spec.request, trace);
    const figures = await this.budgets.estimate(principal.team, submission.spec.request, trace);
    const deadline = { ...(submission.deadlineAt !== undefined ? { deadlineAt: submission.deadlineAt } : {}), ...(figures ? { budget: figures } : {}) };
    if (!e.runnable || e.gpuModel === undefined || e.expectedStart === undefined) return { ...e, ...deadline };
    const q = Queries.Quote;
    const charge = await requestQuery<QuoteReply>(
      this.nc,
      q.subject,
      { gpuModel: e.gpuModel, gpus, durationMs: timeLimitMs, at: e.expectedStart },
      { request: q.schema, response: q.replySchema },
      options,
    );
    const reply: EstimateJobReply = { ...e, ...deadline, charge };
    const estimateId = await this.record(principal, submission.spec.request, reply, trace);
    return estimateId !== undefined ? { ...reply, estimateId } : reply;
  }

  /** Records the answer (EstimateGiven); its id, or undefined when the store refused it (logged, the answer stands). */
  private async record(principal: Principal, request: EstimatedRequest, reply: EstimateJobReply, trace: RequestTrace): Promise<string | undefined> {
    const estimateId = estimateIdFromUuid(newId());
    const given = estimateGiven({ estimateId, team: principal.team, requestedBy: principal.keyId, request, reply, quotedAt: this.clock.now() });
    if (given === undefined) return undefined;
    try {
      await this.writer.append(estimateStreamId(estimateId), [{ type: 'EstimateGiven', data: given }], {
        expectedRevision: 'no_stream',
        ...(trace.correlationId !== undefined ? { correlationId: trace.correlationId } : {}),
      });
      this.logger.info({ estimateId, team: principal.team, keyId: principal.keyId, correlationId: trace.correlationId }, 'estimate given');
      return estimateId;
    } catch (err) {
      this.logger.warn({ err, team: principal.team, correlationId: trace.correlationId }, 'estimate answered without a record: the store refused it');
      return undefined;
    }
  }

  /** Checks, recording nothing, that a new job may be held to the estimate (see {@link use}): a submit refused for its estimate reserves nothing first. */
  async check(team: string, estimateId: string, request: EstimatedRequest, jobId: string): Promise<void> {
    decideEstimateUse({ estimateId, events: await this.store.readStream(estimateStreamId(estimateId)), team, request, jobId, now: this.clock.now() });
  }

  /**
   * Holds a new job to the estimate a submit named: checks it (see `decideEstimateUse`: a
   * ValidationError on `estimateId` otherwise), records which job used it (EstimateUsed, at the
   * revision read; a retry of the same job finds it recorded and records nothing), and returns
   * the quote for the job's JobSubmitted. Called once the job is about to be recorded, so a
   * refused submit does not spend the estimate.
   */
  async use(team: string, estimateId: string, request: EstimatedRequest, jobId: string, trace: RequestTrace = {}): Promise<NonNullable<JobSubmitted['quote']>> {
    const streamId = estimateStreamId(estimateId);
    for (let attempt = 1; ; attempt++) {
      const events = await this.store.readStream(streamId);
      const decision = decideEstimateUse({ estimateId, events, team, request, jobId, now: this.clock.now() });
      if (decision.used === undefined) return decision.quote;
      try {
        await this.writer.append(streamId, [{ type: 'EstimateUsed', data: decision.used }], {
          expectedRevision: events.at(-1)!.revision,
          ...(trace.correlationId !== undefined ? { correlationId: trace.correlationId } : {}),
        });
        this.logger.info({ estimateId, jobId, team, correlationId: trace.correlationId }, 'estimate used');
        return decision.quote;
      } catch (err) {
        // Another submit wrote first: read again (the same job's retry passes, another job is refused).
        if (!(err instanceof WrongExpectedVersionError)) throw err;
        if (attempt >= USE_ATTEMPTS) throw new ConcurrencyError(`estimate ${estimateId} changed under ${USE_ATTEMPTS} submits in a row; submit again`, { cause: err });
      }
    }
  }

  /** Where a request of `team` would land in placement's current plan (`gpunet.qry.placement.Estimate`). */
  placement(team: string, request: { gpus: number; gpuModel?: string | undefined; timeLimitMs: number }, trace: RequestTrace = {}): Promise<EstimateReply> {
    const q = Queries.Estimate;
    const { gpus, gpuModel, timeLimitMs } = request;
    return requestQuery<EstimateReply>(
      this.nc,
      q.subject,
      { team, request: { gpus, timeLimitMs, ...(gpuModel !== undefined ? { gpuModel } : {}) } },
      { request: q.schema, response: q.replySchema },
      trace.correlationId !== undefined ? { correlationId: trace.correlationId } : {},
    );
  }
}
