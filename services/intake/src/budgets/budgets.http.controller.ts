import type { BudgetView } from '#contracts';
import { Body, Controller, Delete, Get, HttpCode, Param, Put, Req } from '@nestjs/common';
import type { Request } from 'express';
import { Authenticator } from '../auth/authenticator.js';
import { correlationIdOf } from '../http/request.js';
import { BudgetsService } from './budgets.service.js';

function body(value: unknown): Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}

/**
 * `GET /v1/budgets` (the caller's team), `GET /v1/budgets/{team}`, `PUT /v1/budgets/{team}`
 * (set: role `billing`), `DELETE /v1/budgets/{team}` (clear: role `billing`).
 */
@Controller('v1/budgets')
export class BudgetsHttpController {
  constructor(
    private readonly auth: Authenticator,
    private readonly budgets: BudgetsService,
  ) {}

  private caller(req: Request) {
    return this.auth.fromHttp(req.headers.authorization, { ip: req.ip, url: req.originalUrl });
  }

  @Get()
  own(@Req() req: Request): Promise<BudgetView> {
    return this.budgets.get(this.caller(req), {});
  }

  @Get(':team')
  get(@Req() req: Request, @Param('team') team: string): Promise<BudgetView> {
    return this.budgets.get(this.caller(req), { team });
  }

  @Put(':team')
  @HttpCode(200)
  set(@Req() req: Request, @Param('team') team: string, @Body() payload: unknown): Promise<BudgetView> {
    return this.budgets.set(this.caller(req), { ...body(payload), team }, { correlationId: correlationIdOf(req.headers) });
  }

  @Delete(':team')
  @HttpCode(200)
  clear(@Req() req: Request, @Param('team') team: string): Promise<BudgetView> {
    return this.budgets.clear(this.caller(req), { team }, { correlationId: correlationIdOf(req.headers) });
  }
}
