import type { EstimateJobReply } from '#contracts';
import { Body, Controller, HttpCode, Post, Req } from '@nestjs/common';
import type { Request } from 'express';
import { Authenticator } from '../auth/authenticator.js';
import { correlationIdOf } from '../http/request.js';
import { EstimateService } from './estimate.service.js';

/** `POST /v1/estimate`: the same body as `POST /v1/jobs`; answers the expected start, end and charge; submits nothing. */
@Controller('v1/estimate')
export class EstimateHttpController {
  constructor(
    private readonly auth: Authenticator,
    private readonly estimates: EstimateService,
  ) {}

  @Post()
  @HttpCode(200)
  estimate(@Req() req: Request, @Body() body: unknown): Promise<EstimateJobReply> {
    const principal = this.auth.fromHttp(req.headers.authorization);
    return this.estimates.estimate(principal, body, { correlationId: correlationIdOf(req.headers) });
  }
}
