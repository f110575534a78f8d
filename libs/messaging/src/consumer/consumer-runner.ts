import type { ConsumerMessages, JetStreamClient, JsMsg } from '@nats-io/jetstream';
import { millis, type MsgHdrs } from '@nats-io/transport-node';
import { HEADERS, acceptedSchemaVersions } from '#contracts';
import { ValidationError } from '#errors';
import { extractHeaders, inSpan, SpanKind, tracingEnabled } from '#telemetry';
import type { z } from 'zod';
import { decodeEvent, type BusEvent } from '../bus-event.js';
import { deadLetterSubject, Headers } from '../conventions.js';
import type { Inbox } from '../inbox/inbox.js';
import { MemoryInbox } from '../inbox/memory-inbox.js';
import { defaultMessagingLogger, messageLogger, type Logger } from '../logging.js';
import { checkSchemaVersion } from '../schema-version.js';
import { toFieldIssues } from '../zod-issues.js';
import { deadLetterOf, publishDeadLetter } from './dead-letter.js';
import { UnrecordedEventError } from '../errors.js';
import { DEFAULT_RETRY_POLICY, failureOutcome, type Outcome, type RetryPolicy } from './outcome.js';

/** What a handler knows about the message it handles besides the event. */
export interface EventContext {
  readonly consumer: string;
  readonly subject: string;
  readonly streamSequence: number;
  /** 1 on the first delivery. */
  readonly deliveryCount: number;
  /**
   * Messages of the same key already in hand behind this one when its handling began: they will
   * be handled next, in order. A handler whose work covers every event so far (placement's pass)
   * may leave it to the last of a run instead of doing it once per event while the consumer is behind.
   */
  readonly behind: number;
  readonly headers: MsgHdrs | undefined;
  /** Bound with `jobId`, `correlationId`, `eventId`, `type`. */
  readonly logger: Logger;
  /** The raw JetStream message. Settling it is the runner's job: do not ack/nak it yourself. */
  readonly message: JsMsg;
}

/** Handles one event; throw to fail (see `failureOutcome` for what each error leads to). */
export type EventHandler<TData = unknown> = (event: BusEvent<string, TData>, ctx: EventContext) => unknown;

export interface EventRoute {
  handle: EventHandler;
  /** Schema of the event's `data`; a payload that fails it is dead-lettered at once. Default: the registry's, else unchecked. */
  schema?: z.ZodType | undefined;
}

export interface ConsumerRunnerOptions {
  /** Stream of the durable consumer. */
  stream: string;
  /** Name of the durable pull consumer (provisioned beforehand). Also the inbox key and the dead-letter subject suffix. */
  durable: string;
  /** Event type → handler. Events of other types are acked and skipped (a 2.9 consumer may receive a wider filter than it handles). */
  routes: ReadonlyMap<string, EventRoute> | Readonly<Record<string, EventRoute>>;
  /** Event type → schema of its `data`, used when a route has none. Default: none. */
  schemas?: Readonly<Record<string, z.ZodType>>;
  /**
   * Event type → schema versions accepted (`Gpunet-Schema-Version`, `metadata.schemaVersion`); an
   * event of another version is dead-lettered (`schema_invalid`, `unsupported_schema_version`).
   * Default: the registry's (`acceptedSchemaVersions`), else `[1]`.
   */
  versions?: Readonly<Record<string, readonly number[]>>;
  /** Keys (jobs) handled at the same time at most; one key is always handled one message at a time. Default 16. */
  concurrency?: number;
  /**
   * The ordering key of a message: messages of one key are handled one at a time, in stream order.
   * Default: the `Gpunet-Job-Id` header, else the event's `metadata.jobId`, else the subject. A
   * service whose state is global (placement) returns one constant key: total stream order.
   */
  keyOf?: (event: BusEvent | undefined, subject: string) => string;
  /** Default: 5 deliveries, backoff 1 s doubling to 30 s, and never beyond half the consumer's ack wait. */
  retry?: Partial<RetryPolicy>;
  /** Default: a MemoryInbox of 100,000 entries. Pass a durable one where duplicates may arrive after a restart. */
  inbox?: Inbox;
  /** Default `gpunet.dlq.<durable>`. */
  deadLetterSubject?: string;
  /** Messages requested per pull. Default 256. */
  batchSize?: number;
  /**
   * How often held and in-progress messages get `working()` to extend their ack wait.
   * Default: a third of the consumer's ack wait.
   */
  heartbeatMs?: number;
  /**
   * How long a key waits, beyond the nak delay, for its failed message to come back before giving
   * up holding the later ones (only possible if another process handled it). Default: the ack wait.
   */
  holdTimeoutMs?: number;
  /** Default: the messaging pino logger. */
  logger?: Logger;
  /**
   * Ties each event to the event store before it is handled: given the bus copy, returns the event
   * the store holds at the copy's stream and revision (undefined when there is none). The handler
   * then gets the store's copy; a bus event the store does not hold with the same id, type and
   * hash is dead-lettered (`not_recorded`) and never handled. Processes that hold the store set it
   * (service-kit does), so acting on a forged bus message takes write access to the store, not
   * only to the bus. Default: bus events are handled as they arrive.
   */
  recorded?: (event: BusEvent) => Promise<BusEvent | undefined>;
  /** Called once per settled message (metrics). Must be cheap and must not throw. */
  onSettled?: (settled: SettledMessage) => void;
}

/** How one message was settled, for metrics (`ConsumerRunnerOptions.onSettled`). */
export interface SettledMessage {
  consumer: string;
  stream: string;
  /** `handled`, `duplicate`, `skipped` (acked), `retried` (nak'ed) or `dead_lettered`. */
  outcome: 'handled' | 'duplicate' | 'skipped' | 'retried' | 'dead_lettered';
  /** The dead letter's reason (`schema_invalid`, `max_deliveries`, `terminal_error`, `not_recorded`…) when dead-lettered. */
  reason?: string;
  /** 1 on the first delivery. */
  deliveryCount: number;
  /** From the start of handling to the settle, seconds. */
  seconds: number;
}

/** Counters since start, for tests, health and benchmarks. */
export interface ConsumerRunnerStats {
  received: number;
  handled: number;
  duplicates: number;
  skipped: number;
  retried: number;
  deadLettered: number;
}

/** The dead-letter reason label of an outcome: the letter's own category, or the error code for a store mismatch. */
function deadLetterReasonOf(outcome: Extract<Outcome, { kind: 'dead_letter' }>): string {
  const why = outcome.reason;
  return why.exhausted ? 'max_deliveries' : why.code === 'validation_failed' || why.code === 'malformed_message' ? 'schema_invalid' : why.code === 'not_recorded' ? 'not_recorded' : 'terminal_error';
}

/**
 * Delay of a hand-back nak. Never 0: nats-server 2.9.10 mishandles a nak without delay while an
 * earlier message of the consumer is still pending (the nak'ed message is not redelivered until
 * its ack wait expires, and another is delivered twice); any delay takes the timed path, which works.
 */
const HAND_BACK_DELAY_MS = 1;
/** How long one pull request stays open at the server (see `pullOptions`). */
const PULL_EXPIRES_MS = 5_000;

interface Entry {
  msg: JsMsg;
  seq: number;
  key: string;
  decoded: BusEvent | Error;
  log?: Logger;
}

interface KeyState {
  key: string;
  /** Messages waiting, ascending stream sequence. */
  queue: Entry[];
  running: Entry | undefined;
  /** A message of this key was nak'ed: nothing later of the key runs until it is back. */
  blockedOn: { seq: number; releaseAt: number } | undefined;
  inReadyQueue: boolean;
}

/**
 * Runs handlers for one durable pull consumer: explicit ack, per-key order, bounded concurrency,
 * duplicate suppression, backoff, dead letters.
 *
 * Per-key order (see docs/decisions/0004-per-job-order-on-jetstream.md): the key of a message is
 * its `Gpunet-Job-Id` header, else `metadata.jobId`, else its subject. Each key has a queue sorted
 * by stream sequence and runs one message at a time; different keys run concurrently. When a
 * message fails retryably it is nak'ed with a delay and its key is *blocked* on that sequence: the
 * later messages of the key stay in hand (not acked, kept alive with `working()`) until the nak'ed
 * one is redelivered, which sorts it back in front of them. Every time a message of a key gets a
 * fresh ack deadline, the later ones of that key are refreshed right after, so their deadlines
 * never precede an earlier one's; should the process die, the server redelivers a key's messages
 * in stream order too. The nak delay is capped below the ack wait for the same reason. This holds
 * for one consuming process per durable consumer (the decision record explains why and how to
 * scale out).
 */
export class JetStreamConsumerRunner {
  private readonly routes: Map<string, EventRoute>;
  private readonly policy: RetryPolicy;
  private readonly inbox: Inbox;
  private readonly ownsInbox: boolean;
  private readonly logger: Logger;
  private readonly concurrency: number;
  private readonly dlqSubject: string;
  private readonly keys = new Map<string, KeyState>();
  private readonly readyQueue: KeyState[] = [];
  private active = 0;
  private messages: ConsumerMessages | undefined;
  private loop: Promise<void> | undefined;
  private heartbeat: NodeJS.Timeout | undefined;
  private heartbeatMs = 10_000;
  private holdTimeoutMs = 30_000;
  private closing = false;
  private idleWaiters: (() => void)[] = [];
  private pendingAcks: JsMsg[] = [];
  private ackTimer: NodeJS.Immediate | undefined;
  readonly stats: ConsumerRunnerStats = { received: 0, handled: 0, duplicates: 0, skipped: 0, retried: 0, deadLettered: 0 };

  constructor(
    private readonly js: JetStreamClient,
    private readonly options: ConsumerRunnerOptions,
  ) {
    this.routes = options.routes instanceof Map ? new Map(options.routes) : new Map(Object.entries(options.routes));
    this.policy = { ...DEFAULT_RETRY_POLICY, ...options.retry };
    this.ownsInbox = !options.inbox;
    this.inbox = options.inbox ?? new MemoryInbox();
    this.concurrency = options.concurrency ?? 16;
    this.dlqSubject = options.deadLetterSubject ?? deadLetterSubject(options.durable);
    this.logger = (options.logger ?? defaultMessagingLogger()).child({ consumer: options.durable, stream: options.stream });
  }

  /** The durable consumer's name. */
  get name(): string {
    return this.options.durable;
  }

  /** Checks the consumer exists, then consumes until `close()`. Resolves once consuming has begun. */
  async start(): Promise<void> {
    if (this.loop) return;
    const consumer = await this.js.consumers.get(this.options.stream, this.options.durable);
    const info = await consumer.info(true);
    const ackWaitMs = millis(info.config.ack_wait ?? 30_000_000_000);
    this.heartbeatMs = this.options.heartbeatMs ?? Math.max(100, Math.floor(ackWaitMs / 3));
    this.holdTimeoutMs = this.options.holdTimeoutMs ?? ackWaitMs;
    // A nak delay at or beyond the ack wait would let later held messages expire first.
    const maxDelay = Math.max(1, Math.floor(ackWaitMs / 2));
    if (this.policy.backoffMaxMs > maxDelay) {
      if (this.options.retry?.backoffMaxMs !== undefined) {
        this.logger.warn({ backoffMaxMs: this.policy.backoffMaxMs, ackWaitMs }, 'backoff capped at half the ack wait to keep per-key order');
      }
      this.policy.backoffMaxMs = maxDelay;
      this.policy.backoffBaseMs = Math.min(this.policy.backoffBaseMs, maxDelay);
    }
    this.heartbeat = setInterval(() => this.beat(), this.heartbeatMs);
    this.heartbeat.unref();
    this.messages = await consumer.consume(this.pullOptions());
    this.loop = this.consumeLoop(this.messages);
    this.logger.info({ ackWaitMs, concurrency: this.concurrency, maxDeliveries: this.policy.maxDeliveries }, 'consuming');
  }

  /**
   * Each pull request lives 5 s (the client renews it), not the client's default 30 s: the server
   * hands new messages to the oldest open request, and a process that stopped answering (paused,
   * cut off, a leader that lost its lease) would otherwise take them for the rest of its request
   * and keep them from its successor until the ack wait (30 s) ran out.
   */
  private pullOptions(): { max_messages: number; expires: number } {
    return { max_messages: this.options.batchSize ?? 256, expires: PULL_EXPIRES_MS };
  }

  /**
   * Stops fetching, lets the handlers in progress finish and settle their message, hands back
   * (nak with a 1 ms delay, in stream order) what was fetched but not started, then resolves.
   */
  async close(): Promise<void> {
    if (this.closing) return this.whenIdle();
    this.closing = true;
    await this.messages?.close();
    await this.loop;
    const waiting = [...this.keys.values()].flatMap((s) => s.queue).sort((a, b) => a.seq - b.seq);
    for (const e of waiting) e.msg.nak(HAND_BACK_DELAY_MS);
    for (const s of this.keys.values()) s.queue = [];
    await this.whenIdle();
    this.flushAcks();
    clearInterval(this.heartbeat);
    if (this.ownsInbox) await this.inbox.close();
    this.logger.info({ handedBack: waiting.length, ...this.stats }, 'consumer closed');
  }

  private async consumeLoop(messages: ConsumerMessages): Promise<void> {
    void this.watchStatus(messages);
    let current = messages;
    for (;;) {
      try {
        for await (const msg of current) {
          if (this.closing) msg.nak(HAND_BACK_DELAY_MS);
          else this.arrive(msg);
        }
      } catch (err) {
        this.logger.error({ err }, 'consume failed');
      }
      if (this.closing) return;
      // The iterator ended without close(): the consumer went away or the connection closed. Keep trying.
      await new Promise((r) => setTimeout(r, 1000));
      if (this.closing) return;
      try {
        const consumer = await this.js.consumers.get(this.options.stream, this.options.durable);
        current = await consumer.consume(this.pullOptions());
        this.messages = current;
        void this.watchStatus(current);
      } catch (err) {
        this.logger.error({ err }, 'cannot resume consuming; retrying');
      }
    }
  }

  private async watchStatus(messages: ConsumerMessages): Promise<void> {
    for await (const s of messages.status()) {
      if (s.type === 'heartbeats_missed' || s.type === 'consumer_not_found' || s.type === 'stream_not_found' || s.type === 'consumer_deleted') {
        this.logger.warn({ status: s }, 'consumer status');
      }
    }
  }

  /** A message arrives from the server: queue it under its key, in stream order. */
  private arrive(msg: JsMsg): void {
    this.stats.received++;
    let decoded: BusEvent | Error;
    try {
      decoded = decodeEvent(msg.data);
    } catch (err) {
      decoded = err as Error;
    }
    const key = this.options.keyOf
      ? this.options.keyOf(decoded instanceof Error ? undefined : decoded, msg.subject)
      : msg.headers?.get(Headers.JobId) || (decoded instanceof Error ? undefined : decoded.metadata.jobId) || msg.subject;
    const seq = msg.seq;
    let state = this.keys.get(key);
    if (!state) {
      state = { key, queue: [], running: undefined, blockedOn: undefined, inReadyQueue: false };
      this.keys.set(key, state);
    }
    if (state.running?.seq === seq) return; // a redelivery of the message in hand: it settles with the first copy
    const entry: Entry = { msg, seq, key, decoded };
    const q = state.queue;
    let i = q.length;
    while (i > 0 && q[i - 1]!.seq > seq) i--;
    if (i > 0 && q[i - 1]!.seq === seq) q[i - 1] = entry; // newer delivery of a held message: keep its latest token
    else q.splice(i, 0, entry);
    // Keep deadlines monotone: everything after the newcomer gets a deadline no earlier than its own.
    // The newcomer itself too when an earlier message of its key is in hand: that one may have been
    // refreshed while the newcomer was on the wire, leaving the newcomer's deadline (its delivery
    // time) before the earlier one's, so after a crash the server would redeliver it first.
    const earlierInHand = i > 0 || state.running !== undefined;
    for (let j = earlierInHand ? i : i + 1; j < q.length; j++) q[j]!.msg.working();
    if (state.blockedOn && seq <= state.blockedOn.seq) state.blockedOn = undefined;
    this.makeReady(state);
    this.pump();
  }

  private makeReady(state: KeyState): void {
    if (state.inReadyQueue || state.running || state.queue.length === 0) return;
    if (state.blockedOn && state.queue[0]!.seq > state.blockedOn.seq) return;
    state.inReadyQueue = true;
    this.readyQueue.push(state);
  }

  private pump(): void {
    while (!this.closing && this.active < this.concurrency && this.readyQueue.length > 0) {
      const state = this.readyQueue.shift()!;
      state.inReadyQueue = false;
      if (state.running || state.queue.length === 0) continue;
      if (state.blockedOn && state.queue[0]!.seq > state.blockedOn.seq) continue;
      const entry = state.queue.shift()!;
      state.running = entry;
      this.active++;
      void this.process(entry).then((outcome) => this.finished(state, entry, outcome));
    }
  }

  private finished(state: KeyState, entry: Entry, outcome: Outcome): void {
    state.running = undefined;
    this.active--;
    if (outcome.kind === 'retry') {
      state.blockedOn = { seq: entry.seq, releaseAt: Date.now() + outcome.delayMs + this.holdTimeoutMs };
      // The nak'ed message is due back after `delayMs` (< ack wait); push the held ones past it.
      for (const e of state.queue) e.msg.working();
    }
    if (state.queue.length === 0 && !state.blockedOn) this.keys.delete(state.key);
    else this.makeReady(state);
    this.pump();
    if (this.active === 0) {
      const waiters = this.idleWaiters;
      this.idleWaiters = [];
      for (const w of waiters) w();
    }
  }

  private whenIdle(): Promise<void> {
    return this.active === 0 ? Promise.resolve() : new Promise((r) => this.idleWaiters.push(r));
  }

  /** Extends the ack wait of every message in hand (in stream order per key) and lifts holds that timed out. */
  private beat(): void {
    const now = Date.now();
    for (const state of this.keys.values()) {
      state.running?.msg.working();
      for (const e of state.queue) e.msg.working();
      if (state.blockedOn && now >= state.blockedOn.releaseAt) {
        this.logger.warn({ key: state.key, blockedOnSeq: state.blockedOn.seq }, 'failed message did not come back in time: releasing the messages held behind it');
        state.blockedOn = undefined;
        if (state.queue.length === 0 && !state.running) this.keys.delete(state.key);
        else this.makeReady(state);
      }
    }
    this.pump();
  }

  /** Runs the handler of one message and settles the message. Never throws. */
  private async process(entry: Entry): Promise<Outcome> {
    let outcome: Outcome;
    const started = performance.now();
    const deliveryCount = entry.msg.info.deliveryCount;
    try {
      outcome = tracingEnabled() ? await this.handleInSpan(entry, deliveryCount) : await this.handle(entry, deliveryCount);
    } catch (err) {
      outcome = failureOutcome(err, deliveryCount, this.policy);
    }
    const settled = await this.settle(entry, outcome);
    if (this.options.onSettled) {
      this.options.onSettled({
        consumer: this.options.durable,
        stream: this.options.stream,
        outcome: settled.kind === 'ack' ? (settled.reason === 'handled' ? 'handled' : settled.reason === 'duplicate' ? 'duplicate' : 'skipped') : settled.kind === 'retry' ? 'retried' : 'dead_lettered',
        ...(settled.kind === 'dead_letter' ? { reason: deadLetterReasonOf(settled) } : {}),
        deliveryCount,
        seconds: (performance.now() - started) / 1000,
      });
    }
    return settled;
  }

  /**
   * `handle` inside a consumer span, child of the trace context the message carries
   * (`traceparent` header, set by the outbox relay from the event's metadata): one span per NATS
   * hop and handler, in the trace of the job the event belongs to.
   */
  private handleInSpan(entry: Entry, deliveryCount: number): Promise<Outcome> {
    const event = entry.decoded instanceof Error ? undefined : entry.decoded;
    return inSpan(
      `${this.options.durable} process ${event?.type ?? 'message'}`,
      {
        parent: extractHeaders(entry.msg.headers),
        kind: SpanKind.CONSUMER,
        attributes: {
          'messaging.system': 'nats',
          'messaging.destination.name': entry.msg.subject,
          'messaging.consumer.group.name': this.options.durable,
          'messaging.message.id': event?.eventId,
          'gpunet.job_id': event?.metadata.jobId,
          'gpunet.delivery_count': deliveryCount,
        },
      },
      async (span) => {
        const outcome = await this.handle(entry, deliveryCount);
        span.setAttribute('gpunet.outcome', outcome.kind === 'ack' ? outcome.reason : outcome.kind);
        return outcome;
      },
    );
  }

  private async handle(entry: Entry, deliveryCount: number): Promise<Outcome> {
    if (entry.decoded instanceof Error) throw entry.decoded;
    let event = entry.decoded;
    const route = this.routes.get(event.type);
    if (!route) return { kind: 'ack', reason: 'unhandled_type' };
    if (await this.inbox.has(this.options.durable, event.eventId)) return { kind: 'ack', reason: 'duplicate' };
    // A version this side does not read is refused before its data meets this version's schema: dead-lettered, naming the versions accepted.
    checkSchemaVersion(`event ${event.type}`, this.options.versions?.[event.type] ?? acceptedSchemaVersions(event.type) ?? [1], entry.msg.headers?.get(HEADERS.schemaVersion), event.metadata.schemaVersion);
    const schema = route.schema ?? this.options.schemas?.[event.type];
    const checked = (e: BusEvent): unknown => {
      if (!schema) return e.data;
      const parsed = schema.safeParse(e.data);
      if (!parsed.success) throw new ValidationError(`${e.type} data does not match its schema`, toFieldIssues(parsed.error, 'data'));
      return parsed.data;
    };
    let data = checked(event);
    if (this.options.recorded) {
      // After the schema check (garbage costs no store read); what gets handled is the store's copy.
      event = await this.tieToStore(event);
      data = checked(event);
    }
    const ctx: EventContext = {
      consumer: this.options.durable,
      subject: entry.msg.subject,
      streamSequence: entry.seq,
      deliveryCount,
      behind: this.keys.get(entry.key)?.queue.length ?? 0,
      headers: entry.msg.headers,
      logger: this.log(entry),
      message: entry.msg,
    };
    await route.handle(data === event.data ? event : { ...event, data }, ctx);
    await this.inbox.record(this.options.durable, event.eventId);
    return { kind: 'ack', reason: 'handled' };
  }

  /** The store's copy of a bus event, or UnrecordedEventError when the store does not hold it as it came. */
  private async tieToStore(event: BusEvent): Promise<BusEvent> {
    const where = event.streamId !== undefined && event.revision !== undefined ? `${event.streamId}@${event.revision}` : undefined;
    if (!where) throw new UnrecordedEventError(`${event.type} ${event.eventId} names no stream and revision: only events recorded in the store are handled`);
    const stored = await this.options.recorded!(event);
    if (!stored || stored.eventId !== event.eventId || stored.type !== event.type || (event.hash !== undefined && stored.hash !== event.hash)) {
      throw new UnrecordedEventError(
        stored
          ? `${event.type} ${event.eventId} differs from the event the store holds at ${where} (${stored.type} ${stored.eventId}): not handled`
          : `${event.type} ${event.eventId} is not in the store at ${where}: not handled`,
      );
    }
    return stored;
  }

  /**
   * THE place where an outcome becomes an ack, a nak or a dead letter. A dead letter is published
   * (and its PubAck awaited) before the original is terminated; if that publish fails the original
   * is nak'ed instead, so nothing is lost while the dead-letter stream is unavailable.
   */
  private async settle(entry: Entry, outcome: Outcome): Promise<Outcome> {
    const { msg } = entry;
    switch (outcome.kind) {
      case 'ack':
        this.ack(msg);
        if (outcome.reason === 'handled') this.stats.handled++;
        else if (outcome.reason === 'duplicate') {
          this.stats.duplicates++;
          this.log(entry).info({ deliveryCount: msg.info.deliveryCount }, 'duplicate event acked without handling');
        } else this.stats.skipped++;
        return outcome;
      case 'retry':
        msg.nak(outcome.delayMs);
        this.stats.retried++;
        this.log(entry).warn({ code: outcome.code, err: outcome.message, deliveryCount: msg.info.deliveryCount, delayMs: outcome.delayMs }, 'handler failed; redelivery scheduled');
        return outcome;
      case 'dead_letter': {
        const event = entry.decoded instanceof Error ? undefined : entry.decoded;
        const letter = deadLetterOf(
          msg,
          this.options.durable,
          outcome.reason,
          {
            eventId: event?.eventId,
            type: event?.type || msg.headers?.get(Headers.Type),
            jobId: event?.metadata.jobId || msg.headers?.get(Headers.JobId),
            correlationId: event?.metadata.correlationId || msg.headers?.get(Headers.CorrelationId),
          },
          new Date(),
        );
        try {
          await publishDeadLetter(this.js, this.dlqSubject, letter);
        } catch (err) {
          const delayMs = this.policy.backoffMaxMs;
          msg.nak(delayMs);
          this.stats.retried++;
          this.log(entry).error({ err, reason: outcome.reason }, 'cannot publish dead letter; message nak\'ed instead');
          return { kind: 'retry', delayMs, code: 'dead_letter_unavailable', message: (err as Error).message };
        }
        // No reason text: nats-server 2.9 does not recognise `+TERM <reason>` and would redeliver; the dead letter carries the reason.
        msg.term();
        this.stats.deadLettered++;
        this.log(entry).error({ reason: outcome.reason, deadLetterSubject: this.dlqSubject }, 'message dead-lettered');
        return outcome;
      }
    }
  }

  /**
   * Acks go out together once per event-loop turn: the NATS client writes to the socket once per
   * microtask turn, and handlers finish in separate turns, so acking inline would cost one socket
   * write per message.
   */
  private ack(msg: JsMsg): void {
    this.pendingAcks.push(msg);
    this.ackTimer ??= setImmediate(() => this.flushAcks());
  }

  private flushAcks(): void {
    clearImmediate(this.ackTimer);
    this.ackTimer = undefined;
    const acks = this.pendingAcks;
    this.pendingAcks = [];
    for (const m of acks) m.ack();
  }

  /** The entry's logger, with jobId and correlationId bound; created on first use. */
  private log(entry: Entry): Logger {
    if (!entry.log) {
      const event = entry.decoded instanceof Error ? undefined : entry.decoded;
      entry.log = messageLogger(this.logger, {
        jobId: event?.metadata.jobId || entry.msg.headers?.get(Headers.JobId) || undefined,
        correlationId: event?.metadata.correlationId || entry.msg.headers?.get(Headers.CorrelationId) || undefined,
        eventId: event?.eventId,
        type: event?.type,
        subject: entry.msg.subject,
        streamSeq: entry.seq,
      });
    }
    return entry.log;
  }
}
