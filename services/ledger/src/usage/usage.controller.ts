import type { JobFinished } from '#contracts';
import { JetStreamContext } from '#service-kit';
import { Controller } from '@nestjs/common';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { JobEndRecorderService } from '../job-end/job-end-recorder.service.js';
import { UsageRecorderService } from './usage-recorder.service.js';

/** Meters each finished attempt, then looks whether its job is over. Failures settle in the transport: retryable → nak, terminal → dead letter. */
@Controller()
export class UsageController {
  constructor(
    private readonly recorder: UsageRecorderService,
    private readonly jobEnds: JobEndRecorderService,
  ) {}

  @EventPattern<string>('JobFinished')
  async onJobFinished(@Payload() data: JobFinished, @Ctx() ctx: JetStreamContext): Promise<void> {
    await this.recorder.onJobFinished(data, ctx.getEvent(), ctx.getLogger());
    // A job may be over with this end (a part that never held, released already): look at it now.
    await this.jobEnds.check(data.jobId, ctx.getEvent(), ctx.getLogger());
  }
}
