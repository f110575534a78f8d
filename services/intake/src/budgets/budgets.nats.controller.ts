import { Commands, HEADERS, Queries, TraceId, type BudgetView } from '#contracts';
import { NatsQueryContext } from '#service-kit';
import type { MsgHdrs } from '@nats-io/transport-node';
import { Controller } from '@nestjs/common';
import { Ctx, MessagePattern, Payload } from '@nestjs/microservices';
import { Authenticator } from '../auth/authenticator.js';
import { BudgetsService } from './budgets.service.js';

/** Budgets on NATS: `gpunet.cmd.SetBudget`, `gpunet.cmd.ClearBudget`, `gpunet.qry.intake.GetBudget`; same `Authorization` header, same rules as HTTP. */
@Controller()
export class BudgetsNatsController {
  constructor(
    private readonly auth: Authenticator,
    private readonly budgets: BudgetsService,
  ) {}

  @MessagePattern(Commands.SetBudget.subject)
  set(@Payload() request: unknown, @Ctx() ctx: NatsQueryContext): Promise<BudgetView> {
    const h = ctx.getHeaders();
    return this.budgets.set(this.auth.fromNats(h), request, trace(h));
  }

  @MessagePattern(Commands.ClearBudget.subject)
  clear(@Payload() request: unknown, @Ctx() ctx: NatsQueryContext): Promise<BudgetView> {
    const h = ctx.getHeaders();
    return this.budgets.clear(this.auth.fromNats(h), request, trace(h));
  }

  @MessagePattern(Queries.GetBudget.subject)
  get(@Payload() request: unknown, @Ctx() ctx: NatsQueryContext): Promise<BudgetView> {
    return this.budgets.get(this.auth.fromNats(ctx.getHeaders()), request);
  }
}

function trace(headers: MsgHdrs | undefined): { correlationId?: string } {
  const id = headers?.get(HEADERS.correlationId);
  return id && TraceId.safeParse(id).success ? { correlationId: id } : {};
}
