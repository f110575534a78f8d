import { Capacity, formatIssues, Queries, type CapacityReply } from '#contracts';
import { ValidationError } from '#errors';
import { requestQuery } from '#messaging';
import { NATS_CONNECTION } from '#service-kit';
import type { NatsConnection } from '@nats-io/transport-node';
import { Controller, Get, Inject, Req } from '@nestjs/common';
import type { Request } from 'express';
import { Authenticator } from '../auth/authenticator.js';
import { authorize } from '../auth/permissions.js';
import { correlationIdOf, single } from '../http/request.js';

/** `GET /v1/capacity?hours=`: free GPUs per model per hour ahead, asked of placement (`Capacity`). */
@Controller('v1/capacity')
export class CapacityHttpController {
  constructor(
    private readonly auth: Authenticator,
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
  ) {}

  @Get()
  capacity(@Req() req: Request): Promise<CapacityReply> {
    authorize(this.auth.fromHttp(req.headers.authorization), 'jobs:read');
    const hours = single((req.query as Record<string, string | string[] | undefined>).hours);
    const parsed = Capacity.safeParse(hours === undefined ? {} : { hours: Number(hours) });
    if (!parsed.success) throw new ValidationError('invalid query: hours', formatIssues(parsed.error));
    const q = Queries.Capacity;
    return requestQuery<CapacityReply>(this.nc, q.subject, parsed.data, { request: q.schema, response: q.replySchema }, { correlationId: correlationIdOf(req.headers) });
  }
}
