import { Queries, type GetQueueReply } from '#contracts';
import { requestQuery } from '#messaging';
import { NATS_CONNECTION } from '#service-kit';
import type { NatsConnection } from '@nats-io/transport-node';
import { Controller, Get, Inject, Param, Req } from '@nestjs/common';
import type { Request } from 'express';
import { Authenticator } from '../auth/authenticator.js';
import { authorize } from '../auth/permissions.js';
import { correlationIdOf, jobIdParam } from '../http/request.js';

/**
 * `GET /v1/jobs/:jobId/queue`: where a waiting job stands in placement's live plan (place in line,
 * reason, rank, expected start), asked of placement (`GetQueue`) for the caller's team only, so
 * another team's job is never shown (`pending` is empty, as for a job that no longer waits).
 */
@Controller('v1/jobs')
export class QueueHttpController {
  constructor(
    private readonly auth: Authenticator,
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
  ) {}

  @Get(':jobId/queue')
  queue(@Req() req: Request, @Param('jobId') jobId: string): Promise<GetQueueReply> {
    const principal = this.auth.fromHttp(req.headers.authorization);
    authorize(principal, 'jobs:read');
    const q = Queries.GetQueue;
    return requestQuery<GetQueueReply>(
      this.nc,
      q.subject,
      { team: principal.team, jobId: jobIdParam(jobId), limit: 1 },
      { request: q.schema, response: q.replySchema },
      { correlationId: correlationIdOf(req.headers) },
    );
  }
}

/**
 * `GET /v1/queue`: the caller's team's waiting jobs in line (reason, expected start; their place
 * stays global) and the nodes with their free GPUs, asked of placement (`GetQueue`). Another
 * team's jobs are never listed; nodes are the network's, shown to every team that may read jobs.
 */
@Controller('v1/queue')
export class TeamQueueHttpController {
  constructor(
    private readonly auth: Authenticator,
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
  ) {}

  @Get()
  queue(@Req() req: Request): Promise<GetQueueReply> {
    const principal = this.auth.fromHttp(req.headers.authorization);
    authorize(principal, 'jobs:read');
    const q = Queries.GetQueue;
    return requestQuery<GetQueueReply>(this.nc, q.subject, { team: principal.team, limit: 200 }, { request: q.schema, response: q.replySchema }, { correlationId: correlationIdOf(req.headers) });
  }
}
