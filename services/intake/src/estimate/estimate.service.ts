import { Queries, type EstimateJobReply, type EstimateReply, type QuoteReply } from '#contracts';
import { requestQuery } from '#messaging';
import { CLOCK, NATS_CONNECTION, type Clock } from '#service-kit';
import type { NatsConnection } from '@nats-io/transport-node';
import { Inject, Injectable } from '@nestjs/common';
import type { Principal } from '../auth/api-keys.js';
import { authorize } from '../auth/permissions.js';
import { parseSubmission } from '../domain/submission.js';
import type { RequestTrace } from '../jobs/jobs.service.js';
import { BudgetsService } from '../budgets/budgets.service.js';

/**
 * Estimates before submitting, one code path for HTTP and NATS: the spec is validated exactly as
 * a submit would be (same issues, same deadline resolution), then placement says where it would
 * land (`Estimate`) and the ledger prices its whole time limit on the model it would get at the
 * expected start (`Quote`). Nothing is recorded.
 */
@Injectable()
export class EstimateService {
  constructor(
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
    @Inject(CLOCK) private readonly clock: Clock,
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
    return { ...e, ...deadline, charge };
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
