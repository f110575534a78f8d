import { Commands, HEADERS, Queries, TraceId, type GetQuotas, type QuotasReply, type QuotaUsage, type SetQuota } from '#contracts';
import { NatsQueryContext } from '#service-kit';
import { Controller } from '@nestjs/common';
import { Ctx, MessagePattern, Payload } from '@nestjs/microservices';
import { Authenticator } from '../auth/authenticator.js';
import { QuotasService } from './quotas.service.js';

/** GPU quotas on NATS: `gpunet.cmd.SetQuota` and `gpunet.qry.intake.GetQuotas`; same `Authorization` header, same rules as HTTP. */
@Controller()
export class QuotasNatsController {
  constructor(
    private readonly auth: Authenticator,
    private readonly quotas: QuotasService,
  ) {}

  @MessagePattern(Commands.SetQuota.subject)
  set(@Payload() request: SetQuota, @Ctx() ctx: NatsQueryContext): Promise<QuotaUsage> {
    const h = ctx.getHeaders();
    const id = h?.get(HEADERS.correlationId);
    return this.quotas.set(this.auth.fromNats(h), request, 'nats', id && TraceId.safeParse(id).success ? { correlationId: id } : {});
  }

  @MessagePattern(Queries.GetQuotas.subject)
  list(@Payload() request: GetQuotas, @Ctx() ctx: NatsQueryContext): Promise<QuotasReply> {
    return this.quotas.list(this.auth.fromNats(ctx.getHeaders()), request, 'nats');
  }
}
