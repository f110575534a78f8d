import type { EventData } from '#contracts';
import { JetStreamContext } from '#service-kit';
import { Controller } from '@nestjs/common';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { JobEndRecorderService } from './job-end-recorder.service.js';

/**
 * Looks at a job again after each event that may be its last. (JobFinished is looked at by the
 * usage controller, after its line.) Failures settle in the transport: retryable → nak, terminal →
 * dead letter.
 */
@Controller()
export class JobEndController {
  constructor(private readonly recorder: JobEndRecorderService) {}

  @EventPattern<string>('ComputeReleased')
  async onReleased(@Payload() data: EventData<'ComputeReleased'>, @Ctx() ctx: JetStreamContext): Promise<void> {
    await this.recorder.check(data.jobId, ctx.getEvent(), ctx.getLogger());
  }

  @EventPattern<string>('JobWithdrawn')
  async onWithdrawn(@Payload() data: EventData<'JobWithdrawn'>, @Ctx() ctx: JetStreamContext): Promise<void> {
    await this.recorder.check(data.jobId, ctx.getEvent(), ctx.getLogger());
  }

  @EventPattern<string>('StagingFailed')
  async onStagingFailed(@Payload() data: EventData<'StagingFailed'>, @Ctx() ctx: JetStreamContext): Promise<void> {
    await this.recorder.check(data.jobId, ctx.getEvent(), ctx.getLogger());
  }

  @EventPattern<string>('JobRejected')
  async onRejected(@Payload() data: EventData<'JobRejected'>, @Ctx() ctx: JetStreamContext): Promise<void> {
    await this.recorder.check(data.jobId, ctx.getEvent(), ctx.getLogger());
  }

  /** The ledger's own line, back from the bus: the last fact of a job whose release came first. */
  @EventPattern<string>('UsageRecorded')
  async onUsage(@Payload() data: EventData<'UsageRecorded'>, @Ctx() ctx: JetStreamContext): Promise<void> {
    await this.recorder.check(data.jobId, ctx.getEvent(), ctx.getLogger());
  }

  /** A lost node ends its attempts `node_lost`: the part that never releases is accounted for. */
  @EventPattern<string>('NodeLost')
  async onNodeLost(@Payload() data: EventData<'NodeLost'>, @Ctx() ctx: JetStreamContext): Promise<void> {
    for (const jobId of new Set(data.affectedAttempts.map((a) => a.jobId))) await this.recorder.check(jobId, ctx.getEvent(), ctx.getLogger());
  }
}
