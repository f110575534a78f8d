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
import { QuotasService } from '../quotas/quotas.service.js';

/**
 * `GET /v1/capacity?hours=`: free GPUs per model per hour ahead, asked of placement (`Capacity`),
 * with the GPU quotas the caller may see (its own team's; every team's for `billing`).
 */
@Controller('v1/capacity')
export class CapacityHttpController {
  constructor(
    private readonly auth: Authenticator,
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
    private readonly quotas: QuotasService,
  ) {}

  @Get()
  async capacity(@Req() req: Request): Promise<CapacityReply> {
    const principal = this.auth.fromHttp(req.headers.authorization);
    authorize(principal, 'jobs:read');
    const hours = single((req.query as Record<string, string | string[] | undefined>).hours);
    const parsed = Capacity.safeParse(hours === undefined ? {} : { hours: Number(hours) });
    if (!parsed.success) throw new ValidationError('invalid query: hours', formatIssues(parsed.error));
    const q = Queries.Capacity;
    const correlationId = correlationIdOf(req.headers);
    const [reply, quotas] = await Promise.all([
      requestQuery<CapacityReply>(this.nc, q.subject, parsed.data, { request: q.schema, response: q.replySchema }, { correlationId }),
      this.quotas.forCapacity(principal, { correlationId }),
    ]);
    return { ...reply, quotas: { month: quotas.month, list: quotas.quotas } };
  }
}
