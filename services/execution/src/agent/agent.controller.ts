import type { JobCancelRequested, JobCheckpointed, JobFinished, JobPlaced, JobSubmitted, NodeLost } from '#contracts';
import { JetStreamContext } from '#service-kit';
import { Controller } from '@nestjs/common';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { NodeAgentService } from './node-agent.service.js';

/**
 * The agent's work: copies of recorded events the recorder puts on this node's own subjects
 * (`gpunet.work.<nodeId>.<type>`, consumer `execution-<nodeId>` of GPUNET_WORK). Before a
 * placement come the job's submission, a cancel recorded before it and the job's last
 * checkpoint, each kept in the journal (`work-<stream>`) for the attempt and for recovery.
 * Handlers of one job run in order (a cancel has a key of its own, so it reaches an attempt
 * that is still staging); jobs run concurrently.
 */
@Controller()
export class AgentController {
  constructor(private readonly agent: NodeAgentService) {}

  @EventPattern<string>('JobSubmitted')
  async onJobSubmitted(@Payload() _data: JobSubmitted, @Ctx() ctx: JetStreamContext): Promise<void> {
    await this.agent.keepCopy(ctx.getEvent());
  }

  @EventPattern<string>('JobCheckpointed')
  async onJobCheckpointed(@Payload() _data: JobCheckpointed, @Ctx() ctx: JetStreamContext): Promise<void> {
    await this.agent.keepCopy(ctx.getEvent());
  }

  /** Acknowledged once ComputeHeld is recorded (or the attempt ended without it); the run goes on in the background. */
  @EventPattern<string>('JobPlaced')
  async onJobPlaced(@Payload() data: JobPlaced, @Ctx() ctx: JetStreamContext): Promise<void> {
    await this.agent.keepCopy(ctx.getEvent());
    await this.agent.place(data, ctx.getEvent(), ctx.getLogger());
  }

  /** Gang parts: another part's end may stop this node's part. */
  @EventPattern<string>('JobFinished')
  async onJobFinished(@Payload() data: JobFinished, @Ctx() ctx: JetStreamContext): Promise<void> {
    await this.agent.peerFinished(data, ctx.getLogger());
  }

  @EventPattern<string>('NodeLost')
  async onNodeLost(@Payload() data: NodeLost, @Ctx() ctx: JetStreamContext): Promise<void> {
    await this.agent.peerLost(data, ctx.getLogger());
  }

  @EventPattern<string>('JobCancelRequested')
  async onJobCancelRequested(@Payload() data: JobCancelRequested, @Ctx() ctx: JetStreamContext): Promise<void> {
    await this.agent.keepCopy(ctx.getEvent());
    await this.agent.cancel(data, ctx.getLogger());
  }
}
