import { Queries } from '#contracts';
import type { CancelJobReply, EventData, FieldIssue, JobSubmitted, JobView, ListJobs, ListJobsReply, SubmitJobReply } from '#contracts';
import { isRetryable, NotFoundError, TransientError, ValidationError } from '#errors';
import { IdempotencyConflictError, WrongExpectedVersionError, type EventStore, type RecordedEvent } from '#event-store';
import { CLOCK, EVENT_STORE, EVENT_WRITER, LOGGER, NATS_CONNECTION, newId, type Clock, type EventWriter } from '#service-kit';
import { requestQuery } from '#messaging';
import type { NatsConnection } from '@nats-io/transport-node';
import { Inject, Injectable } from '@nestjs/common';
import type { Logger } from 'pino';
import { allows, assertOwnJob, authorize, callerPrincipal } from '../auth/permissions.js';
import { ForbiddenError } from '../common/errors.js';
import type { RequestTrace } from '../common/trace.js';
import type { Principal } from '../auth/api-keys.js';
import { deadlineIssue, type DeadlinePolicy } from '../domain/deadline-check.js';
import { eventTime } from '../domain/job-view.js';
import { EstimateService } from '../estimate/estimate.service.js';
import { BudgetsService } from '../budgets/budgets.service.js';
import { decideCancel, decideSubmit, idempotentJobId, intakeStreamId, jobIdFromUuid, parseSubmission } from '../domain/submission.js';
import type { JobEventRecord, JobEvents, JobOutputs } from '#contracts';
import { IntakeMetrics } from './intake.metrics.js';
import { JobViewsFeed } from './job-views.feed.js';

/** How long a submit or cancel waits for the read model to include its own event (read-your-writes). */
const READ_YOUR_WRITES_MS = 2_000;
/** Appends a cancel retries when another cancel of the same job raced it. */
const CANCEL_ATTEMPTS = 3;
/** How long a read waits for the job views to reach the store's head before it answers 503 (retryable). */
const CATCH_UP_MS = 5_000;

/** The job views did not reach the store's head in time. Retryable. */
export class JobViewsBehindError extends TransientError {
  constructor(position: bigint, head: bigint) {
    super(`the job views are at store position ${position} and did not reach the head ${head} within ${CATCH_UP_MS} ms; ask again`);
  }
}

/** A submit's answer and whether it created the job (HTTP 201) or found it (200). */
export interface SubmitOutcome {
  reply: SubmitJobReply;
  created: boolean;
}

/**
 * The jobs use cases, one code path for HTTP and NATS: submit, cancel, read one, list, timeline.
 * Authorization is checked here, so no transport can skip it.
 */
@Injectable()
export class JobsService {
  constructor(
    @Inject(EVENT_STORE) private readonly store: EventStore,
    @Inject(EVENT_WRITER) private readonly writer: EventWriter,
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(LOGGER) private readonly logger: Logger,
    private readonly feed: JobViewsFeed,
    private readonly metrics: IntakeMetrics,
    private readonly estimates: EstimateService,
    private readonly budgets: BudgetsService,
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
  ) {}

  /**
   * Validates and records a job. `body` is a `SubmitJob` or a bare spec; `idempotencyKey` the
   * header. With a key the job id is derived from (team, key): a retry finds the job (duplicate),
   * another spec under the key is an IdempotencyConflictError. Nothing is appended for an invalid spec.
   * A new job with a deadline is checked against placement's current plan: one it cannot meet is a
   * ValidationError on `request.deadline` naming the earliest possible finish, or, with
   * `deadlinePolicy: 'warn'`, accepted with that issue in `warnings`. A submit naming an estimate
   * (`estimateId`) is held to it: it must be the team's, for the same request, unused by another
   * job (else a ValidationError on `estimateId`), and becomes the JobSubmitted's `quote`.
   */
  async submit(
    principal: Principal,
    body: unknown,
    idempotencyKey: string | undefined,
    trace: RequestTrace = {},
    options: { deadlinePolicy?: DeadlinePolicy } = {},
  ): Promise<SubmitOutcome> {
    const end = this.metrics.submitSeconds.startTimer();
    try {
      const outcome = await this.submitOnce(principal, body, idempotencyKey, trace, options);
      end({ outcome: outcome.created ? 'accepted' : 'duplicate' });
      return outcome;
    } catch (err) {
      end({ outcome: 'refused' });
      throw err;
    }
  }

  private async submitOnce(
    principal: Principal,
    body: unknown,
    idempotencyKey: string | undefined,
    trace: RequestTrace,
    options: { deadlinePolicy?: DeadlinePolicy },
  ): Promise<SubmitOutcome> {
    authorize(principal, 'jobs:submit');
    const now = this.clock.now();
    const submission = parseSubmission(body, idempotencyKey, now, principal.timeZone);
    const key = submission.idempotencyKey;
    const jobId = key === undefined ? jobIdFromUuid(newId()) : idempotentJobId(principal.team, key);
    const streamId = intakeStreamId(jobId);
    const decide = async () =>
      decideSubmit({
        jobId,
        team: principal.team,
        submission,
        submittedBy: principal.keyId,
        now,
        existing: key === undefined ? undefined : await this.readSubmitted(streamId),
      });

    let decision = await decide();
    const warnings: FieldIssue[] = [];
    if (decision.kind === 'append' && submission.estimateId !== undefined) await this.estimates.check(principal.team, submission.estimateId, submission.spec.request, jobId);
    if (decision.kind === 'append' && submission.deadlineAt !== undefined) {
      const { issue, quote } = await this.deadlineCheck(principal.team, submission, trace);
      if (issue && issue.path === 'request.deadline' && options.deadlinePolicy !== 'warn') throw new ValidationError(`invalid job spec: ${issue.path} ${issue.message}`, [issue]);
      if (issue) warnings.push(issue);
      // The estimate the deadline was accepted on is part of the job's record: its error is known when the job starts and ends.
      if (quote) decision = { ...decision, event: { ...decision.event, quote } };
    }
    // The budget decides before the job exists: its worst case is reserved (or the submit refused) first.
    const budget = decision.kind === 'append' ? await this.budgets.admit(principal.team, jobId, submission.spec.request, trace) : undefined;
    if (decision.kind === 'append') {
      try {
        // A named estimate is the job's promise (before a deadline's check): spent only now, when nothing else refuses the job.
        if (submission.estimateId !== undefined) {
          const quote = await this.estimates.use(principal.team, submission.estimateId, submission.spec.request, jobId, trace);
          decision = { ...decision, event: { ...decision.event, quote } };
        }
        const result = await this.writer.append(streamId, [{ type: 'JobSubmitted', data: decision.event }], {
          expectedRevision: 'no_stream',
          // The job id stands as the cause: the event id derives from it, so a retry racing the first submit cannot record a second one.
          cause: { eventId: jobId, metadata: { correlationId: trace.correlationId ?? newId() } },
        });
        await this.feed.waitFor(result.position, READ_YOUR_WRITES_MS);
        this.logger.info({ jobId, team: principal.team, keyId: principal.keyId, correlationId: trace.correlationId }, 'job submitted');
        const reply: SubmitJobReply = { jobId, state: (await this.feed.get(jobId))?.state ?? 'submitted', submittedAt: decision.event.submittedAt, duplicate: false, ...(budget ? { budget } : {}) };
        return { created: true, reply: warnings.length > 0 ? { ...reply, warnings } : reply };
      } catch (err) {
        // A concurrent submit with the same key won the race: answer as its retry.
        if (key === undefined || !(err instanceof WrongExpectedVersionError || err instanceof IdempotencyConflictError)) {
          if (budget) await this.budgets.withdraw(principal.team, jobId).catch((e: unknown) => this.logger.warn({ err: e, jobId }, 'budget reservation of an unrecorded job not withdrawn'));
          throw err;
        }
        decision = await decide();
        if (decision.kind === 'append') throw err;
      }
    }
    if (decision.kind === 'conflict') {
      throw new IdempotencyConflictError(
        `the Idempotency-Key \`${key}\` was already used by your team for job ${jobId} with a different spec; ` +
          'send the same spec to get that job back, or use a new key for a new job',
        this.writer.eventIdFor(jobId, 'JobSubmitted'),
      );
    }
    const original = decision.original;
    return { created: false, reply: { jobId, state: (await this.feed.get(jobId))?.state ?? 'submitted', submittedAt: original.submittedAt, duplicate: true } };
  }

  /**
   * The deadline's issue with the current plan, if any. When placement cannot answer (down, slow),
   * the job is accepted with a `request.deadlineCheck` warning rather than refused: placement's
   * own pass still ends it `deadline` if the deadline passes while it waits.
   */
  private async deadlineCheck(
    team: string,
    submission: { spec: { request: { gpus: number; gpuModel?: string | undefined; timeLimitMs: number } }; deadlineAt?: string | undefined },
    trace: RequestTrace,
  ): Promise<{ issue?: FieldIssue | undefined; quote?: JobSubmitted['quote'] }> {
    try {
      const quotedAt = this.clock.now().toISOString();
      const estimate = await this.estimates.placement(team, submission.spec.request, trace);
      const quote = estimate.runnable && estimate.expectedStart !== undefined && estimate.expectedEnd !== undefined ? { expectedStart: estimate.expectedStart, expectedEnd: estimate.expectedEnd, quotedAt } : undefined;
      return { issue: deadlineIssue(submission.deadlineAt!, estimate), ...(quote ? { quote } : {}) };
    } catch (err) {
      if (!isRetryable(err)) throw err;
      this.logger.warn({ err, team }, 'deadline not checked: placement did not answer the estimate');
      return { issue: { path: 'request.deadlineCheck', message: 'not checked: placement did not answer in time', fix: 'run `gpunet estimate` to see the expected finish' } };
    }
  }

  /** Asks to cancel a job; an ended job is left as it is (`cancelRequested: false`). */
  async cancel(principal: Principal, jobId: string, reason: string | undefined, trace: RequestTrace = {}): Promise<CancelJobReply> {
    authorize(principal, 'jobs:cancel');
    const streamId = intakeStreamId(jobId);
    for (let attempt = 1; ; attempt++) {
      const events = await this.store.readStream(streamId);
      const submitted = this.submittedOf(events);
      if (!submitted) throw new NotFoundError(`job ${jobId} does not exist`);
      assertOwnJob(principal, submitted);
      const decision = decideCancel({
        submitted,
        alreadyRequested: events.some((e) => e.type === 'JobCancelRequested'),
        state: (await this.feed.get(jobId))?.state,
        reason,
        requestedBy: principal.keyId,
        now: this.clock.now(),
      });
      if (decision.kind === 'noop') return { jobId, state: (await this.feed.get(jobId))?.state ?? 'submitted', cancelRequested: decision.cancelRequested };
      try {
        const result = await this.writer.append(streamId, [{ type: 'JobCancelRequested', data: decision.event }], {
          expectedRevision: events.at(-1)!.revision,
          ...(trace.correlationId ? { correlationId: trace.correlationId } : {}),
        });
        await this.feed.waitFor(result.position, READ_YOUR_WRITES_MS);
        this.logger.info({ jobId, team: principal.team, keyId: principal.keyId, correlationId: trace.correlationId }, 'job cancel requested');
        return { jobId, state: (await this.feed.get(jobId))?.state ?? 'submitted', cancelRequested: true };
      } catch (err) {
        // Another cancel of this job landed first: look again (it will usually be a no-op now).
        if (!(err instanceof WrongExpectedVersionError) || attempt >= CANCEL_ATTEMPTS) throw err;
      }
    }
  }

  /**
   * One of the caller's jobs, as of the store's head when asked: read-your-writes for any event the
   * caller has already received (from the feed, the bus, or another intake), however far behind
   * this intake's views were — a JobEnded seen means a final view with its outputs.
   */
  async get(principal: Principal, jobId: string): Promise<JobView> {
    authorize(principal, 'jobs:read');
    await this.current();
    return this.own(principal, jobId);
  }

  /**
   * A job's facts (its view, its events, its outputs' names, sizes and sha256) as {@link get}
   * gives them, for the caller's own job or, for a key that reads every team's audit
   * (compliance), any team's: the same facts the audit answers, so the jobs table's rows open.
   * Logs, output bytes, the feed, cancel stay the team's own.
   */
  async facts(principal: Principal, jobId: string, trace: RequestTrace = {}): Promise<JobView> {
    const anyTeam = allows(principal, 'audit:read-all-teams');
    authorize(principal, 'jobs:read');
    await this.current();
    const view = await this.view(principal, jobId, anyTeam);
    if (view.team !== principal.team) {
      // Another team's job is an audit question: the ledger records it (AuditQueried) before it is answered.
      const q = Queries.AuditJob;
      await requestQuery(this.nc, q.subject, { requester: callerPrincipal(principal, true), jobId }, { request: q.schema, response: q.replySchema }, trace);
    }
    return view;
  }

  /**
   * One of the caller's jobs as the views hold it now (no catching up): for checking that a job is
   * the caller's before serving something else of it. 404 unknown, 403 another team's.
   */
  async own(principal: Principal, jobId: string): Promise<JobView> {
    authorize(principal, 'jobs:read');
    return this.view(principal, jobId, false);
  }

  /** The job's view as held now: 404 unknown, 403 another team's unless `anyTeam`. */
  private async view(principal: Principal, jobId: string, anyTeam: boolean): Promise<JobView> {
    const view = await this.feed.get(jobId);
    if (!view) throw new NotFoundError(`job ${jobId} does not exist`);
    if (!anyTeam) assertOwnJob(principal, view);
    return view;
  }

  /** A page of the caller's jobs, newest first, as of the store's head when asked. */
  async list(principal: Principal, query: ListJobs): Promise<ListJobsReply> {
    authorize(principal, 'jobs:read');
    // Another team's jobs only for a key that reads every team's audit (compliance): the list is
    // what the audit answers too, in the table's shape.
    const everyTeam = allows(principal, 'audit:read-all-teams');
    if ((query.allTeams || (query.team !== undefined && query.team !== principal.team)) && !everyTeam) {
      const asked = query.allTeams ? 'every team\'s jobs' : `the jobs of team ${query.team}`;
      throw new ForbiddenError(`API key \`${principal.keyId}\` (role ${principal.role}) lists team ${principal.team}'s jobs only and may not list ${asked}; leave out \`team\` and \`allTeams\`, or use a key with role compliance`);
    }
    await this.current();
    return this.feed.list(query, query.allTeams ? { allTeams: true } : { team: query.team ?? principal.team });
  }

  /**
   * Waits until the views hold everything the store held when called (one read of the store, not a
   * poll interval: see StoreFollower.waitFor). JobViewsBehindError (503) after CATCH_UP_MS.
   */
  private async current(): Promise<void> {
    const head = await this.store.headPosition();
    if (!(await this.feed.waitFor(head, CATCH_UP_MS))) throw new JobViewsBehindError(this.feed.position, head);
  }

  /** Every event of one of the caller's jobs, from every service, in store order. */
  async events(principal: Principal, jobId: string): Promise<JobEvents> {
    await this.facts(principal, jobId);
    const events: JobEventRecord[] = [];
    let from = 0n;
    for (;;) {
      const batch = await this.store.readAll({ fromPosition: from, maxCount: 1_000, filter: { jobId } });
      if (batch.length === 0) break;
      for (const e of batch) events.push(toRecord(e));
      from = batch.at(-1)!.position;
    }
    return { jobId, events };
  }

  /** The stored outputs of one of the caller's jobs (`anyTeam`: of any job whose facts the key may read, for the listing only, never the bytes). */
  async outputs(principal: Principal, jobId: string, options: { anyTeam?: boolean } = {}): Promise<JobOutputs> {
    const view = options.anyTeam ? await this.facts(principal, jobId) : await this.get(principal, jobId);
    const out = view.outputs;
    return { jobId, stored: out !== undefined, files: out?.files ?? [], totalBytes: out?.totalBytes ?? 0, truncated: out?.truncated ?? false, rejected: out?.rejected ?? [] };
  }

  private async readSubmitted(streamId: string): Promise<EventData<'JobSubmitted'> | undefined> {
    return this.submittedOf(await this.store.readStream(streamId, { maxCount: 1 }));
  }

  private submittedOf(events: readonly RecordedEvent[]): EventData<'JobSubmitted'> | undefined {
    const first = events[0];
    return first?.type === 'JobSubmitted' ? (first.data as EventData<'JobSubmitted'>) : undefined;
  }
}

function toRecord(e: RecordedEvent): JobEventRecord {
  return {
    position: e.position.toString(),
    streamId: e.streamId,
    revision: e.revision.toString(),
    eventId: e.eventId,
    type: e.type,
    at: eventTime(e),
    producer: e.metadata.producer,
    occurredAt: e.metadata.occurredAt,
    recordedAt: e.recordedAt,
    correlationId: e.metadata.correlationId,
    causationId: e.metadata.causationId,
    data: e.data,
  };
}
