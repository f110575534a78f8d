/**
 * Queries: synchronous reads by NATS request/reply on `gpunet.qry.<service>.<Name>`, answered
 * from the service's read model. Reads never change state. The reply is a
 * {@link ReplyEnvelope} around `replySchema`.
 *
 * Queries to intake (`GetJob`, `ListJobs`) are team-scoped by the `Authorization: Bearer <key>`
 * header, like commands. Queries to other services are internal: their subjects accept only intake
 * and the operator (nats-server's permissions, deploy/nats-permissions.yaml), and the ones that
 * depend on who asks carry a `principal` intake sets from the caller's key; people reach them through intake.
 */
import { z } from 'zod';
import { OutputFile, RejectedOutput } from './events/data.js';
import { JOB_REJECTION_REASONS } from './events/job.js';
import { UsageRecorded } from './events/ledger.js';
import { FieldIssue, fieldError, strictObject } from './issues.js';
import { JobSpec, JobSpecInput } from './job-spec.js';
import { EVERY_SERVICE, defineQuery } from './message.js';
import { AttemptId, ByteCount, Currency, DurationMs, EstimateId, GpuCount, GpuIndex, GpuIndices, GpuModel, JobId, JobLimit, JobOutcome, Micros, NodeId, TeamId, Timestamp } from './primitives.js';
import { CallerPrincipal } from './principal.js';
import { SERVICE_NAMES } from './subjects.js';
import { QuotaMonth, QuotaUsage } from './quotas.js';
import { BudgetFigures } from './budgets.js';

// ── job read model ────────────────────────────────────────────────────────────────────────

/** Where a job stands. The last six are final. */
export const JOB_STATES = [
  'submitted',
  'staged',
  'placed',
  'running',
  'finishing',
  'completed',
  'failed',
  'timeout',
  'cancelled',
  'node_lost',
  'deadline',
  'rejected',
] as const;
export type JobState = (typeof JOB_STATES)[number];
/** States a job never leaves. */
export const FINAL_JOB_STATES: readonly JobState[] = ['completed', 'failed', 'timeout', 'cancelled', 'node_lost', 'deadline', 'rejected'];

const stateError = fieldError('state', `must be one of ${JOB_STATES.join(', ')}`, 'write e.g. `running` or `completed`');
export const JobState = z
  .enum(JOB_STATES, { error: stateError })
  .describe(
    '`submitted`: waiting for inputs to stage; `staged`: waiting for a node; `placed`: GPUs chosen or held; `running`: the process runs; ' +
      '`finishing`: ended, outputs being stored and GPUs released; then final: the outcome (`completed`, `failed`, `timeout`, `cancelled`, ' +
      '`node_lost`, `deadline`) or `rejected`.',
  );

export const AttemptView = z
  .object({
    attemptId: AttemptId,
    attempt: z.int().min(1).describe('Attempt number, 1 for the first run.'),
    nodeId: NodeId,
    gpuIndices: GpuIndices,
    gpuModel: GpuModel,
    placedAt: Timestamp.describe('When placement chose the node.'),
    heldAt: Timestamp.optional().describe('When the agent held the GPUs (billing starts).'),
    startedAt: Timestamp.optional().describe('When the process started.'),
    finishedAt: Timestamp.optional().describe('When the attempt ended (billing stops).'),
    releasedAt: Timestamp.optional().describe('When the GPUs were freed.'),
    outcome: JobOutcome.optional(),
    exitCode: z.int().nullable().optional().describe('Exit code, null when killed by a signal; absent until finished.'),
    limit: JobLimit.optional().describe('Set when the agent stopped the attempt at one of its caps, e.g. `disk_limit`.'),
    message: z.string().optional().describe('What the agent said of how the attempt ended, e.g. why it could not start or which cap stopped it.'),
    predictedRunMs: DurationMs.optional().describe('Placement\'s run-time prediction for the attempt when it placed it (the time limit still stops it).'),
    deadlineNote: z.string().optional().describe('Set when, at placement, running to the time limit would pass the job\'s deadline: the facts of why, in the job\'s record.'),
    nodes: z
      .array(
        z
          .object({
            nodeId: NodeId,
            gpuIndices: GpuIndices,
            heldAt: Timestamp.optional().describe('When this node\'s agent held its GPUs (its billing starts).'),
            finishedAt: Timestamp.optional().describe('When this part ended (its billing stops).'),
            releasedAt: Timestamp.optional().describe('When this node\'s GPUs were freed.'),
            outcome: JobOutcome.optional(),
            exitCode: z.int().nullable().optional().describe('Exit code of this part, null when killed by a signal.'),
            peerEnded: NodeId.optional().describe('Set when this part was stopped because the part on that node ended first.'),
          })
          .describe('One node\'s part of a multi-node attempt.'),
      )
      .optional()
      .describe(
        'Multi-node attempts only: every part in rank order (rank 0 first). The attempt\'s nodeId/gpuIndices are rank 0\'s; its heldAt is the first part\'s hold, ' +
          'its finishedAt/outcome are decided once every part ended (see contracts/gang.ts), its releasedAt is the last part\'s release.',
      ),
  })
  .describe('One run attempt of the job.');
export type AttemptView = z.output<typeof AttemptView>;

export const JobView = z
  .object({
    jobId: JobId,
    team: TeamId,
    name: z.string().optional().describe('The spec\'s label, if any.'),
    state: JobState,
    outcome: JobOutcome.optional().describe('How the last attempt ended; absent until one did.'),
    exitCode: z.int().nullable().optional().describe('Exit code of the last attempt; null when killed by a signal.'),
    limit: JobLimit.optional().describe('Set when the last attempt was stopped at one of its caps, e.g. `disk_limit`.'),
    cancelRequested: z.boolean().describe('True once a cancel was accepted.'),
    spec: JobSpec,
    submittedAt: Timestamp.describe('When intake accepted the job.'),
    deadlineAt: Timestamp.optional().describe('The deadline as an instant, if the spec has one.'),
    quote: z
      .object({
        expectedStart: Timestamp.describe('The start quoted.'),
        expectedEnd: Timestamp.optional().describe('The end quoted with it (the estimate the job was submitted on or its deadline accepted on: start plus the time limit).'),
        quotedAt: Timestamp.describe('When it was quoted.'),
        estimateId: EstimateId.optional().describe('The estimate the job was submitted on, when the submit named one.'),
      })
      .optional()
      .describe(
        'The first start quoted for the job, as recorded: the estimate it was submitted on or its deadline was accepted on (JobSubmitted), else the first start shown while it waited (JobQuoted). ' +
          'With the first attempt\'s placedAt and the last attempt\'s finishedAt, how far off it was.',
      ),
    updatedAt: Timestamp.describe('Time of the latest event applied to this view.'),
    attempts: z.array(AttemptView).describe('Run attempts, oldest first.'),
    outputs: z
      .object({
        files: z.array(OutputFile).describe('Stored output files.'),
        totalBytes: ByteCount.describe('Sum of their sizes.'),
        truncated: z.boolean().describe('Files were skipped at maxBytes.'),
        rejected: z.array(RejectedOutput).optional().describe('Files matching the globs that were refused (a symlink leaving the output directory, the size cap, …), each with why.'),
      })
      .optional()
      .describe('Stored outputs, once OutputsStored.'),
    ended: z
      .object({
        endedAt: Timestamp.describe('JobEnded.endedAt: when the job was found over.'),
        billed: z
          .object({
            billableMs: DurationMs.describe('Billable time over every attempt and node, ms.'),
            totals: z.array(z.object({ currency: Currency, amountMicros: Micros })).describe('Charge per currency; empty when nothing was billed.'),
          })
          .describe('What the ledger billed for the job, all attempts together.'),
      })
      .optional()
      .describe('Set once the job\'s JobEnded is recorded: nothing more happens to it, `state` is its final outcome and `outputs` its final outputs.'),
    rejection: z
      .object({
        reason: z.enum(JOB_REJECTION_REASONS).describe('Rejection reason, as in JobRejected.'),
        message: z.string().describe('What went wrong, for people.'),
        issues: z.array(FieldIssue).describe('Fields at fault, each with its fix.'),
      })
      .optional()
      .describe('Why the job was rejected, when it was.'),
    timeline: z
      .array(
        z.object({
          type: z.string().describe('Event type, e.g. `JobStarted`.'),
          at: Timestamp.describe('The time the event states (agent clock for agent events).'),
          attemptId: AttemptId.optional(),
        }),
      )
      .describe('Every event of the job, in order.'),
  })
  .describe('Everything intake knows about one job.');
export type JobView = z.output<typeof JobView>;

export const JobSummary = z
  .object({
    jobId: JobId,
    team: TeamId.describe('The job\'s team (a compliance list holds every team\'s).'),
    name: z.string().optional().describe('The spec\'s label, if any.'),
    state: JobState,
    outcome: JobOutcome.optional(),
    gpus: z.int().min(1).describe('GPUs requested.'),
    gpuModel: GpuModel.optional().describe('GPU model requested, if any.'),
    nodeId: NodeId.optional().describe('Node of the last attempt, once placed.'),
    submittedAt: Timestamp.describe('When intake accepted the job.'),
    updatedAt: Timestamp.describe('Time of the latest event of the job.'),
  })
  .describe('One line of a job list.');
export type JobSummary = z.output<typeof JobSummary>;

// ── queries ────────────────────────────────────────────────────────────────────────────────

export const GetJob = strictObject({ jobId: JobId.describe('The job to read, e.g. `job_01jz8k4m2n`.') }, 'GetJob').describe(
  'Read one of the caller\'s jobs.',
);
export type GetJob = z.output<typeof GetJob>;

const limitError = fieldError('limit', 'must be a whole number from 1 to 500', 'write e.g. `limit: 50`');
const cursorError = fieldError('cursor', 'must be the `nextCursor` of a previous reply', 'pass `nextCursor` unchanged, or leave it out to start over');
export const ListJobs = strictObject(
  {
    states: z
      .array(JobState, { error: stateError })
      .optional()
      .describe('Only jobs in one of these states, e.g. `["running", "placed"]`. Default: all.'),
    limit: z.int({ error: limitError }).min(1, { error: limitError }).max(500, { error: limitError }).default(50).describe('Most jobs per page, 1–500. Default 50.'),
    cursor: z.string({ error: cursorError }).min(1, { error: cursorError }).max(512, { error: cursorError }).optional().describe('Where to continue: `nextCursor` of the previous page.'),
    gpuModel: GpuModel.optional().describe('Only jobs that requested this GPU model, or ran an attempt on it, e.g. `A100-80GB`.'),
    nodeId: NodeId.optional().describe('Only jobs with an attempt placed on this node, e.g. `node-1`.'),
    outcome: JobOutcome.optional().describe('Only jobs whose last attempt ended so, e.g. `failed`.'),
    submittedFrom: Timestamp.optional().describe('Only jobs submitted at or after this instant.'),
    submittedTo: Timestamp.optional().describe('Only jobs submitted before this instant.'),
    team: TeamId.optional().describe('Only this team\'s jobs. A key may name only its own team, unless it reads every team\'s audit (role `compliance`).'),
    allTeams: z.boolean({ error: fieldError('allTeams', 'must be true or false', 'write `allTeams: true` (query `allTeams=true`), or leave it out for your own team') }).optional().describe('Every team\'s jobs, with `countsByTeam` (role `compliance` only). Default: the caller\'s team.'),
  },
  'ListJobs',
).describe('List the caller\'s jobs, newest first.');
export type ListJobs = z.output<typeof ListJobs>;

export const ListJobsReply = z
  .object({
    jobs: z.array(JobSummary).describe('Jobs, newest first.'),
    nextCursor: z.string().nullable().describe('Pass as `cursor` for the next page; null on the last page.'),
    countsByState: z
      .array(z.object({ state: JobState, count: z.int().min(0).describe('Jobs in that state.') }))
      .optional()
      .describe('How many of the jobs that match every filter but `states` are in each state (states with none left out), over every page: the group-by of a jobs table.'),
    countsByTeam: z
      .array(z.object({ team: TeamId, count: z.int().min(0).describe('Jobs of that team.') }))
      .optional()
      .describe('With `allTeams`: how many of the jobs that match every filter but `team` and `states` are of each team (teams with none left out), over every page: the group-by team.'),
  })
  .describe('One page of jobs.');
export type ListJobsReply = z.output<typeof ListJobsReply>;

export const Health = strictObject({}, 'Health').describe('Ask a service whether it is healthy. The request is empty.');
export type Health = z.output<typeof Health>;

export const HEALTH_STATUSES = ['ok', 'degraded', 'failing'] as const;
export const HealthReply = z
  .object({
    service: z.enum(SERVICE_NAMES).describe('Which service answered.'),
    instance: z.string().optional().describe('Which process answered (e.g. the node id of an execution agent).'),
    status: z.enum(HEALTH_STATUSES).describe('`ok`; `degraded`: works with a problem (see checks); `failing`: cannot do its work.'),
    version: z.string().optional().describe('Software version of the service.'),
    startedAt: Timestamp.describe('When the process started.'),
    uptimeMs: DurationMs.describe('Time since start, in ms.'),
    checks: z
      .array(
        z.object({
          name: z.string().describe('What was checked, e.g. `event-store`.'),
          ok: z.boolean().describe('Whether it works.'),
          detail: z.string().optional().describe('What is wrong, when it does not.'),
        }),
      )
      .describe('Each dependency checked.'),
    checkedAt: Timestamp.describe('When this answer was made.'),
  })
  .describe('A service\'s health.');
export type HealthReply = z.output<typeof HealthReply>;

const fromToError = fieldError('from/to', 'must be a UTC ISO-8601 time ending in `Z`', 'write e.g. `2025-06-01T00:00:00Z`');
export const GetCharges = strictObject(
  {
    principal: CallerPrincipal.describe('Who asks, set by intake from the caller\'s key: the charges of `principal.team` (of every team only with `allTeams`). The subject accepts only intake.'),
    jobId: JobId.optional().describe('Only this job\'s charges (of the principal\'s team).'),
    from: z.iso.datetime({ error: fromToError }).optional().describe('Only attempts finished at or after this time.'),
    to: z.iso.datetime({ error: fromToError }).optional().describe('Only attempts finished before this time.'),
  },
  'GetCharges',
).describe('Usage lines and totals for a team, or for one job.');
export type GetCharges = z.output<typeof GetCharges>;

/** `gpunet.qry.intake.ListCharges`: the caller's own charges over NATS, as `GET /v1/charges`; the team comes from the API key. */
export const ListCharges = strictObject(
  {
    jobId: JobId.optional().describe('Only this job\'s charges (of the caller\'s team).'),
    from: z.iso.datetime({ error: fromToError }).optional().describe('Only attempts finished at or after this time.'),
    to: z.iso.datetime({ error: fromToError }).optional().describe('Only attempts finished before this time.'),
  },
  'ListCharges',
).describe('The caller\'s team\'s usage lines and totals, or one job\'s (role with `charges:read`).');
export type ListCharges = z.output<typeof ListCharges>;

export const GetChargesReply = z
  .object({
    team: TeamId,
    lines: z.array(UsageRecorded).describe('One line per attempt and node, in order of `finishedAt`, then attempt id, then node id: the same order on every replay.'),
    totals: z
      .array(z.object({ currency: Currency, amountMicros: Micros.describe('Sum of the lines\' amountMicros.') }))
      .describe('Sum per currency.'),
    billableMs: DurationMs.describe('Sum of the lines\' billableMs.'),
  })
  .describe('Charges, as the ledger recorded them.');
export type GetChargesReply = z.output<typeof GetChargesReply>;

const queueLimitError = fieldError('limit', 'must be a whole number from 1 to 1000', 'write e.g. `limit: 100`');
export const GetQueue = strictObject(
  {
    team: TeamId.optional().describe('Only this team\'s jobs (their place in line stays global). Default: every team.'),
    jobId: JobId.optional().describe('Only this job, e.g. to show its place in line.'),
    limit: z.int({ error: queueLimitError }).min(1, { error: queueLimitError }).max(1000, { error: queueLimitError }).default(100).describe('Most jobs listed, 1–1000. Default 100.'),
  },
  'GetQueue',
).describe('Internal: the jobs waiting for GPUs, in line, and the nodes with their free GPUs.');
export type GetQueue = z.output<typeof GetQueue>;

export const GetQueueReply = z
  .object({
    pending: z
      .array(
        z.object({
          jobId: JobId,
          team: TeamId,
          position: z.int().min(1).describe('Place in line, 1 first (submit order).'),
          reason: z
            .string()
            .describe(
              'Why it waits, a Slurm-style code: `Inputs` (not staged yet), `Resources` (no node has enough free GPUs of its model), `Priority` (higher jobs hold every reservation), `Reservation` (it would run into a higher job\'s reservation), `DeadlineUnreachable` (the plan\'s expected start plus its time limit is past its deadline), `BudgetExceeded` (its worst-case charge does not fit its team\'s budget this month: held under `hold`, or the budget was lowered; it starts when it fits), `QuotaExceeded` (its team is at its GPU quota for the model, concurrent or GPU-hours this month; see `reasonDetail`), `NoNodes`, `Requeue`, `Cancelling`; more may be added.',
            ),
          gpus: z.int().min(1).describe('GPUs requested.'),
          gpuModel: GpuModel.optional().describe('GPU model requested, if any.'),
          attempt: z.int().min(1).describe('Number of the attempt it waits for (2 or more after a requeue).'),
          submittedAt: Timestamp.describe('When intake accepted the job.'),
          rank: z.int().min(1).optional().describe('Its rank by priority among the placeable jobs in the current plan.'),
          expectedStart: Timestamp.optional().describe('When the current plan expects it to start, if it can tell (its reservation, or now).'),
          reasonDetail: z.string().max(1000).optional().describe('The figures behind the reason, when it has some, e.g. for `QuotaExceeded` the quota, what is in use and the GPU-hours used this month.'),
        }),
      )
      .describe('Waiting jobs, first in line first.'),
    totalPending: z.int().min(0).describe('All waiting jobs, before the filters and the limit.'),
    nodes: z
      .array(
        z.object({
          nodeId: NodeId,
          gpus: z.int().min(0).describe('GPUs the node offers.'),
          gpuModels: z.array(GpuModel).describe('Models among them.'),
          freeGpuIndices: z.array(GpuIndex).describe('GPUs held by no attempt.'),
          lastHeartbeatAt: Timestamp.optional().describe('When placement last heard from the node (placement clock).'),
        }),
      )
      .describe('Registered nodes, in placement order.'),
    at: Timestamp.describe('When this answer was made.'),
  })
  .describe('The queue as placement sees it.');
export type GetQueueReply = z.output<typeof GetQueueReply>;

// ── estimates before submitting ───────────────────────────────────────────────────────────

export const Estimate = strictObject(
  {
    team: TeamId.describe('Who would submit it (its fair share sets the priority). Intake fills it from the caller\'s API key.'),
    request: z
      .object({
        gpus: GpuCount,
        gpuModel: GpuModel.optional().describe('Required GPU model; absent: any model.'),
        timeLimitMs: DurationMs.min(1).describe('The job\'s time limit, in ms.'),
      })
      .describe('The request part of a job spec.'),
  },
  'Estimate',
).describe('Internal: where a job that is not submitted would land in the current plan (at the back of the queue, with its priority).');
export type Estimate = z.output<typeof Estimate>;

export const EstimateReply = z
  .object({
    runnable: z.boolean().describe('False when no node can ever run it, or its start cannot be predicted.'),
    reason: z
      .string()
      .describe(
        'When runnable: `StartsNow`, or why it would wait (`Resources`, `Reservation`, `Priority`). Otherwise: `NoNodes` (none registered), `NoNodeFits` (the nodes together do not have that many GPUs of one model), `Unpredictable` (behind work whose end is unknown), `QuotaExceeded` (the team is at its GPU quota for the model: concurrent GPUs without borrowing room, or GPU-hours this month).',
      ),
    expectedStart: Timestamp.optional().describe('When it is expected to start (when runnable).'),
    expectedEnd: Timestamp.optional().describe('Expected start plus the time limit: the latest it would end (when runnable).'),
    gpuModel: GpuModel.optional().describe('The GPU model it would run on (when runnable).'),
    nodes: z.int().min(1).optional().describe('Nodes it would run on (when runnable): more than 1 for a job larger than any node, which gets whole nodes.'),
    at: Timestamp.describe('The plan time this answer is for.'),
  })
  .describe('Where the job would land in the current plan.');
export type EstimateReply = z.output<typeof EstimateReply>;

export const Quote = strictObject(
  {
    gpuModel: GpuModel.optional().describe('The GPU model it would run on; absent: the highest rate of the list in force (the worst case of a job that may land on any model).'),
    gpus: GpuCount,
    durationMs: DurationMs.describe('Billable time to price, in ms.'),
    at: Timestamp.describe('When it would run: the price list in force then applies.'),
  },
  'Quote',
).describe('Internal: the price of GPUs of a model for a duration, by the ledger\'s price list and rounding.');
export type Quote = z.output<typeof Quote>;

export const QuoteReply = z
  .object({
    amountMicros: Micros.describe('gpus × durationMs × rate / 1 h, rounded half up once, as a usage line would be.'),
    currency: Currency,
    rateMicrosPerGpuHour: Micros.describe('The rate applied.'),
    priceListVersion: z.int().min(1).describe('The price list version the rate comes from.'),
  })
  .describe('A price, as the ledger would charge it.');
export type QuoteReply = z.output<typeof QuoteReply>;

export const EstimateJob = strictObject({ spec: JobSpecInput }, 'EstimateJob').describe(
  'Estimate a job without submitting it: the same spec as `SubmitJob`.',
);
export type EstimateJob = z.output<typeof EstimateJob>;

export const EstimateJobReply = EstimateReply.extend({
  deadlineAt: Timestamp.optional().describe('The spec\'s deadline as an instant, if it has one.'),
  charge: QuoteReply.optional()
    .describe('The expected charge at most: its whole time limit, priced by the ledger at the expected start (when runnable; billing counts only the time held).'),
  budget: BudgetFigures.optional().describe('When the team has a budget: the worst case it would reserve and what would remain this month after it.'),
  estimateId: EstimateId.optional().describe(
    'The estimate as recorded (EstimateGiven), when it has an expected start: name it at submit (`estimateId`, `gpunet submit --estimate`) to hold the job to it. ' +
      'Absent when the job cannot run, or when the store did not take the record (the answer stands, nothing can be held to it).',
  ),
}).describe('When the job would start and end, and what it would cost at most; nothing is submitted (the estimate itself is recorded).');
export type EstimateJobReply = z.output<typeof EstimateJobReply>;

// ── capacity forecast ─────────────────────────────────────────────────────────────────────

const hoursError = fieldError('hours', 'must be a whole number from 1 to 168', 'write e.g. `hours: 24`');
export const Capacity = strictObject(
  { hours: z.int({ error: hoursError }).min(1, { error: hoursError }).max(168, { error: hoursError }).default(24).describe('Hours ahead, 1–168. Default 24.') },
  'Capacity',
).describe('Free GPUs per GPU model per hour ahead, from the live plan.');
export type Capacity = z.output<typeof Capacity>;

const ModelCount = z.object({ gpuModel: GpuModel, gpus: z.int().min(0).describe('GPUs of that model.') });
export const CapacityReply = z
  .object({
    totals: z.array(ModelCount).describe('GPUs of each model on registered nodes.'),
    hours: z
      .array(
        z.object({
          start: Timestamp.describe('Start of the hour.'),
          free: z.array(ModelCount).describe('GPUs of each model that nothing in the plan touches during the whole hour (running work to its time limit, planned starts, reservations).'),
        }),
      )
      .describe('One entry per hour, from now.'),
    at: Timestamp.describe('The plan time this answer is for.'),
    quotes: z
      .object({
        since: Timestamp.describe('Start of the window: jobs started (or withdrawn at their deadline) since then count.'),
        started: z.int().min(0).describe('Jobs that started in the window with a start quoted before.'),
        medianStartErrorMs: z.int().describe('Median of (actual start − quoted start), ms: positive when jobs started later than quoted.').optional(),
        p90StartErrorMs: z.int().describe('90th percentile of the absolute start error, ms.').optional(),
        ended: z.int().min(0).default(0).describe('Jobs that completed in the window with an end quoted before (the estimate they were submitted on, or their deadline accepted on).'),
        medianEndErrorMs: z.int().describe('Median of (actual end − quoted end), ms: negative when jobs ended earlier than quoted (a quoted end runs to the time limit).').optional(),
        p90EndErrorMs: z.int().describe('90th percentile of the absolute end error, ms.').optional(),
        deadlinesAccepted: z.int().min(0).describe('Jobs with a deadline (accepted at submit) that ended in the window.'),
        deadlinesMet: z.int().min(0).describe('Of those, the ones that finished by their deadline.'),
      })
      .optional()
      .describe('How honest recent quotes were: start times quoted by status and estimates against the actual starts, and deadlines kept.'),
    quotas: z
      .object({ month: QuotaMonth, list: z.array(QuotaUsage).describe('By team, then model.') })
      .optional()
      .describe('GPU quotas per team and model with their use (the caller\'s team only, unless its key is `billing`); added by intake.'),
  })
  .describe('The capacity forecast.');
export type CapacityReply = z.output<typeof CapacityReply>;

export const queries = [
  defineQuery({
    name: 'GetJob',
    version: 1,
    service: 'intake',
    description: 'One job: state, spec, attempts, outputs and timeline.',
    schema: GetJob,
    replySchema: JobView,
  }),
  defineQuery({
    name: 'ListJobs',
    version: 1,
    service: 'intake',
    description: 'The caller\'s jobs, newest first, filtered by state, a page at a time.',
    schema: ListJobs,
    replySchema: ListJobsReply,
  }),
  defineQuery({
    name: 'Health',
    version: 1,
    service: EVERY_SERVICE,
    description: 'Every service answers on `gpunet.qry.<service>.Health` (build it with `querySubject`).',
    schema: Health,
    replySchema: HealthReply,
  }),
  defineQuery({
    name: 'GetCharges',
    version: 1,
    service: 'ledger',
    description: 'Usage lines and totals of a team, or of one job.',
    schema: GetCharges,
    replySchema: GetChargesReply,
  }),
  defineQuery({
    name: 'ListCharges',
    version: 1,
    service: 'intake',
    description: 'The caller\'s team\'s charges (usage lines and totals), or one job\'s; same as `GET /v1/charges`, team from the API key.',
    schema: ListCharges,
    replySchema: GetChargesReply,
  }),
  defineQuery({
    name: 'GetQueue',
    version: 1,
    service: 'placement',
    description: 'The jobs waiting for GPUs, in line with why each waits, and the nodes with their free GPUs.',
    schema: GetQueue,
    replySchema: GetQueueReply,
  }),
  defineQuery({
    name: 'Estimate',
    version: 1,
    service: 'placement',
    description: 'Where a job that is not submitted would land in the current plan: expected start and end, or why it cannot run.',
    schema: Estimate,
    replySchema: EstimateReply,
  }),
  defineQuery({
    name: 'Capacity',
    version: 1,
    service: 'placement',
    description: 'Free GPUs per GPU model per hour ahead, from the live plan (for `gpunet capacity` via `GET /v1/capacity`).',
    schema: Capacity,
    replySchema: CapacityReply,
  }),
  defineQuery({
    name: 'Quote',
    version: 1,
    service: 'ledger',
    description: 'The price of GPUs of a model for a duration at a time, as the ledger would charge it.',
    schema: Quote,
    replySchema: QuoteReply,
  }),
  defineQuery({
    name: 'EstimateJob',
    version: 1,
    service: 'intake',
    description: 'Estimate a job spec without submitting it: expected start, end and charge (same as `POST /v1/estimate`).',
    schema: EstimateJob,
    replySchema: EstimateJobReply,
  }),
] as const;
