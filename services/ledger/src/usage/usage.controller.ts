import type { JobFinished } from '#contracts';
import { JetStreamContext } from '#service-kit';
import { Controller } from '@nestjs/common';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { UsageRecorderService } from './usage-recorder.service.js';

/** Meters each finished attempt. Failures settle in the transport: retryable → nak, terminal → dead letter. */
@Controller()
export class UsageController {
  constructor(private readonly recorder: UsageRecorderService) {}

  @EventPattern<string>('JobFinished')
  async onJobFinished(@Payload() data: JobFinished, @Ctx() ctx: JetStreamContext): Promise<void> {
    await this.recorder.onJobFinished(data, ctx.getEvent(), ctx.getLogger());
  }
}
