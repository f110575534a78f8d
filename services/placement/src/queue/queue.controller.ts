import { querySubject, type Capacity, type CapacityReply, type Estimate, type EstimateReply, type GetQueue, type GetQueueReply, type Quotas, type QuotasReply } from '#contracts';
import { CLOCK, LOGGER, type Clock } from '#service-kit';
import { Controller, Inject } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import type { Logger } from 'pino';
import { estimate, forecast, monthOf, placeableJobs, plan, quotaUsage, quoteAccuracy, quotesToRecord, queueView } from '../domain/index.js';
import { SchedulerService } from '../scheduler/scheduler.service.js';

/** Reservations computed for `gpunet status` at most (the first waiting jobs get a date). */
const STATUS_DEPTH = 100;

/** Answers `gpunet.qry.placement.GetQueue` (for `gpunet status`) and `Estimate` (for `gpunet estimate`) from the live state. */
@Controller()
export class QueueController {
  constructor(
    private readonly scheduler: SchedulerService,
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  @MessagePattern(querySubject('placement', 'GetQueue'))
  async getQueue(@Payload() query: GetQueue): Promise<GetQueueReply> {
    const now = this.clock.now();
    // The live plan gives placeable jobs their reason, rank and expected start. Deeper than the
    // scheduler's own reservations so that more than the first waiting jobs get a date, as an
    // estimate does: conservative (each holds a reservation), never optimistic.
    const shown = this.scheduler.state.queue.length;
    const p = plan(this.scheduler.state, now, { ...this.scheduler.planOptions, reservationDepth: Math.max(this.scheduler.planOptions.reservationDepth ?? 1, Math.min(shown, STATUS_DEPTH)), reservationAfterMs: 0, reserveByLimits: false });
    const view = queueView(this.scheduler.state, p);
    const pending = view.pending
      .filter((p) => (query.team === undefined || p.job.team === query.team) && (query.jobId === undefined || p.job.jobId === query.jobId))
      .slice(0, query.limit)
      .map((p) => ({
        jobId: p.job.jobId,
        team: p.job.team,
        position: p.position,
        reason: p.reason,
        gpus: p.job.request.gpus,
        ...(p.job.request.gpuModel !== undefined ? { gpuModel: p.job.request.gpuModel } : {}),
        attempt: p.job.attempts.length + 1,
        submittedAt: p.job.submittedAt,
        ...(p.rank !== undefined ? { rank: p.rank } : {}),
        ...(p.expectedStart !== undefined ? { expectedStart: new Date(p.expectedStart).toISOString() } : {}),
        ...(p.reasonDetail !== undefined ? { reasonDetail: p.reasonDetail } : {}),
      }));
    // A start shown is a quote: the first one of each job is recorded (JobQuoted) before it is
    // answered. Answering matters more than the record: a store that refuses the write is logged.
    const quotes = quotesToRecord(this.scheduler.state, p, new Set(pending.map((e) => e.jobId)));
    if (quotes.length > 0) await this.scheduler.recordQuotes(quotes).catch((err: unknown) => this.logger.warn({ err, jobs: quotes.length }, 'quotes shown but not recorded'));
    return {
      pending,
      totalPending: view.pending.length,
      nodes: view.nodes.map((n) => ({
        nodeId: n.nodeId,
        gpus: n.gpus,
        gpuModels: n.gpuModels,
        freeGpuIndices: n.freeGpuIndices,
        ...(n.lastHeartbeatAt !== undefined ? { lastHeartbeatAt: new Date(n.lastHeartbeatAt).toISOString() } : {}),
      })),
      at: now.toISOString(),
    };
  }

  /** Where the request would land if its team submitted it now; reads the state, changes nothing. */
  @MessagePattern(querySubject('placement', 'Estimate'))
  estimate(@Payload() query: Estimate): EstimateReply {
    const now = this.clock.now();
    const e = estimate(this.scheduler.state, { team: query.team, ...query.request }, now, this.scheduler.planOptions);
    const at = now.toISOString();
    if (!e.runnable) return { runnable: false, reason: e.reason, at };
    return {
      runnable: true,
      reason: e.reason ?? 'StartsNow',
      expectedStart: new Date(e.expectedStart).toISOString(),
      expectedEnd: new Date(e.expectedEnd).toISOString(),
      gpuModel: e.gpuModel,
      nodes: e.nodes,
      at,
    };
  }

  /** GPU quotas per team and model with their use this month (intake answers `GetQuotas` and `gpunet capacity` with it). */
  @MessagePattern(querySubject('placement', 'Quotas'))
  quotas(@Payload() query: Quotas): QuotasReply {
    const now = this.clock.now();
    const state = this.scheduler.state;
    return { month: monthOf(now.getTime()), quotas: quotaUsage(state, now.getTime(), placeableJobs(state), query.team), at: now.toISOString() };
  }

  /** Free GPUs per model per hour ahead, from the live plan (`gpunet capacity`). */
  @MessagePattern(querySubject('placement', 'Capacity'))
  capacity(@Payload() query: Capacity): CapacityReply {
    const now = this.clock.now();
    const f = forecast(this.scheduler.state, now, { ...this.scheduler.planOptions, hours: query.hours });
    const list = (r: Record<string, number>) => Object.entries(r).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([gpuModel, gpus]) => ({ gpuModel, gpus }));
    const q = quoteAccuracy(this.scheduler.state, now.getTime());
    return {
      totals: list(f.totals),
      hours: f.hours.map((h) => ({ start: new Date(h.start).toISOString(), free: list(h.free) })),
      at: now.toISOString(),
      quotes: { ...q, since: new Date(q.since).toISOString() },
    };
  }
}
