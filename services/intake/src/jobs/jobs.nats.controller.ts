import { Commands, HEADERS, Queries, TraceId, type CancelJob, type CancelJobReply, type GetJob, type JobView, type ListJobs, type ListJobsReply, type SubmitJob, type SubmitJobReply } from '#contracts';
import { NatsQueryContext } from '#service-kit';
import type { MsgHdrs } from '@nats-io/transport-node';
import { Controller } from '@nestjs/common';
import { Ctx, MessagePattern, Payload } from '@nestjs/microservices';
import { Authenticator } from '../auth/authenticator.js';
import { deadlinePolicyHeader } from '../estimate/deadline-policy.js';
import type { RequestTrace } from '../common/trace.js';
import { JobsService } from './jobs.service.js';

/**
 * The NATS command API: `gpunet.cmd.SubmitJob`, `gpunet.cmd.CancelJob`, and the queries
 * `gpunet.qry.intake.GetJob` / `ListJobs`. Same schemas (the transport validates the request
 * against the contract), same `Authorization: Bearer <key>` (a message header), same use cases
 * as HTTP. Replies are `{ ok: true, data }` or `{ ok: false, error: { code, message, issues? } }`.
 */
@Controller()
export class JobsNatsController {
  constructor(
    private readonly auth: Authenticator,
    private readonly jobs: JobsService,
  ) {}

  @MessagePattern(Commands.SubmitJob.subject)
  async submit(@Payload() request: SubmitJob, @Ctx() ctx: NatsQueryContext): Promise<SubmitJobReply> {
    const headers = ctx.getHeaders();
    const principal = this.auth.fromNats(headers);
    const key = headers?.get(HEADERS.idempotencyKey) || undefined;
    const options = { deadlinePolicy: deadlinePolicyHeader(headers?.get(HEADERS.deadlinePolicy) || undefined) };
    return (await this.jobs.submit(principal, request, key, trace(headers), options)).reply;
  }

  @MessagePattern(Commands.CancelJob.subject)
  cancel(@Payload() request: CancelJob, @Ctx() ctx: NatsQueryContext): Promise<CancelJobReply> {
    const headers = ctx.getHeaders();
    return this.jobs.cancel(this.auth.fromNats(headers), request.jobId, request.reason, trace(headers));
  }

  @MessagePattern(Queries.GetJob.subject)
  get(@Payload() request: GetJob, @Ctx() ctx: NatsQueryContext): Promise<JobView> {
    return this.jobs.facts(this.auth.fromNats(ctx.getHeaders()), request.jobId);
  }

  @MessagePattern(Queries.ListJobs.subject)
  list(@Payload() request: ListJobs, @Ctx() ctx: NatsQueryContext): Promise<ListJobsReply> {
    return this.jobs.list(this.auth.fromNats(ctx.getHeaders()), request);
  }
}

function trace(headers: MsgHdrs | undefined): RequestTrace {
  const id = headers?.get(HEADERS.correlationId);
  return id && TraceId.safeParse(id).success ? { correlationId: id } : {};
}
