import { HEADERS, Queries, TraceId, type GetChargesReply, type ListCharges } from '#contracts';
import { NATS_CONNECTION, NatsQueryContext } from '#service-kit';
import type { NatsConnection } from '@nats-io/transport-node';
import { Controller, Inject } from '@nestjs/common';
import { Ctx, MessagePattern, Payload } from '@nestjs/microservices';
import { Authenticator } from '../auth/authenticator.js';
import { authorize, callerPrincipal } from '../auth/permissions.js';
import { askLedger } from './charges.http.controller.js';

/** `gpunet.qry.intake.ListCharges`: the NATS equivalent of `GET /v1/charges`, same `Authorization` header; asked of the ledger with the caller's principal. */
@Controller()
export class ChargesNatsController {
  constructor(
    private readonly auth: Authenticator,
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
  ) {}

  @MessagePattern(Queries.ListCharges.subject)
  charges(@Payload() request: ListCharges, @Ctx() ctx: NatsQueryContext): Promise<GetChargesReply> {
    const headers = ctx.getHeaders();
    const principal = this.auth.fromNats(headers);
    authorize(principal, 'charges:read');
    const id = headers?.get(HEADERS.correlationId);
    // The principal (team, role, key) comes from the key, never from the request.
    return askLedger(this.nc, { ...request, principal: callerPrincipal(principal) }, id && TraceId.safeParse(id).success ? id : undefined);
  }
}
