import type { JobCancelRequested, JobFinished, JobPlaced, NodeLost } from '#contracts';
import { JetStreamContext } from '#service-kit';
import { Controller } from '@nestjs/common';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { NodeAgentService } from './node-agent.service.js';

/**
 * The agent's bus inputs. Every agent sees every placement and cancel (its consumer filters
 * nothing out on nats-server 2.9); those for other nodes are ignored. Handlers of one job run in
 * order (the consumer's per-job keys); jobs run concurrently.
 */
@Controller()
export class AgentController {
  constructor(private readonly agent: NodeAgentService) {}

  /** Acknowledged once ComputeHeld is recorded (or the attempt ended without it); the run goes on in the background. */
  @EventPattern<string>('JobPlaced')
  async onJobPlaced(@Payload() data: JobPlaced, @Ctx() ctx: JetStreamContext): Promise<void> {
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
    await this.agent.cancel(data, ctx.getLogger());
  }
}
