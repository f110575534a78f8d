import { HEADERS, Queries, TraceId, type EstimateJob, type EstimateJobReply } from '#contracts';
import { NatsQueryContext } from '#service-kit';
import { Controller } from '@nestjs/common';
import { Ctx, MessagePattern, Payload } from '@nestjs/microservices';
import { Authenticator } from '../auth/authenticator.js';
import { EstimateService } from './estimate.service.js';

/** `gpunet.qry.intake.EstimateJob`: the NATS equivalent of `POST /v1/estimate` (a read, so a query), same `Authorization` header. */
@Controller()
export class EstimateNatsController {
  constructor(
    private readonly auth: Authenticator,
    private readonly estimates: EstimateService,
  ) {}

  @MessagePattern(Queries.EstimateJob.subject)
  estimate(@Payload() request: EstimateJob, @Ctx() ctx: NatsQueryContext): Promise<EstimateJobReply> {
    const headers = ctx.getHeaders();
    const id = headers?.get(HEADERS.correlationId);
    return this.estimates.estimate(this.auth.fromNats(headers), request, id && TraceId.safeParse(id).success ? { correlationId: id } : {});
  }
}
