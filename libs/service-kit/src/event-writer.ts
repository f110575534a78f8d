import { validateEventData, type EventData, type EventType } from '#contracts';
import { ValidationError } from '#errors';
import { FencedError, IdempotencyConflictError, WrongExpectedVersionError, type AppendFence, type AppendResult, type EventMetadata, type EventStore, type EventToAppend, type ExpectedRevision } from '#event-store';
import { traceFields, tracingEnabled } from '#telemetry';
import type { Clock } from './clock.js';
import { derivedId, newId } from './ids.js';
import { NotLeaderError } from './leadership.js';

/** The event that caused an append: its id and metadata carry over. */
export interface Cause {
  eventId: string;
  metadata: Pick<EventMetadata, 'correlationId'> & Partial<EventMetadata>;
}

/** One event to append: a contract type and its data. */
export type NewEvent = { [T in EventType]: { type: T; data: EventData<T>; discriminator?: string; eventId?: string } }[EventType];

/** The store's append result, and whether the events were already there. */
export interface WriteResult extends AppendResult {
  alreadyRecorded: boolean;
}

export interface AppendContext {
  /** Default `any`. */
  expectedRevision?: ExpectedRevision;
  /** The event being handled: ids are derived from it and correlation carries over. */
  cause?: Cause;
  /** Correlation id when there is no cause (e.g. an HTTP request id). Default: a new id. */
  correlationId?: string;
  /** Causation id when there is no cause event (e.g. the request id). */
  causationId?: string;
  /** Default: from the data's `jobId`, else the cause's. */
  jobId?: string;
  /** Default: from the data's `team`, else the cause's. */
  team?: string;
}

/**
 * Appends contract-checked events with complete metadata. With a cause, every event id is
 * derived from `cause.eventId + type (+ discriminator)`: handling a redelivered message again
 * appends the same ids, which the store turns into a no-op.
 */
export class EventWriter {
  /** The term this process writes in, when it is a single writer's leader (decision 0029): every append carries it. */
  private term: { fence: AppendFence; onFenced: (err: FencedError) => void } | undefined;
  /** Set once the process lost its leadership: nothing more is appended. */
  private deposed: string | undefined;

  constructor(
    private readonly store: EventStore,
    private readonly producer: string,
    private readonly clock: Clock,
  ) {}

  /**
   * Makes every later append carry `fence`; `onFenced` is called once when the store refuses one
   * (another process holds the role now). Used by `startService` for a `leader` service.
   */
  fenceWith(fence: AppendFence, onFenced: (err: FencedError) => void): void {
    this.term = { fence, onFenced };
  }

  /** Refuses every later append (the lease ended): a process that is not the leader decides nothing. */
  depose(reason: string): void {
    this.deposed ??= reason;
  }

  /** The id an event of `type` caused by `causeEventId` gets. */
  eventIdFor(causeEventId: string, type: string, discriminator?: string): string {
    return derivedId(causeEventId, type, ...(discriminator === undefined ? [] : [discriminator]));
  }

  /**
   * Appends the events; `alreadyRecorded` is true when a cause had already produced them (this
   * call wrote nothing and the result is the earlier append's).
   */
  async append(streamId: string, events: readonly NewEvent[], ctx: AppendContext = {}): Promise<WriteResult> {
    const occurredAt = this.clock.now().toISOString();
    const correlationId = ctx.cause?.metadata.correlationId ?? ctx.correlationId ?? newId();
    // The active span's context goes into the metadata, so the relay carries it to the consumers.
    const trace = tracingEnabled() ? traceFields() : {};
    const prepared = events.map((e, i) => {
      const checked = validateEventData(e.type, e.data);
      if (!checked.ok) {
        throw new ValidationError(
          `${e.type} does not match its contract: ${checked.issues.map((x) => `${x.path}: ${x.message}`).join('; ')}`,
          checked.issues.map((x) => ({ ...x, path: `events.${i}.data.${x.path}` })),
        );
      }
      const data = checked.value as Record<string, unknown>;
      const jobId = ctx.jobId ?? (typeof data.jobId === 'string' ? data.jobId : ctx.cause?.metadata.jobId);
      const team = ctx.team ?? (typeof data.team === 'string' ? data.team : ctx.cause?.metadata.team);
      const metadata: EventMetadata = {
        correlationId,
        causationId: ctx.cause?.eventId ?? ctx.causationId ?? correlationId,
        producer: this.producer,
        occurredAt,
        ...(jobId ? { jobId } : {}),
        ...(team ? { team } : {}),
        ...trace,
      };
      // An explicit id wins (e.g. intake derives a submit's id from the idempotency key).
      const eventId = e.eventId ?? (ctx.cause ? this.eventIdFor(ctx.cause.eventId, e.type, e.discriminator) : newId());
      return { eventId, type: e.type, data, metadata };
    });
    try {
      const result = await this.appendAsIs(streamId, prepared, ctx.expectedRevision ?? 'any');
      return { ...result, alreadyRecorded: false };
    } catch (err) {
      // Handling a cause again derives the same ids, but data stamped with the clock (stagedAt,
      // occurredAt) differs: the first recorded decision stands, and this append is a no-op.
      if (ctx.cause && (err instanceof IdempotencyConflictError || err instanceof WrongExpectedVersionError)) {
        const earlier = await this.findRecorded(streamId, prepared.map((e) => e.eventId));
        if (earlier) return { ...earlier, alreadyRecorded: true };
      }
      throw err;
    }
  }

  /**
   * Appends events that are complete already (ids and metadata their own, e.g. a node's report
   * the recorder keeps as the node wrote it), with nothing checked or added — but fenced like
   * every append of this process: a leader that is no longer one appends nothing and gets
   * NotLeaderError (retryable), whether its lease ended or the store refused its term.
   */
  async appendAsIs(streamId: string, events: readonly EventToAppend[], expectedRevision: ExpectedRevision = 'any'): Promise<AppendResult> {
    if (this.deposed !== undefined) throw new NotLeaderError(`${streamId}: not appended, this process is no longer the leader (${this.deposed})`);
    try {
      return await this.store.appendToStream(streamId, events, { expectedRevision, ...(this.term ? { fence: this.term.fence } : {}) });
    } catch (err) {
      if (err instanceof FencedError && this.term) {
        // Retryable for the caller: the message in hand goes back to the bus, for the new leader.
        this.depose(err.message);
        this.term.onFenced(err);
        throw new NotLeaderError(`${streamId}: not appended, another process leads now: ${err.message}`, { cause: err });
      }
      throw err;
    }
  }

  /** The result of an earlier append that recorded exactly these ids in this stream, if there was one. */
  private async findRecorded(streamId: string, eventIds: readonly string[]): Promise<AppendResult | undefined> {
    const wanted = new Set(eventIds.map((id) => id.toLowerCase()));
    const found = (await this.store.readStream(streamId)).filter((e) => wanted.has(e.eventId.toLowerCase()));
    if (found.length !== wanted.size) return undefined;
    const last = found[found.length - 1]!;
    return { nextExpectedRevision: last.revision, position: last.position };
  }
}
