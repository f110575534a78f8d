/**
 * Events of a job's life from submission to release: intake records the request, placement
 * chooses a node, the execution agent holds, runs and releases the GPUs.
 *
 * Billing reads two of them: `ComputeHeld.heldAt` → `JobFinished.finishedAt`, both stamped by
 * the same agent so clock skew between machines cancels out.
 */
import { z } from 'zod';
import { FieldIssue, withFix } from '../issues.js';
import { OutputFile } from './data.js';
import { JobSpec } from '../job-spec.js';
import { defineEvent } from '../message.js';
import {
  AttemptId,
  ByteCount,
  Currency,
  DurationMs,
  EstimateId,
  GpuCount,
  GpuIndices,
  GpuModel,
  HumanText,
  JobId,
  JobLimit,
  JobOutcome,
  Micros,
  NodeId,
  Sha256,
  TeamId,
  Timestamp,
} from '../primitives.js';

export const JobSubmitted = z.object({
  jobId: JobId,
  team: TeamId,
  spec: JobSpec,
  submittedAt: Timestamp.describe('When intake accepted the job.'),
  deadlineAt: Timestamp.optional().describe('The spec\'s deadline resolved to an instant at submission; absent when the spec has none.'),
  idempotencyKey: z.string().optional().describe('The `Idempotency-Key` the job was submitted with, if any.'),
  submittedBy: z.string().optional().describe('Id of the API key (not the key itself) that submitted the job.'),
  quote: z
    .object({
      expectedStart: Timestamp.describe('When the plan expected the job to start.'),
      expectedEnd: Timestamp.describe('Its expected start plus the time limit: the latest the plan expected it to end.'),
      quotedAt: Timestamp.describe('When placement gave the estimate.'),
      estimateId: EstimateId.optional().describe('The estimate the submit named (`gpunet submit --estimate`), recorded as EstimateGiven; absent for a deadline\'s check.'),
    })
    .optional()
    .describe(
      'The plan\'s estimate the job was accepted on: the estimate the submit named (`estimateId`, given by `gpunet estimate` before), else the one intake ' +
        'checked the deadline against (jobs with a deadline). With the job\'s actual start and end, the quote\'s error. Absent when neither was given, ' +
        'or when placement did not answer in time.',
    ),
});
export type JobSubmitted = z.output<typeof JobSubmitted>;

export const JOB_REJECTION_REASONS = ['invalid_spec', 'unsatisfiable', 'quota_exceeded', 'deadline_unreachable'] as const;
export const JobRejected = z.object({
  jobId: JobId,
  team: TeamId,
  reason: z
    .enum(JOB_REJECTION_REASONS)
    .describe(
      '`invalid_spec`: a rule beyond the schema failed; `unsatisfiable`: no node can ever meet the request; ' +
        '`quota_exceeded`: the team\'s limits; `deadline_unreachable`: cannot finish before the deadline.',
    ),
  message: HumanText.describe('What went wrong, for people.'),
  issues: z.array(FieldIssue).default([]).describe('Fields at fault, each with its fix.'),
  rejectedAt: Timestamp.describe('When the job was rejected.'),
});
export type JobRejected = z.output<typeof JobRejected>;

export const JobCancelRequested = z.object({
  jobId: JobId,
  team: TeamId,
  reason: HumanText.optional().describe('Why, as the requester gave it.'),
  requestedBy: z.string().optional().describe('Id of the API key (not the key itself) that asked.'),
  requestedAt: Timestamp.describe('When intake accepted the request.'),
});
export type JobCancelRequested = z.output<typeof JobCancelRequested>;

/** One node of a multi-node gang. */
export const GangMember = z.object({
  nodeId: NodeId,
  gpuIndices: GpuIndices,
});
export type GangMember = z.output<typeof GangMember>;

function sameIndices(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

export const JobPlaced = z
  .object({
    jobId: JobId,
    attemptId: AttemptId,
    attempt: z.int().min(1).describe('Attempt number, 1 for the first run, +1 per requeue.'),
    nodeId: NodeId,
    gpuIndices: GpuIndices,
    gpuModel: GpuModel,
    placedAt: Timestamp.describe('When placement chose the node.'),
    reason: z
      .string()
      .max(1000)
      .optional()
      .describe('Why this node among those that fit, when it is not just the first free one, e.g. that its cache already holds the job\'s inputs.'),
    nodes: z
      .array(GangMember)
      .min(2)
      .optional()
      .describe(
        'A multi-node gang: every node of the attempt in rank order, all of `gpuModel`. `nodes[0]` is `nodeId`/`gpuIndices` (rank 0, ' +
          'which collects the outputs). Absent when the attempt runs on one node. Each node\'s agent records its own ComputeHeld … ' +
          'ComputeReleased in its own attempt stream; all are placed at once, never some of them.',
      ),
    predictedRunMs: z
      .int()
      .min(1)
      .optional()
      .describe('Placement\'s run-time prediction for this attempt (the mean of the team\'s last similar runs, at most the time limit): when it expects the job to end. The time limit still stops it.'),
    quote: z
      .object({
        expectedStart: Timestamp.describe('The start placement quoted.'),
        quotedAt: Timestamp.describe('When it first quoted it (to `gpunet status` or an estimate of this job).'),
        expectedEnd: Timestamp.optional().describe('The end it quoted with it, when it quoted one (the estimate the job was submitted on, or its deadline accepted on).'),
      })
      .optional()
      .describe('The first start time placement quoted for this job, if it quoted one: with `placedAt`, the quote\'s error.'),
    deadlineNote: z
      .string()
      .max(1000)
      .optional()
      .describe('Set when the job has a deadline that running to its time limit from now would miss: the facts of why (when it starts, against what was quoted).'),
    borrowed: z
      .literal(true)
      .optional()
      .describe('The attempt takes its team past its concurrent GPU quota for the model, on GPUs no other team with quota room was waiting for (borrowing, decision 0027). Absent: within quota.'),
  })
  .refine((e) => e.nodes === undefined || (e.nodes[0]!.nodeId === e.nodeId && sameIndices(e.nodes[0]!.gpuIndices, e.gpuIndices)), {
    error: withFix('nodes[0] must be the node and GPUs named by nodeId and gpuIndices', 'list the rank-0 node first'),
    path: ['nodes', 0],
  })
  .refine((e) => e.nodes === undefined || new Set(e.nodes.map((n) => n.nodeId)).size === e.nodes.length, {
    error: withFix('a node appears twice in nodes', 'list each node of the gang once, with all its GPUs'),
    path: ['nodes'],
  });
export type JobPlaced = z.output<typeof JobPlaced>;

export const ComputeHeld = z
  .object({
    jobId: JobId,
    attemptId: AttemptId,
    nodeId: NodeId,
    gpuIndices: GpuIndices,
    gpuModel: GpuModel,
    gpus: GpuCount.describe('Number of GPUs held; equals the length of gpuIndices.'),
    heldAt: Timestamp.describe('Agent clock: when the GPUs were reserved for the job. Billing starts here.'),
  })
  .refine((e) => e.gpus === e.gpuIndices.length, { error: withFix('gpus must equal the number of gpuIndices', 'set gpus to gpuIndices.length'), path: ['gpus'] });
export type ComputeHeld = z.output<typeof ComputeHeld>;

export const JobStarted = z.object({
  jobId: JobId,
  attemptId: AttemptId,
  nodeId: NodeId,
  startedAt: Timestamp.describe('Agent clock: when the job\'s process started.'),
  resumedFromCheckpoint: z.int().min(1).optional().describe('Sequence of the checkpoint this attempt resumed from, if any.'),
  work: z
    .object({
      kind: z.enum(['script', 'container']).describe('What ran: a script or a container image.'),
      digest: z
        .string()
        .regex(/^sha256:[0-9a-f]{64}$/)
        .describe('For the audit: `sha256:` of the script file that ran, or the image digest the container runtime resolved.'),
      runtime: z.string().optional().describe('Container runtime that ran the image, e.g. `docker`; absent for scripts.'),
      image: z.string().max(512).optional().describe('The image reference the job asked for (for people); `digest` is what ran. Absent for scripts.'),
      archive: Sha256.optional().describe('sha256 of the image archive staged and loaded for it (`work.archive`), when the image came as data.'),
      gpus: z
        .object({
          mode: z
            .enum(['cdi', 'devices', 'slots'])
            .describe('How the held GPUs reached the container: NVIDIA CDI names, `/dev/nvidia*` device nodes, or declared slots in `CUDA_VISIBLE_DEVICES` only.'),
          devices: z.array(z.string().max(256)).max(1024).describe('What was handed over: CDI names (`nvidia.com/gpu=0`), device paths, or slot indices.'),
        })
        .optional()
        .describe('The GPUs handed to a container and how; absent for scripts and jobs without GPUs.'),
    })
    .optional()
    .describe('What exactly ran, by content address.'),
});
export type JobStarted = z.output<typeof JobStarted>;

export const JobCheckpointed = z.object({
  jobId: JobId,
  attemptId: AttemptId,
  nodeId: NodeId,
  sequence: z.int().min(1).describe('Checkpoint number within the job, increasing across attempts.'),
  sha256: Sha256.optional().describe('Content address of the stored checkpoint (folder manifest), once stored.'),
  size: ByteCount.optional().describe('Total bytes of the checkpoint files.'),
  checkpointedAt: Timestamp.describe('Agent clock: when the checkpoint was taken.'),
});
export type JobCheckpointed = z.output<typeof JobCheckpointed>;

export const JobFinished = z.object({
  jobId: JobId,
  attemptId: AttemptId,
  nodeId: NodeId,
  outcome: JobOutcome,
  exitCode: z.int().nullable().describe('Exit code of the job\'s process; null when it died by a signal or never ran.'),
  signal: z.string().nullable().default(null).describe('Signal that ended the process (e.g. `SIGKILL`), or null.'),
  message: HumanText.optional().describe('Detail for people, e.g. why it could not start.'),
  finishedAt: Timestamp.describe('Agent clock: when the process ended (or the attempt was given up). Billing stops here.'),
  limit: JobLimit.optional().describe('Set when the agent stopped the job at one of its caps: `disk_limit` (it filled more disk than its `resources.disk`), `memory_limit` (the kernel killed a process at its memory cap).'),
  peerEnded: NodeId.optional().describe(
    'Multi-node gangs only: the agent stopped this node\'s part because the part on that node ended first (rank 0 ended, a part failed, ' +
      'or its node was lost). Such a part does not decide the attempt\'s outcome.',
  ),
});
export type JobFinished = z.output<typeof JobFinished>;

export const JOB_REQUEUE_REASONS = ['node_lost', 'agent_restarted', 'preempted', 'retry'] as const;
export const JobRequeued = z.object({
  jobId: JobId,
  previousAttemptId: AttemptId.describe('The attempt that did not finish.'),
  reason: z.enum(JOB_REQUEUE_REASONS).describe('Why the job goes back to the queue; `retry`: it failed with an exit code its retry policy names.'),
  nextAttempt: z.int().min(2).describe('Number of the attempt to come.'),
  requeuedAt: Timestamp.describe('When the job went back to the queue.'),
});
export type JobRequeued = z.output<typeof JobRequeued>;

export const ComputeReleased = z.object({
  jobId: JobId,
  attemptId: AttemptId,
  nodeId: NodeId,
  gpuIndices: GpuIndices,
  releasedAt: Timestamp.describe('Agent clock: when the GPUs became free again.'),
});
export type ComputeReleased = z.output<typeof ComputeReleased>;

export const JOB_WITHDRAWAL_OUTCOMES = ['cancelled', 'deadline'] as const;
export const JobQuoted = z.object({
  jobId: JobId,
  expectedStart: Timestamp.describe('The start placement quoted: the live plan\'s expected start for the waiting job.'),
  quotedAt: Timestamp.describe('When it was quoted (shown by `gpunet status`, the queue API or the console).'),
});
export type JobQuoted = z.output<typeof JobQuoted>;

export const JobWithdrawn = z.object({
  jobId: JobId,
  team: TeamId,
  outcome: z
    .enum(JOB_WITHDRAWAL_OUTCOMES)
    .describe('`cancelled`: the team cancelled it while it was queued (or waiting to run again); `deadline`: its deadline passed before it could run.'),
  message: HumanText.optional().describe('Detail for people.'),
  withdrawnAt: Timestamp.describe('When placement took the job out of the queue.'),
});
export type JobWithdrawn = z.output<typeof JobWithdrawn>;

/** How a job ended for good: an attempt's outcome, or one of the ways a job ends without running. */
export const JOB_END_OUTCOMES = ['completed', 'failed', 'timeout', 'cancelled', 'node_lost', 'deadline', 'rejected'] as const;
export const JobEnded = z.object({
  jobId: JobId,
  team: TeamId,
  outcome: z
    .enum(JOB_END_OUTCOMES)
    .describe(
      'The job\'s final outcome: its last attempt\'s (`completed`, `failed`, `timeout`, `cancelled`, `node_lost`), `cancelled` or `deadline` when it ' +
        'left the queue without running (JobWithdrawn), `failed` when its inputs could not be staged, `rejected` when it was never accepted for running.',
    ),
  reason: HumanText.optional().describe('Why, for people, when the outcome is not `completed` (the agent\'s, staging\'s or the rejection\'s message).'),
  attempts: z.int().min(0).describe('Run attempts made (0 when it never held compute).'),
  exitCode: z.int().nullable().optional().describe('Exit code of the last attempt; null when killed by a signal; absent when it never ran.'),
  billed: z
    .object({
      billableMs: DurationMs.describe('Billable time over every attempt and node, ms (GPU count not multiplied in).'),
      totals: z.array(z.object({ currency: Currency, amountMicros: Micros })).describe('Charge per currency over every usage line of the job; empty when nothing was billed.'),
    })
    .describe('What the ledger billed for the job, all attempts together: the sum of its `UsageRecorded` lines.'),
  outputs: z
    .object({
      files: z.array(OutputFile).describe('Stored output files, by content address.'),
      totalBytes: ByteCount.describe('Sum of their sizes.'),
      rejected: z.int().min(0).describe('How many files matching the globs were refused (listed in `OutputsStored`).'),
    })
    .nullable()
    .describe('The outputs stored for the job, or null when none were (it never ran, or its attempt stored none).'),
  endedAt: Timestamp.describe('When the job was found over: nothing more happens to it after this event.'),
});
export type JobEnded = z.output<typeof JobEnded>;

export const jobEvents = [
  defineEvent({
    name: 'JobSubmitted',
    version: 1,
    producers: ['intake'],
    description: 'Intake accepted a valid job spec from a team. The job waits for its inputs to be staged.',
    schema: JobSubmitted,
  }),
  defineEvent({
    name: 'JobRejected',
    version: 1,
    producers: ['intake', 'placement'],
    description: 'The job will never run (a business rule failed after the schema passed). Nothing is billed.',
    schema: JobRejected,
  }),
  defineEvent({
    name: 'JobCancelRequested',
    version: 1,
    producers: ['intake'],
    description: 'The team asked to cancel the job. A queued job ends at once; a running one is stopped by its agent.',
    schema: JobCancelRequested,
  }),
  defineEvent({
    name: 'JobPlaced',
    version: 1,
    producers: ['placement'],
    description: 'Placement chose a node and concrete GPU indices for one attempt of the job.',
    schema: JobPlaced,
  }),
  defineEvent({
    name: 'ComputeHeld',
    version: 1,
    producers: ['execution'],
    description: 'The agent reserved the GPUs for the attempt. Billable time starts at heldAt.',
    schema: ComputeHeld,
  }),
  defineEvent({
    name: 'JobStarted',
    version: 1,
    producers: ['execution'],
    description: 'The job\'s process started on the node.',
    schema: JobStarted,
  }),
  defineEvent({
    name: 'JobCheckpointed',
    version: 1,
    producers: ['execution'],
    description: 'The job wrote a checkpoint; a later attempt may resume from it.',
    schema: JobCheckpointed,
  }),
  defineEvent({
    name: 'JobFinished',
    version: 1,
    producers: ['execution'],
    description: 'The attempt ended, with its outcome and exit code. Billable time ends at finishedAt.',
    schema: JobFinished,
  }),
  defineEvent({
    name: 'JobRequeued',
    version: 1,
    producers: ['placement'],
    description: 'An attempt was lost through no fault of the job; the job waits for a new placement.',
    schema: JobRequeued,
  }),
  defineEvent({
    name: 'JobQuoted',
    version: 1,
    producers: ['placement'],
    description:
      'The first start placement showed for a waiting job (status, the queue API, the console): recorded when shown, so the quote survives a restart ' +
      'and, with the JobPlaced that follows, its error is known. Later quotes of the same job are not recorded; an accepted deadline\'s estimate is in JobSubmitted.',
    schema: JobQuoted,
  }),
  defineEvent({
    name: 'JobWithdrawn',
    version: 1,
    producers: ['placement'],
    description:
      'A queued job left the queue without running (cancelled, or its deadline passed): it never held compute, billed 0. Also a cancelled job whose ' +
      'last attempt was lost with its node or failed in a way its retry policy retries: it is not run again (earlier attempts stay billed as they were).',
    schema: JobWithdrawn,
  }),
  defineEvent({
    name: 'ComputeReleased',
    version: 1,
    producers: ['execution'],
    description: 'The agent freed the attempt\'s GPUs; they may be placed again.',
    schema: ComputeReleased,
  }),
  defineEvent({
    name: 'JobEnded',
    version: 1,
    producers: ['ledger'],
    description:
      'The job is over: nothing more will happen to it. Recorded exactly once per job (stream `ledger-job-<jobId>`) on every path — its last attempt ' +
      'ended and released (not lost, not retried), withdrawn from the queue (cancelled, deadline, or cancelled after a lost or retried attempt), ' +
      'staging failed, rejected — after every GPU of every attempt was released (or lost with its node), every usage line and the outputs, with ' +
      'its final outcome, attempts, billed total and outputs. A producer waits for this one event; the job\'s view answers with its final state once it is received.',
    schema: JobEnded,
  }),
] as const;
