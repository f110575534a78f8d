import type { QuotasReply, QuotaUsage } from '#contracts';
import { Body, Controller, Get, HttpCode, Post, Req } from '@nestjs/common';
import type { Request } from 'express';
import { Authenticator } from '../auth/authenticator.js';
import { correlationIdOf, single } from '../http/request.js';
import { QuotasService } from './quotas.service.js';

/** `POST /v1/quotas` (role `billing`) and `GET /v1/quotas?team=`: GPU quotas per team and model. */
@Controller('v1/quotas')
export class QuotasHttpController {
  constructor(
    private readonly auth: Authenticator,
    private readonly quotas: QuotasService,
  ) {}

  @Post()
  @HttpCode(200)
  set(@Req() req: Request, @Body() payload: unknown): Promise<QuotaUsage> {
    return this.quotas.set(this.auth.fromHttp(req.headers.authorization, { ip: req.ip, url: req.originalUrl }), payload, 'http', { correlationId: correlationIdOf(req.headers) });
  }

  @Get()
  list(@Req() req: Request): Promise<QuotasReply> {
    const team = single((req.query as Record<string, string | string[] | undefined>).team);
    return this.quotas.list(this.auth.fromHttp(req.headers.authorization, { ip: req.ip, url: req.originalUrl }), team !== undefined ? { team } : {}, 'http', { correlationId: correlationIdOf(req.headers) });
  }
}
