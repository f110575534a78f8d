import { NodeHeartbeat, SUBJECT_PREFIX } from '#contracts';
import { LOGGER, NATS_CONNECTION } from '#service-kit';
import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import { Inject, Injectable, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import type { Logger } from 'pino';
import { SchedulerService } from '../scheduler/scheduler.service.js';

/** Every agent's heartbeats: `gpunet.hb.<nodeId>` on core NATS. */
export const HEARTBEAT_WILDCARD = `${SUBJECT_PREFIX.heartbeat}.*`;

/**
 * Keeps the last heartbeat of every node (core NATS `gpunet.hb.<nodeId>`, a NodeHeartbeat as
 * JSON). Liveness only: heartbeats are not history, so they are neither stored nor retried; a
 * heartbeat that does not parse is logged (once per node) and dropped. NodeLossWatcher declares a
 * node silent past its lease lost from this data.
 */
@Injectable()
export class HeartbeatsListener implements OnModuleInit, OnModuleDestroy {
  private sub: Subscription | undefined;
  private readonly warned = new Set<string>();
  private readonly log: Logger;

  constructor(
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
    private readonly scheduler: SchedulerService,
    @Inject(LOGGER) logger: Logger,
  ) {
    this.log = logger.child({ component: 'heartbeats' });
  }

  onModuleInit(): void {
    this.sub = this.nc.subscribe(HEARTBEAT_WILDCARD, {
      callback: (err, msg) => {
        if (err) {
          this.log.warn({ err }, 'heartbeat subscription error');
          return;
        }
        let json: unknown;
        try {
          json = msg.json();
        } catch {
          json = undefined;
        }
        const parsed = NodeHeartbeat.safeParse(json);
        const subjectNode = msg.subject.slice(SUBJECT_PREFIX.heartbeat.length + 1);
        if (!parsed.success || parsed.data.nodeId !== subjectNode) {
          if (!this.warned.has(subjectNode)) {
            this.warned.add(subjectNode);
            this.log.warn({ subject: msg.subject, issues: parsed.success ? [{ path: 'nodeId', message: 'differs from the subject' }] : parsed.error.issues }, 'heartbeat dropped: not a NodeHeartbeat of this node');
          }
          return;
        }
        this.scheduler.heartbeat(parsed.data);
      },
    });
  }

  onModuleDestroy(): void {
    this.sub?.unsubscribe();
  }
}
