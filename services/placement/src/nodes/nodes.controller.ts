import { Commands, HEADERS, Queries, type CordonNode, type DrainNode, type ListNodeStatesReply, type NodeAdminReply, type UncordonNode } from '#contracts';
import { NatsQueryContext } from '#messaging';
import { CLOCK, SERVICE_CONFIG, type Clock } from '#service-kit';
import { Controller, Inject } from '@nestjs/common';
import { Ctx, MessagePattern, Payload } from '@nestjs/microservices';
import { nodeStatuses } from '../domain/index.js';
import type { PlacementConfig } from '../placement.config.js';
import { SchedulerService } from '../scheduler/scheduler.service.js';

/** The correlation id a request carries, if any. */
function correlationOf(ctx: NatsQueryContext): string | undefined {
  return ctx.getHeaders()?.get(HEADERS.correlationId) || undefined;
}

/**
 * `gpunet.cmd.CordonNode`, `DrainNode`, `UncordonNode` and `gpunet.qry.placement.ListNodeStates`
 * (`gpunet nodes cordon|drain|uncordon|list`, decision 0031). Only the operator identity and
 * intake may publish these subjects (deploy/nats-permissions.yaml): a team or a node is refused by
 * nats-server before placement sees anything.
 */
@Controller()
export class NodesController {
  constructor(
    private readonly scheduler: SchedulerService,
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(SERVICE_CONFIG) private readonly config: Partial<PlacementConfig>,
  ) {}

  @MessagePattern(Commands.CordonNode.subject)
  cordon(@Payload() c: CordonNode, @Ctx() ctx: NatsQueryContext): Promise<NodeAdminReply> {
    return this.scheduler.nodeAdmin({ action: 'cordon', nodeId: c.nodeId, by: c.by, reason: c.reason }, correlationOf(ctx));
  }

  @MessagePattern(Commands.DrainNode.subject)
  drain(@Payload() c: DrainNode, @Ctx() ctx: NatsQueryContext): Promise<NodeAdminReply> {
    return this.scheduler.nodeAdmin({ action: 'drain', nodeId: c.nodeId, by: c.by, reason: c.reason }, correlationOf(ctx));
  }

  @MessagePattern(Commands.UncordonNode.subject)
  uncordon(@Payload() c: UncordonNode, @Ctx() ctx: NatsQueryContext): Promise<NodeAdminReply> {
    return this.scheduler.nodeAdmin({ action: 'uncordon', nodeId: c.nodeId, by: c.by, ...(c.reason !== undefined ? { reason: c.reason } : {}) }, correlationOf(ctx));
  }

  @MessagePattern(Queries.ListNodeStates.subject)
  list(): ListNodeStatesReply {
    const now = this.clock.now();
    return { nodes: nodeStatuses(this.scheduler.state, now.getTime(), { leaseMs: this.config.GPUNET_NODE_LEASE_MS }), at: now.toISOString() };
  }
}
