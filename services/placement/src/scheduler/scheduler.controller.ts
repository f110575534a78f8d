import { JetStreamContext } from '#service-kit';
import { Controller } from '@nestjs/common';
import { Ctx, EventPattern } from '@nestjs/microservices';
import { SchedulerService } from './scheduler.service.js';

/**
 * Every event placement folds comes in here and goes to the scheduler, which applies it and runs
 * a pass (one per run of events while the consumer is behind: `getBehind`). Failures settle in the transport: retryable → nak with backoff, terminal → dead letter.
 * (The types are those of PLACEMENT_EVENT_TYPES; decorators need them spelled out.)
 */
@Controller()
export class SchedulerController {
  constructor(private readonly scheduler: SchedulerService) {}

  @EventPattern<string>('JobSubmitted')
  onJobSubmitted(@Ctx() ctx: JetStreamContext) {
    return this.handle(ctx);
  }
  @EventPattern<string>('InputsStaged')
  onInputsStaged(@Ctx() ctx: JetStreamContext) {
    return this.handle(ctx);
  }
  @EventPattern<string>('StagingFailed')
  onStagingFailed(@Ctx() ctx: JetStreamContext) {
    return this.handle(ctx);
  }
  @EventPattern<string>('JobCancelRequested')
  onJobCancelRequested(@Ctx() ctx: JetStreamContext) {
    return this.handle(ctx);
  }
  @EventPattern<string>('JobRejected')
  onJobRejected(@Ctx() ctx: JetStreamContext) {
    return this.handle(ctx);
  }
  @EventPattern<string>('JobPlaced')
  onJobPlaced(@Ctx() ctx: JetStreamContext) {
    return this.handle(ctx);
  }
  @EventPattern<string>('JobRequeued')
  onJobRequeued(@Ctx() ctx: JetStreamContext) {
    return this.handle(ctx);
  }
  @EventPattern<string>('JobWithdrawn')
  onJobWithdrawn(@Ctx() ctx: JetStreamContext) {
    return this.handle(ctx);
  }
  @EventPattern<string>('JobQuoted')
  onJobQuoted(@Ctx() ctx: JetStreamContext) {
    return this.handle(ctx);
  }
  @EventPattern<string>('NodeRegistered')
  onNodeRegistered(@Ctx() ctx: JetStreamContext) {
    return this.handle(ctx);
  }
  @EventPattern<string>('ComputeHeld')
  onComputeHeld(@Ctx() ctx: JetStreamContext) {
    return this.handle(ctx);
  }
  @EventPattern<string>('JobFinished')
  onJobFinished(@Ctx() ctx: JetStreamContext) {
    return this.handle(ctx);
  }
  @EventPattern<string>('QuotaSet')
  onQuotaSet(@Ctx() ctx: JetStreamContext) {
    return this.handle(ctx);
  }
  @EventPattern<string>('ComputeReleased')
  onComputeReleased(@Ctx() ctx: JetStreamContext) {
    return this.handle(ctx);
  }

  @EventPattern<string>('NodeLost')
  onNodeLost(@Ctx() ctx: JetStreamContext) {
    return this.handle(ctx);
  }
  // The operator's cordon and drain (decision 0031): placement's own events, applied when written;
  // their echo on the bus changes nothing (evolve compares store positions), as NodeLost's does.
  @EventPattern<string>('NodeCordoned')
  onNodeCordoned(@Ctx() ctx: JetStreamContext) {
    return this.handle(ctx);
  }
  @EventPattern<string>('NodeDrainRequested')
  onNodeDrainRequested(@Ctx() ctx: JetStreamContext) {
    return this.handle(ctx);
  }
  @EventPattern<string>('NodeDrained')
  onNodeDrained(@Ctx() ctx: JetStreamContext) {
    return this.handle(ctx);
  }
  @EventPattern<string>('NodeUncordoned')
  onNodeUncordoned(@Ctx() ctx: JetStreamContext) {
    return this.handle(ctx);
  }
  @EventPattern<string>('BudgetSet')
  onBudgetSet(@Ctx() ctx: JetStreamContext) {
    return this.handle(ctx);
  }
  @EventPattern<string>('BudgetCleared')
  onBudgetCleared(@Ctx() ctx: JetStreamContext) {
    return this.handle(ctx);
  }
  @EventPattern<string>('BudgetReserved')
  onBudgetReserved(@Ctx() ctx: JetStreamContext) {
    return this.handle(ctx);
  }
  @EventPattern<string>('BudgetReleased')
  onBudgetReleased(@Ctx() ctx: JetStreamContext) {
    return this.handle(ctx);
  }

  private handle(ctx: JetStreamContext): Promise<void> {
    return this.scheduler.handle(ctx.getEvent(), ctx.getLogger(), ctx.getBehind());
  }
}
