import { LOGGER, SERVICE_CONFIG } from '#service-kit';
import { Inject, Injectable, type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';
import type { Logger } from 'pino';
import type { PlacementConfig } from '../placement.config.js';
import { SchedulerService } from '../scheduler/scheduler.service.js';

/** Asks the scheduler every `GPUNET_NODE_CHECK_MS` whether a node has gone silent past its lease. */
@Injectable()
export class NodeLossWatcher implements OnApplicationBootstrap, OnModuleDestroy {
  private timer: NodeJS.Timeout | undefined;
  private running = false;
  private readonly log: Logger;

  constructor(
    private readonly scheduler: SchedulerService,
    @Inject(SERVICE_CONFIG) private readonly config: Pick<PlacementConfig, 'GPUNET_NODE_CHECK_MS'>,
    @Inject(LOGGER) logger: Logger,
  ) {
    this.log = logger.child({ component: 'node-loss' });
  }

  onApplicationBootstrap(): void {
    this.timer = setInterval(() => void this.check(), this.config.GPUNET_NODE_CHECK_MS);
    this.timer.unref();
  }

  onModuleDestroy(): void {
    clearInterval(this.timer);
  }

  private async check(): Promise<void> {
    if (this.running) return; // a slow check (store down) is not stacked up
    this.running = true;
    try {
      await this.scheduler.checkNodes();
    } catch (err) {
      // The next tick tries again: a lost node stays silent, so nothing is missed.
      this.log.warn({ err }, 'node-loss check failed; retrying at the next tick');
    } finally {
      this.running = false;
    }
  }
}
