/**
 * Deadlines in the queue: a job still waiting when its deadline passes can no longer finish in
 * time, so placement withdraws it (`JobWithdrawn`, outcome `deadline`). It never held compute, so
 * the ledger has nothing to bill: it costs 0. Pure: `now` is an argument.
 */
import type { EventData } from '#contracts';
import type { JobRecord } from './state.js';

/**
 * Has the deadline of this waiting job passed at `now` (epoch ms)? Only jobs that hold nothing are
 * withdrawn (waiting for inputs or queued); a job whose attempt was lost goes through its requeue,
 * and a running job is stopped by its time limit, not here.
 */
export function deadlinePassed(job: JobRecord, now: number): boolean {
  return job.deadlineAt !== undefined && now >= job.deadlineAt && (job.phase === 'queued' || job.phase === 'waiting_inputs');
}

/** The JobWithdrawn of a job whose deadline passed while it waited. */
export function deadlineWithdrawn(job: JobRecord, at: string): { type: 'JobWithdrawn'; data: EventData<'JobWithdrawn'> } {
  return {
    type: 'JobWithdrawn',
    data: {
      jobId: job.jobId,
      team: job.team,
      outcome: 'deadline',
      message: `Its deadline ${new Date(job.deadlineAt!).toISOString()} passed while it waited; it never held compute and costs nothing.`,
      withdrawnAt: at,
    },
  };
}
