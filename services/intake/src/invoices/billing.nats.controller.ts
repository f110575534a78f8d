import { Commands, HEADERS, TraceId, type PriceListPublished, type PublishPriceList } from '#contracts';
import { NatsQueryContext } from '#service-kit';
import { Controller } from '@nestjs/common';
import { Ctx, MessagePattern, Payload } from '@nestjs/microservices';
import { Authenticator } from '../auth/authenticator.js';
import { BillingService } from './billing.service.js';

/** `gpunet.cmd.PublishPriceList`: the NATS equivalent of `POST /v1/prices`, same `Authorization` header (role `billing`). */
@Controller()
export class BillingNatsController {
  constructor(
    private readonly auth: Authenticator,
    private readonly billing: BillingService,
  ) {}

  @MessagePattern(Commands.PublishPriceList.subject)
  publish(@Payload() request: PublishPriceList, @Ctx() ctx: NatsQueryContext): Promise<PriceListPublished> {
    const headers = ctx.getHeaders();
    const id = headers?.get(HEADERS.correlationId);
    return this.billing.publishPriceList(this.auth.fromNats(headers), request, id && TraceId.safeParse(id).success ? { correlationId: id } : {});
  }
}
