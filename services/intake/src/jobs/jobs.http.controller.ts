import { CancelJob, formatIssues, type CancelJobReply, type JobView, type ListJobsReply, type SubmitJobReply } from '#contracts';
import { ValidationError } from '#errors';
import { Body, Controller, Get, Headers, Param, Post, Req, Res } from '@nestjs/common';
import type { Request, Response } from 'express';
import { Authenticator } from '../auth/authenticator.js';
import { correlationIdOf, jobIdParam, listQuery } from '../http/request.js';
import type { JobEvents } from '#contracts';
import { deadlinePolicyHeader } from '../estimate/deadline-policy.js';
import { JobsService } from './jobs.service.js';

/** `/v1/jobs`: submit, read, list, cancel, timeline. Thin: every decision is in JobsService. */
@Controller('v1/jobs')
export class JobsHttpController {
  constructor(
    private readonly auth: Authenticator,
    private readonly jobs: JobsService,
  ) {}

  /** 201 with the new job (`Gpunet-Deadline-Policy: warn` accepts a deadline the plan cannot meet, with a warning); 200 with the original when the Idempotency-Key was seen (duplicate). */
  @Post()
  async submit(
    @Req() req: Request,
    @Res({ passthrough: true }) res: Response,
    @Body() body: unknown,
    @Headers('idempotency-key') idempotencyKey: string | undefined,
    @Headers('gpunet-deadline-policy') deadlinePolicy: string | undefined,
  ): Promise<SubmitJobReply> {
    const principal = this.auth.fromHttp(req.headers.authorization);
    const options = { deadlinePolicy: deadlinePolicyHeader(deadlinePolicy) };
    const { reply, created } = await this.jobs.submit(principal, body, idempotencyKey, { correlationId: correlationIdOf(req.headers) }, options);
    res.status(created ? 201 : 200).location(`/v1/jobs/${reply.jobId}`);
    return reply;
  }

  @Get()
  list(@Req() req: Request): Promise<ListJobsReply> {
    const principal = this.auth.fromHttp(req.headers.authorization);
    return this.jobs.list(principal, listQuery(req.query as Record<string, string | string[] | undefined>));
  }

  @Get(':jobId')
  get(@Req() req: Request, @Param('jobId') jobId: string): Promise<JobView> {
    const principal = this.auth.fromHttp(req.headers.authorization);
    return this.jobs.facts(principal, jobIdParam(jobId), { correlationId: correlationIdOf(req.headers) });
  }

  /** Body optional: `{ "reason": "…" }`. */
  @Post(':jobId/cancel')
  async cancel(@Req() req: Request, @Res({ passthrough: true }) res: Response, @Param('jobId') jobId: string, @Body() body: unknown): Promise<CancelJobReply> {
    const principal = this.auth.fromHttp(req.headers.authorization);
    const id = jobIdParam(jobId);
    const extra = typeof body === 'object' && body !== null && !Array.isArray(body) ? (body as Record<string, unknown>) : {};
    const parsed = CancelJob.safeParse({ ...extra, jobId: id });
    if (!parsed.success) throw new ValidationError('invalid cancel request', formatIssues(parsed.error));
    res.status(200);
    return this.jobs.cancel(principal, id, parsed.data.reason, { correlationId: correlationIdOf(req.headers) });
  }

  @Get(':jobId/events')
  events(@Req() req: Request, @Param('jobId') jobId: string): Promise<JobEvents> {
    const principal = this.auth.fromHttp(req.headers.authorization);
    return this.jobs.events(principal, jobIdParam(jobId));
  }
}
