import type { ComputeReleased } from '#contracts';
import { JetStreamContext } from '#service-kit';
import { Controller } from '@nestjs/common';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { RELEASED_CONSUMER } from '../consumers.js';
import { RetentionService } from './retention.service.js';

/** Frees a job's staged inputs when its compute is released. */
@Controller()
export class RetentionController {
  constructor(private readonly retention: RetentionService) {}

  @EventPattern<string>('ComputeReleased', { consumer: RELEASED_CONSUMER })
  async onComputeReleased(@Payload() data: ComputeReleased, @Ctx() ctx: JetStreamContext): Promise<void> {
    await this.retention.onReleased(data.jobId, ctx.getLogger());
  }
}
