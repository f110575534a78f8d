import { Module } from '@nestjs/common';
import { HeartbeatsListener } from './heartbeats/heartbeats.listener.js';
import { NodeLossWatcher } from './heartbeats/node-loss.watcher.js';
import { NodesController } from './nodes/nodes.controller.js';
import { QueueController } from './queue/queue.controller.js';
import { SchedulerController } from './scheduler/scheduler.controller.js';
import { PlacementMetrics } from './scheduler/placement.metrics.js';
import { SchedulerService } from './scheduler/scheduler.service.js';

/** Placement: the node inventory, the queue and the passes that place jobs on GPUs. */
@Module({
  controllers: [SchedulerController, QueueController, NodesController],
  providers: [SchedulerService, PlacementMetrics, HeartbeatsListener, NodeLossWatcher],
})
export class PlacementModule {}
