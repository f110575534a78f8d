/**
 * Audit: what ran, how long, on what, what came back and what it cost, per job, across every
 * service's streams; and the record of every audit query (who asked what, when).
 *
 * The ledger answers the queries from its audit projection over the whole event store
 * (docs/decisions/0006-audit-projection-in-ledger.md); people reach them through intake
 * (`GET /v1/audit/jobs`, `GET /v1/audit/jobs/{jobId}`), which fills `requester` from the API key.
 */
import { z } from 'zod';
import { OutputFile } from './events/data.js';
import { UsageRecorded } from './events/ledger.js';
import { fieldError, strictObject } from './issues.js';
import { CallerPrincipal } from './principal.js';
import { JobSpec } from './job-spec.js';
import { defineEvent, defineQuery } from './message.js';
import { AttemptId, ByteCount, Currency, DecimalString, DurationMs, GpuIndices, GpuModel, JobId, JobOutcome, Micros, NodeId, Sha256, TeamId, Timestamp } from './primitives.js';

/** Which audit query was asked. */
export const AUDIT_QUERY_NAMES = ['AuditJobs', 'AuditJob'] as const;

/** How a job ended, as the audit reports it: a run outcome, or why it never ran. */
export const AUDIT_OUTCOMES = ['completed', 'failed', 'timeout', 'cancelled', 'node_lost', 'deadline', 'rejected', 'staging_failed', 'open'] as const;
export type AuditOutcome = (typeof AUDIT_OUTCOMES)[number];
const outcomeError = fieldError('outcome', `must be one of ${AUDIT_OUTCOMES.join(', ')}`, 'write e.g. `completed`');
export const AuditOutcome = z
  .enum(AUDIT_OUTCOMES, { error: outcomeError })
  .describe(
    'The last attempt\'s outcome (`completed`, `failed`, `timeout`, `cancelled`, `node_lost`); `deadline` or `cancelled` for a job withdrawn from the queue; ' +
      '`rejected` or `staging_failed` for a job that never ran; `open` while the job is not over.',
  );

/** Who asks an audit query: the caller's principal, set by intake (see {@link CallerPrincipal}). */
export const AuditRequester = CallerPrincipal;
export type AuditRequester = z.output<typeof AuditRequester>;

const timeError = (field: string) => fieldError(field, 'must be a UTC ISO-8601 time ending in `Z`', 'write e.g. `2026-06-01T00:00:00Z`');
/** Most jobs in one answer: a page of summaries stays well under NATS's default 1 MB payload. */
export const AUDIT_PAGE_MAX = 1000;
const limitError = fieldError('limit', `must be a whole number from 1 to ${AUDIT_PAGE_MAX}`, 'write e.g. `limit: 500`, and page with `offset`');
const offsetError = fieldError('offset', 'must be a whole number ≥ 0', 'write e.g. `offset: 500` for the second page of 500');

export const AuditJobsFilter = z
  .object({
    team: TeamId.optional().describe('Only this team\'s jobs. A team key may name only its own team.'),
    from: z.iso.datetime({ error: timeError('from') }).optional().describe('Only jobs submitted at or after this time.'),
    to: z.iso.datetime({ error: timeError('to') }).optional().describe('Only jobs submitted before this time.'),
    nodeId: NodeId.optional().describe('Only jobs with an attempt on this node.'),
    gpuModel: GpuModel.optional().describe('Only jobs with an attempt on this GPU model.'),
    outcome: AuditOutcome.optional().describe('Only jobs that ended this way.'),
    limit: z
      .int({ error: limitError })
      .min(1, { error: limitError })
      .max(AUDIT_PAGE_MAX, { error: limitError })
      .default(500)
      .describe(`Most jobs in this answer, oldest first, 1–${AUDIT_PAGE_MAX}. Default 500.`),
    offset: z.int({ error: offsetError }).min(0, { error: offsetError }).default(0).describe('Matching jobs to skip (oldest first): the next page starts at offset + limit. Default 0.'),
  })
  .describe('Which jobs to list; every given field must match.');
export type AuditJobsFilter = z.output<typeof AuditJobsFilter>;

export const AuditJobs = strictObject({ requester: AuditRequester, filter: AuditJobsFilter }, 'AuditJobs').describe(
  'Internal: list jobs for an audit, across every service\'s events. Recorded as AuditQueried before it is answered.',
);
export type AuditJobs = z.output<typeof AuditJobs>;

export const AuditJob = strictObject({ requester: AuditRequester, jobId: JobId }, 'AuditJob').describe(
  'Internal: one job\'s full audit. Recorded as AuditQueried before it is answered.',
);
export type AuditJob = z.output<typeof AuditJob>;

const ms = (what: string) => DurationMs.optional().describe(what);

export const AuditDurations = z
  .object({
    stagingMs: ms('Inputs staged by storage (JobSubmitted → InputsStaged) plus, per attempt, the agent fetching them (JobPlaced → ComputeHeld). Never billed.'),
    queuedMs: ms('Waiting for GPUs: InputsStaged → first JobPlaced, plus JobRequeued → next JobPlaced. Never billed.'),
    heldMs: ms('GPUs held: ComputeHeld → JobFinished, summed over attempts (agent clock). The billable span, before waivers; contains runningMs.'),
    runningMs: ms('The process ran: JobStarted → JobFinished, summed over attempts (agent clock).'),
    outputMs: ms('Outputs stored: JobFinished → OutputsStored. Never billed.'),
    releaseMs: ms('GPUs freed: OutputsStored (or JobFinished) → ComputeReleased. Never billed.'),
  })
  .describe('Integer milliseconds per phase; a phase that did not happen (yet) is absent. Spans across services mix clocks (placement vs agent); negative spans count 0.');
export type AuditDurations = z.output<typeof AuditDurations>;

export const AuditWork = z
  .object({
    spec: JobSpec.describe('The spec as JobSubmitted recorded it.'),
    specSha256: Sha256.describe('sha256 of the spec as canonical JSON (keys sorted at every level).'),
    inputs: z.array(z.object({ name: z.string().describe('Input name from the spec.'), sha256: Sha256, size: ByteCount })).describe('Inputs as storage verified them (InputsStaged).'),
    workDigest: z
      .string()
      .regex(/^sha256:[0-9a-f]{64}$/)
      .optional()
      .describe('What the agent ran, as JobStarted.work recorded it: `sha256:` of the script file, or the image digest the runtime resolved (the last attempt that recorded one).'),
    workKind: z.enum(['script', 'container']).optional().describe('`script` or `container`, as JobStarted.work recorded it.'),
    runtime: z.string().optional().describe('Container runtime that ran the image, when one did.'),
    digestSource: z
      .enum(['recorded', 'derived'])
      .describe('`recorded`: an agent recorded what ran (JobStarted.work); `derived`: none did, only the spec digest and staged inputs tell what was asked to run.'),
    note: z.string().optional().describe('What the digest does and does not prove.'),
  })
  .describe('What ran.');
export type AuditWork = z.output<typeof AuditWork>;

export const AuditAttempt = z
  .object({
    attemptId: AttemptId,
    attempt: z.int().min(1).describe('Attempt number, 1 first.'),
    nodeId: NodeId.describe('Node of rank 0.'),
    nodes: z.array(z.object({ nodeId: NodeId, gpuIndices: GpuIndices }).describe('One node and its GPU ids.')).describe('Every node of the attempt with its GPU ids (one unless a gang).'),
    gpuIndices: GpuIndices.describe('GPU ids on the rank-0 node.'),
    gpuModel: GpuModel,
    gpus: z.int().min(0).describe('GPUs held over every node (0 when never held).'),
    placedAt: Timestamp.describe('When placement chose the node(s).'),
    heldAt: Timestamp.optional().describe('When the GPUs were held (agent clock; the earliest node of a gang).'),
    startedAt: Timestamp.optional().describe('When the process started.'),
    finishedAt: Timestamp.optional().describe('When the attempt ended.'),
    releasedAt: Timestamp.optional().describe('When the last node freed its GPUs.'),
    outcome: JobOutcome.optional().describe('How the attempt ended.'),
    workDigest: z.string().optional().describe('What this attempt ran (JobStarted.work.digest), when its agent recorded it.'),
    exitCode: z.int().nullable().optional().describe('Exit code, null when killed by a signal; absent until finished.'),
    durations: AuditDurations,
  })
  .describe('One run attempt.');
export type AuditAttempt = z.output<typeof AuditAttempt>;

export const AuditCost = z
  .object({
    lines: z.array(UsageRecorded).describe('The ledger\'s usage lines of the job, one per attempt that held compute.'),
    totals: z.array(z.object({ currency: Currency, amountMicros: Micros })).describe('Sum per currency.'),
    billableMs: DurationMs.describe('Sum of the lines\' billableMs.'),
  })
  .describe('What it cost.');
export type AuditCost = z.output<typeof AuditCost>;

export const AuditTimelineEntry = z
  .object({
    position: z.string().regex(/^\d+$/).describe('Global position in the event store (decimal).'),
    streamId: z.string().describe('The stream it is in, e.g. `intake-job-<jobId>`.'),
    revision: z.string().regex(/^\d+$/).describe('Revision in its stream (decimal).'),
    eventId: z.string().describe('The event\'s id.'),
    type: z.string().describe('Event type, e.g. `JobStarted`.'),
    producer: z.string().describe('The service that recorded it.'),
    at: Timestamp.describe('When the producer observed or decided it (its clock).'),
    recordedAt: Timestamp.describe('When the store recorded it.'),
    attemptId: AttemptId.optional(),
    nodeId: NodeId.optional(),
  })
  .describe('One event of the job.');
export type AuditTimelineEntry = z.output<typeof AuditTimelineEntry>;

export const AuditJobSummary = z
  .object({
    jobId: JobId,
    team: TeamId,
    name: z.string().optional().describe('The spec\'s label, if any.'),
    submittedAt: Timestamp,
    outcome: AuditOutcome,
    attempts: z.int().min(0).describe('Run attempts placed.'),
    nodes: z.array(NodeId).describe('Nodes of every attempt, in order of first use.'),
    gpuModels: z.array(GpuModel).describe('GPU models of every attempt.'),
    gpus: z.int().min(1).describe('GPUs requested.'),
    durations: AuditDurations,
    outputs: z
      .object({ files: z.int().min(0).describe('Number of files.'), totalBytes: ByteCount })
      .describe('Stored output files and their total size (0 until stored).'),
    billableMs: DurationMs.describe('Sum of the usage lines\' billableMs.'),
    totals: z.array(z.object({ currency: Currency, amountMicros: Micros })).describe('Charge per currency.'),
  })
  .describe('One job of an audit list.');
export type AuditJobSummary = z.output<typeof AuditJobSummary>;

const asOf = z.string().regex(/^\d+$/).describe('The answer holds every event up to this global position of the store (decimal).');
const queryEventId = z.string().describe('Id of the AuditQueried event that records this query.');

export const AuditJobsReply = z
  .object({
    jobs: z.array(AuditJobSummary).describe('Matching jobs, oldest submission first.'),
    total: z.int().min(0).describe('Matching jobs before offset and limit; more pages follow while offset + jobs.length < total.'),
    asOfPosition: asOf,
    recordedAs: queryEventId,
  })
  .describe('Jobs for an audit.');
export type AuditJobsReply = z.output<typeof AuditJobsReply>;

export const AuditJobReport = z
  .object({
    jobId: JobId,
    team: TeamId,
    name: z.string().optional().describe('The spec\'s label, if any.'),
    submittedAt: Timestamp,
    submittedBy: z.string().optional().describe('Id of the API key that submitted it.'),
    outcome: AuditOutcome,
    work: AuditWork,
    durations: AuditDurations,
    attempts: z.array(AuditAttempt).describe('Run attempts, first first.'),
    outputs: z
      .object({
        files: z.array(OutputFile).describe('Stored output files.'),
        totalBytes: ByteCount,
        truncated: z.boolean().describe('Files were skipped at maxBytes.'),
        logs: z
          .array(z.object({ stream: z.string().describe('`stdout` or `stderr`.'), sha256: Sha256, size: ByteCount }))
          .describe('The run\'s captured stdout and stderr, stored like outputs.'),
      })
      .optional()
      .describe('What came back: files with size and sha256, and the captured logs (absent until OutputsStored).'),
    cost: AuditCost,
    ended: z
      .object({
        endedAt: Timestamp.describe('JobEnded.endedAt: when the ledger found the job over.'),
        eventId: z.string().describe('Id of the JobEnded event (its place is in `timeline`).'),
      })
      .optional()
      .describe('The job\'s JobEnded, once recorded: nothing more happened to it after; `outcome` is then its outcome (`staging_failed` for a failed staging).'),
    timeline: z.array(AuditTimelineEntry).describe('Every event of the job from every service, in store order.'),
  })
  .describe('Everything the event store says about one job.');
export type AuditJobReport = z.output<typeof AuditJobReport>;

export const AuditJobReply = z
  .object({
    job: AuditJobReport.nullable().describe('null when the store holds no such job (or, for a team key, none of its team).'),
    asOfPosition: asOf,
    recordedAs: queryEventId,
  })
  .describe('One job\'s audit.');
export type AuditJobReply = z.output<typeof AuditJobReply>;

export const AuditQueried = z.object({
  query: z.enum(AUDIT_QUERY_NAMES).describe('Which audit query.'),
  parameters: z.record(z.string(), z.unknown()).describe('What was asked: the filter of AuditJobs, `{ jobId }` of AuditJob.'),
  requestedBy: AuditRequester,
  correlationId: z.string().optional().describe('The request\'s correlation id, to find it in the logs.'),
  askedAt: Timestamp.describe('When the ledger took the query (its clock), before answering it.'),
  refused: z
    .string()
    .optional()
    .describe('Why the query was refused (e.g. a team key naming another team); absent when it was answered.'),
});
export type AuditQueried = z.output<typeof AuditQueried>;

// ── the chain's verification status ──────────────────────────────────────────────────────────

export const VerifyChain = strictObject(
  {
    full: z
      .boolean()
      .default(false)
      .describe('true: walk the whole store again (every link, every stream head, every signed digest). Default false: verify only what was appended since the last pass, from the heads that pass verified.'),
  },
  'VerifyChain',
).describe('Verify the event store\'s hash chain and signed heads now, and say up to which position it holds.');
export type VerifyChain = z.output<typeof VerifyChain>;

export const ChainStatus = z
  .object({
    verified: z.boolean().describe('True when every event up to `verifiedUpTo` links to its predecessor, every stream head holds and (with `signatures: checked`) the store reaches every signed head.'),
    checkedAt: Timestamp.describe('When this pass ended (the ledger\'s clock).'),
    pass: z.enum(['full', 'tail']).describe('`full`: the whole store walked this time; `tail`: only the events after the previous pass, from the stream heads it verified.'),
    verifiedUpTo: DecimalString.describe('Store position up to which the chain is verified: the head when verified, the position before the first bad one when not.'),
    headPosition: DecimalString.describe('The store\'s head when this pass started.'),
    events: z.int().min(0).describe('Events verified in all, from the first position to `verifiedUpTo`.'),
    checkedNow: z.int().min(0).describe('Events this pass read and verified.'),
    streams: z.int().min(0).describe('Streams in the store up to `verifiedUpTo`.'),
    durationMs: z.int().min(0).describe('How long this pass took.'),
    lastFullAt: Timestamp.nullable().describe('When the whole store was last walked (null: never, e.g. the last full pass failed).'),
    signatures: z.enum(['checked', 'unchecked']).describe('`checked`: the signed digests were checked with the network public key; `unchecked`: this ledger holds no key to check them with.'),
    latestSignedHead: z
      .object({
        sequence: z.int().min(1).describe('The digest\'s sequence number.'),
        position: DecimalString.describe('Store position it covers.'),
        signedAt: Timestamp.describe('When the notary signed it.'),
        publicKey: z.string().describe('NKey public key (ed25519) that signed it.'),
      })
      .nullable()
      .describe('The newest signed chain head digest (null: none recorded yet).'),
    unsignedAfter: DecimalString.optional().describe('Events after this position are not yet covered by a signed digest.'),
    firstBad: z
      .object({
        position: DecimalString.describe('The first store position where the chain does not hold.'),
        streamId: z.string().describe('Its stream.'),
        reason: z.string().describe('Why, e.g. `hash does not match the event and its predecessor: altered or inserted`.'),
      })
      .optional()
      .describe('Where and why the chain is broken; absent when verified.'),
  })
  .describe('The event store\'s verification status: up to which position its hash chain and signed heads hold, or where and why they do not.');
export type ChainStatus = z.output<typeof ChainStatus>;

export const auditEvents = [
  defineEvent({
    name: 'AuditQueried',
    version: 1,
    producers: ['ledger'],
    description: 'Someone asked an audit query: who (API key, team, role), what (query and parameters), when, and whether it was refused. Recorded before the answer is given.',
    schema: AuditQueried,
  }),
] as const;

export const auditQueries = [
  defineQuery({
    name: 'AuditJobs',
    version: 1,
    service: 'ledger',
    description: 'Jobs for an audit, filtered by team, time range, node, GPU model and outcome (behind `GET /v1/audit/jobs`).',
    schema: AuditJobs,
    replySchema: AuditJobsReply,
  }),
  defineQuery({
    name: 'AuditJob',
    version: 1,
    service: 'ledger',
    description: 'One job\'s full audit across every service: work, durations, nodes and GPUs, outputs, cost, timeline (behind `GET /v1/audit/jobs/{jobId}`).',
    schema: AuditJob,
    replySchema: AuditJobReply,
  }),
  defineQuery({
    name: 'VerifyChain',
    version: 1,
    service: 'ledger',
    description: 'The event store\'s hash chain and signed heads verified now, incrementally from the last pass unless `full` (behind `GET /v1/audit/chain`).',
    schema: VerifyChain,
    replySchema: ChainStatus,
  }),
] as const;
