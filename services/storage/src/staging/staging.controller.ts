import type { JobSubmitted } from '#contracts';
import { JetStreamContext } from '#service-kit';
import { Controller } from '@nestjs/common';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { STORAGE_CONSUMER } from '../consumers.js';
import { StagingService } from './staging.service.js';

/** Stages each submitted job. Failures settle in the transport: retryable → nak, terminal → dead letter. */
@Controller()
export class StagingController {
  constructor(private readonly staging: StagingService) {}

  @EventPattern<string>('JobSubmitted', { consumer: STORAGE_CONSUMER })
  async onJobSubmitted(@Payload() data: JobSubmitted, @Ctx() ctx: JetStreamContext): Promise<void> {
    await this.staging.onJobSubmitted(data, ctx.getEvent(), ctx.getDeliveryCount(), ctx.getLogger());
  }
}
