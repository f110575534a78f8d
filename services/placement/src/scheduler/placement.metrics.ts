import { CLOCK, METRICS, type Clock } from '#service-kit';
import { LATENCY_BUCKETS_SECONDS, type Histogram, type Metrics } from '#telemetry';
import { Inject, Injectable } from '@nestjs/common';
import { freeGpuIndices, plan, queueView, registeredNodes, type JobPhase, type PendingReason, type PlacementState, type PlanOptions } from '../domain/index.js';

const REASONS: readonly PendingReason[] = ['Inputs', 'Resources', 'Priority', 'Reservation', 'DeadlineUnreachable', 'NoNodes', 'Requeue', 'Cancelling'];
const PHASES: readonly JobPhase[] = ['waiting_inputs', 'queued', 'placed', 'lost', 'ended'];

/**
 * Placement's figures on `/metrics`. The queue and inventory gauges are computed from the state
 * when scraped (one walk over the queue and the nodes), never per job; the pass histogram is one
 * observation per pass. Labels are reason codes, phases, node ids and GPU models: bounded by the
 * fleet, never by the jobs.
 */
@Injectable()
export class PlacementMetrics {
  /** Time of one `decide` pass (planning included), seconds. */
  readonly passSeconds: Histogram<'decisions'>;
  /** The state the gauges read, once the scheduler has one. */
  private readonly view: { state?: PlacementState; options?: PlanOptions } = {};

  constructor(@Inject(METRICS) metrics: Metrics, @Inject(CLOCK) clock: Clock) {
    this.passSeconds = metrics.histogram({
      name: 'gpunet_placement_pass_seconds',
      help: 'Time of one placement pass (plan and decide), by whether it decided anything (some, none).',
      labelNames: ['decisions'],
      buckets: LATENCY_BUCKETS_SECONDS,
    });
    const view = this.view;
    metrics.gauge({
      name: 'gpunet_queue_pending_jobs',
      help: 'Jobs waiting in placement\'s queue, by reason code (Inputs, Resources, Priority, Reservation, DeadlineUnreachable, NoNodes, Requeue, Cancelling), as GetQueue gives them: the placeable ones from a plan made at the scrape with the pass\'s own options.',
      labelNames: ['reason'],
      collect() {
        if (!view.state) return;
        const counts = new Map<string, number>(REASONS.map((r) => [r, 0]));
        // The pass's own plan (same options), so a job behind a reservation or ranked below others shows why.
        const planned = plan(view.state, clock.now(), view.options ?? {});
        for (const p of queueView(view.state, planned).pending) counts.set(p.reason, (counts.get(p.reason) ?? 0) + 1);
        for (const [reason, n] of counts) this.set({ reason }, n);
      },
    });
    metrics.gauge({
      name: 'gpunet_placement_jobs',
      help: 'Jobs by phase (waiting_inputs, queued, placed, lost, ended); ended counts the jobs placement has forgotten too.',
      labelNames: ['phase'],
      collect() {
        if (!view.state) return;
        const counts = new Map<string, number>(PHASES.map((p) => [p, 0]));
        for (const job of view.state.jobs.values()) counts.set(job.phase, (counts.get(job.phase) ?? 0) + 1);
        // Ended jobs leave placement's memory (decision 0043); they still count as ended.
        counts.set('ended', (counts.get('ended') ?? 0) + view.state.forgottenJobs);
        for (const [phase, n] of counts) this.set({ phase }, n);
      },
    });
    metrics.gauge({
      name: 'gpunet_gpus',
      help: 'GPUs of registered nodes, by node, model and state (held: from JobPlaced until ComputeReleased; free).',
      labelNames: ['node', 'model', 'state'],
      collect() {
        if (!view.state) return;
        this.reset();
        for (const n of registeredNodes(view.state)) {
          const free = new Set(freeGpuIndices(n));
          const counts = new Map<string, { held: number; free: number }>();
          for (const g of n.gpus) {
            const c = counts.get(g.model) ?? { held: 0, free: 0 };
            if (free.has(g.index)) c.free++;
            else c.held++;
            counts.set(g.model, c);
          }
          for (const [model, c] of counts) {
            this.set({ node: n.nodeId, model, state: 'held' }, c.held);
            this.set({ node: n.nodeId, model, state: 'free' }, c.free);
          }
        }
      },
    });
    metrics.gauge({
      name: 'gpunet_node_heartbeat_age_seconds',
      help: 'Time since placement last heard from each registered node (its last heartbeat, else its registration).',
      labelNames: ['node'],
      collect() {
        if (!view.state) return;
        this.reset();
        const now = clock.now().getTime();
        for (const n of registeredNodes(view.state)) {
          const seen = n.lastHeartbeatAt ?? n.registrationSeenAt;
          if (seen !== undefined) this.set({ node: n.nodeId }, Math.max(0, (now - seen) / 1000));
        }
      },
    });
    metrics.gauge({
      name: 'gpunet_nodes',
      help: 'Nodes placement knows, by state (up: registered and not lost; lost).',
      labelNames: ['state'],
      collect() {
        if (!view.state) return;
        let up = 0;
        let lost = 0;
        for (const n of view.state.nodes.values()) {
          if (!n.registered) continue;
          if (n.lostAt) lost++;
          else up++;
        }
        this.set({ state: 'up' }, up);
        this.set({ state: 'lost' }, lost);
      },
    });
  }

  /** The state the gauges read (the scheduler's, set once it exists). */
  watch(state: PlacementState, options: PlanOptions = {}): void {
    this.view.state = state;
    this.view.options = options;
  }
}
