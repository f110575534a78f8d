import { GetCharges, GetChargesReply, Queries, formatIssues } from '#contracts';
import { ValidationError } from '#errors';
import { requestQuery } from '#messaging';
import { NATS_CONNECTION } from '#service-kit';
import type { NatsConnection } from '@nats-io/transport-node';
import { Controller, Get, Inject, Req } from '@nestjs/common';
import type { Request } from 'express';
import { Authenticator } from '../auth/authenticator.js';
import { authorize, callerPrincipal } from '../auth/permissions.js';
import { correlationIdOf, single } from '../http/request.js';

/** `GET /v1/charges?jobId=&from=&to=`: the caller's team's charges, asked of the ledger (`GetCharges`). */
@Controller('v1/charges')
export class ChargesHttpController {
  constructor(
    private readonly auth: Authenticator,
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
  ) {}

  @Get()
  async charges(@Req() req: Request): Promise<GetChargesReply> {
    const principal = this.auth.fromHttp(req.headers.authorization);
    authorize(principal, 'charges:read');
    const q = req.query as Record<string, string | string[] | undefined>;
    const raw: Record<string, unknown> = { principal: callerPrincipal(principal) };
    for (const name of ['jobId', 'from', 'to'] as const) {
      const value = single(q[name]);
      if (value !== undefined) raw[name] = value;
    }
    // The principal (team, role, key) comes from the key, never from the query.
    const parsed = GetCharges.safeParse(raw);
    if (!parsed.success) throw new ValidationError(`invalid query: ${formatIssues(parsed.error).map((i) => i.path).join(', ')}`, formatIssues(parsed.error));
    return askLedger(this.nc, parsed.data, correlationIdOf(req.headers));
  }
}

/** `GetCharges` of the ledger, for a request whose principal intake has set from the caller's key. */
export function askLedger(nc: NatsConnection, request: GetCharges, correlationId: string | undefined): Promise<GetChargesReply> {
  const query = Queries.GetCharges;
  return requestQuery<GetChargesReply>(nc, query.subject, request, { request: query.schema, response: query.replySchema }, correlationId ? { correlationId } : {});
}
