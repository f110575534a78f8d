import { JOB_STATES } from '#contracts';
import { METRICS } from '#service-kit';
import { LATENCY_BUCKETS_SECONDS, type Histogram, type Metrics } from '#telemetry';
import { Inject, Injectable } from '@nestjs/common';
import { JobViewsFeed } from './job-views.feed.js';

/**
 * Intake's figures on `/metrics`: every job by its state as producers see it (the final states
 * are the outcomes: completed, failed, cancelled, …), counted in the job views table; how many
 * job records it holds in memory; and how long a submit takes, store append and read-your-writes
 * included.
 */
@Injectable()
export class IntakeMetrics {
  readonly submitSeconds: Histogram<'outcome'>;

  constructor(@Inject(METRICS) metrics: Metrics, feed: JobViewsFeed) {
    this.submitSeconds = metrics.histogram({
      name: 'gpunet_submit_seconds',
      help: 'Time intake takes to answer a submit (HTTP or NATS), by outcome (accepted, duplicate, refused).',
      labelNames: ['outcome'],
      buckets: LATENCY_BUCKETS_SECONDS,
    });
    metrics.gauge({
      name: 'gpunet_jobs',
      help: 'Jobs by state (submitted, staged, placed, running, finishing, and the outcomes), as intake\'s job views hold them.',
      labelNames: ['state'],
      async collect() {
        const counts = await feed.countsByState();
        for (const state of JOB_STATES) this.set({ state }, counts.get(state) ?? 0);
      },
    });
    metrics.gauge({
      name: 'gpunet_job_views_in_memory',
      help: 'Job records this intake holds in memory: jobs not final, and changes not yet written to the job views table. The rest are read from the table.',
      collect() {
        this.set(feed.cached);
      },
    });
  }
}
