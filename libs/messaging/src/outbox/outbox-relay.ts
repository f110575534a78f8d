import type { NatsConnection } from '@nats-io/transport-node';
import type { EventStore, ReadAllFilter, RecordedEvent, Subscription } from '#event-store';
import { context, contextFromFields, injectHeaders, SpanKind, tracer, tracingEnabled, trace, type Span } from '#telemetry';
import { defaultEventSubject, encodeEvent, type EventSubjectOf } from '../bus-event.js';
import { defaultMessagingLogger, type Logger } from '../logging.js';
import { PipelinedPublisher } from './pipelined-publisher.js';

export interface OutboxRelayOptions {
  /** Checkpoint name in the event store. Default `outbox-relay`. One relay process per name. */
  name?: string;
  /** Only these events (e.g. `{ streamPrefix: 'job-' }`). Default: all. */
  filter?: ReadAllFilter;
  /** Where each event goes. Default `gpunet.evt.<type>.<team>.<jobId>` (contracts' `eventSubject`). */
  subjectOf?: EventSubjectOf;
  /** Publishes awaiting their PubAck at most. Default 512. */
  maxInFlight?: number;
  /** Save the checkpoint once this many more events are acked... Default 1000. */
  checkpointEvery?: number;
  /** ...or this long after the first unsaved ack, whichever comes first. Default 250 ms. */
  checkpointIntervalMs?: number;
  /** Events read from the store per batch while catching up. Default 500. */
  batchSize?: number;
  /** Passed to the store subscription: how often to look for new events when idle. Default: the store's. */
  pollIntervalMs?: number;
  /** Events handed to the NATS client in one go (one socket write). Default 64. */
  publishBatch?: number;
  /** PubAck timeout per publish. Default 5000 ms. */
  publishTimeoutMs?: number;
  /** After a failure, wait this long before resuming (doubling up to retryMaxMs). Default 200 ms. */
  retryBaseMs?: number;
  /** Default 5000 ms. */
  retryMaxMs?: number;
  /** Default: the messaging pino logger. */
  logger?: Logger;
  /**
   * Resolves once the bus may take events; nothing is published before. For a stream of interest
   * retention, which drops an event no durable wants yet: every durable it keeps events for
   * exists (decision 0038). `stopped()` turns true when the relay stops while it waits.
   */
  ready?: (stopped: () => boolean) => Promise<void>;
}

export interface OutboxRelayStats {
  /** Position the relay (re)started from: the saved checkpoint, or 0. */
  startedFrom: bigint;
  /** PubAcks received, duplicates included. */
  published: number;
  /** PubAcks that JetStream marked duplicate (already on the bus). */
  duplicates: number;
  /** Times the pipeline failed and resumed from the last acked position. */
  restarts: number;
  /** Events larger than the server's max_payload: logged and passed over, never on the bus (the store holds them). */
  tooLarge: number;
}

interface InFlight {
  position: bigint;
  done: boolean;
}

/**
 * Publishes every event appended to the event store to JetStream, in position order, on
 * `gpunet.evt.<type>.<team>.<jobId>` with `Nats-Msg-Id` = event id.
 *
 * Delivery is at least once on the relay's side and exactly once on the bus: after a crash the
 * relay resumes from its saved checkpoint (saved only after PubAcks, so never ahead of the bus)
 * and re-publishes what followed it; JetStream drops those as duplicates within the stream's
 * duplicate window. Publishes are pipelined (up to `maxInFlight` awaiting PubAcks, see
 * PipelinedPublisher) on one connection, so the stream stores them in position order; the
 * checkpoint advances over the contiguous prefix of acked events and is saved in batches. On a
 * failed publish the pipeline drains and resumes from the last contiguous ack.
 */
export class OutboxRelay {
  private readonly name: string;
  private readonly logger: Logger;
  private readonly maxInFlight: number;
  private readonly checkpointEvery: number;
  private readonly checkpointIntervalMs: number;
  private readonly subjectOf: EventSubjectOf;
  private readonly publishTimeoutMs: number;
  private readonly inFlight: InFlight[] = [];
  private inFlightHead = 0;
  private acked = 0n;
  private saved = 0n;
  private unsavedCount = 0;
  private saving: Promise<void> = Promise.resolve();
  private saveTimer: NodeJS.Timeout | undefined;
  private subscription: Subscription | undefined;
  private loop: Promise<void> | undefined;
  private stopping = false;
  private failure: unknown;
  private capacityWaiter: (() => void) | undefined;
  private batch: RecordedEvent[] = [];
  private flushTimer: NodeJS.Immediate | undefined;
  private readonly publishBatch: number;
  private drainWaiter: (() => void) | undefined;
  private publisher: PipelinedPublisher | undefined;
  readonly stats: OutboxRelayStats = { startedFrom: 0n, published: 0, duplicates: 0, restarts: 0, tooLarge: 0 };

  /**
   * @param store the service's event store (the outbox)
   * @param nc connection to the NATS server with JetStream; left open by `stop()`
   */
  constructor(
    private readonly store: EventStore,
    private readonly nc: NatsConnection,
    private readonly options: OutboxRelayOptions = {},
  ) {
    this.name = options.name ?? 'outbox-relay';
    this.maxInFlight = options.maxInFlight ?? 512;
    this.checkpointEvery = options.checkpointEvery ?? 1000;
    this.checkpointIntervalMs = options.checkpointIntervalMs ?? 250;
    this.subjectOf = options.subjectOf ?? defaultEventSubject;
    this.publishTimeoutMs = options.publishTimeoutMs ?? 5_000;
    this.publishBatch = options.publishBatch ?? 64;
    this.logger = (options.logger ?? defaultMessagingLogger()).child({ component: 'outbox-relay', relay: this.name });
  }

  /** Position of the last event known to be on the bus (contiguously from the start). */
  get position(): bigint {
    return this.acked;
  }

  /** Loads the checkpoint and starts relaying in the background. */
  async start(): Promise<void> {
    if (this.loop) return;
    const checkpoint = (await this.store.loadCheckpoint(this.name)) ?? 0n;
    this.acked = this.saved = this.stats.startedFrom = checkpoint;
    this.logger.info({ fromPosition: checkpoint.toString() }, 'relay starting from checkpoint');
    this.publisher = new PipelinedPublisher(this.nc, this.publishTimeoutMs);
    this.loop = this.run();
  }

  /** Stops reading, waits for the PubAcks in flight, saves the checkpoint, then resolves. */
  async stop(): Promise<void> {
    this.stopping = true;
    this.capacityWaiter?.();
    await this.subscription?.close();
    await this.loop;
    clearTimeout(this.saveTimer);
    this.publisher?.close();
    await this.saveCheckpoint();
    this.logger.info({ position: this.acked.toString(), ...this.statsForLog() }, 'relay stopped');
  }

  private async run(): Promise<void> {
    let retryMs = this.options.retryBaseMs ?? 200;
    await this.options.ready?.(() => this.stopping);
    while (!this.stopping) {
      this.failure = undefined;
      const sub = this.store.subscribeToAll({
        fromPosition: this.acked,
        ...(this.options.filter ? { filter: this.options.filter } : {}),
        batchSize: this.options.batchSize ?? 500,
        ...(this.options.pollIntervalMs !== undefined ? { pollIntervalMs: this.options.pollIntervalMs } : {}),
      });
      this.subscription = sub;
      try {
        for await (const event of sub) {
          if (this.stopping || this.failure !== undefined) break;
          this.batch.push(event);
          const inFlight = this.inFlight.length - this.inFlightHead + this.batch.length;
          if (this.batch.length >= this.publishBatch || inFlight >= this.maxInFlight) this.publishBatched();
          else this.flushTimer ??= setImmediate(() => this.publishBatched());
          if (inFlight >= this.maxInFlight) await this.hasCapacity();
          if (this.failure !== undefined) break;
        }
      } catch (err) {
        this.failure ??= err;
      } finally {
        // Unpublished events are not acked, so the next round (or the next process) reads them again.
        this.batch = [];
        clearImmediate(this.flushTimer);
        this.flushTimer = undefined;
        await sub.close();
      }
      await this.drained();
      if (this.failure === undefined || this.stopping) continue;
      this.stats.restarts++;
      this.logger.error({ err: this.failure, position: this.acked.toString(), retryInMs: retryMs }, 'relay failed; resuming from the last acked event');
      await new Promise((r) => setTimeout(r, retryMs));
      retryMs = Math.min(retryMs * 2, this.options.retryMaxMs ?? 5_000);
    }
  }

  /**
   * Publishes the events read so far in one synchronous run. The NATS client writes its outbound
   * buffer to the socket once per microtask turn, so publishing from inside the `for await` loop
   * (one event per turn) would cost one socket write per event; this way a batch shares one.
   */
  private publishBatched(): void {
    clearImmediate(this.flushTimer);
    this.flushTimer = undefined;
    const batch = this.batch;
    this.batch = [];
    for (const event of batch) this.publish(event);
  }

  private publish(event: RecordedEvent): void {
    const entry: InFlight = { position: event.position, done: false };
    this.inFlight.push(entry);
    const m = encodeEvent(event, this.subjectOf);
    // The event's trace context travels with it (encodeEvent copies it into the headers); with
    // tracing on, this hop is a producer span of its own and the consumers become its children.
    let span: Span | undefined;
    if (event.metadata.traceparent !== undefined && tracingEnabled()) {
      span = tracer().startSpan(
        `publish ${event.type}`,
        { kind: SpanKind.PRODUCER, attributes: { 'messaging.system': 'nats', 'messaging.destination.name': m.subject, 'messaging.message.id': event.eventId } },
        contextFromFields(event.metadata as unknown as Record<string, unknown>),
      );
      injectHeaders(m.headers, trace.setSpan(context.active(), span));
    }
    this.publisher!.publish(
      m.subject,
      m.payload,
      m.headers,
      (ack) => {
        span?.end();
        this.stats.published++;
        if (ack.duplicate) this.stats.duplicates++;
        entry.done = true;
        this.advance();
      },
      (err) => {
        span?.end();
        if (isTooLargeForTheBus(err)) {
          // Larger than the server takes (max_payload), it would fail every round and hold back every
          // event after it. The store keeps it; consumers that need it read it there.
          this.stats.tooLarge++;
          this.logger.error(
            { eventId: event.eventId, type: event.type, position: event.position.toString(), bytes: m.payload.length, maxPayload: this.nc.info?.max_payload },
            'event larger than the bus takes (max_payload): not published, the store holds it; relaying goes on',
          );
          entry.done = true;
          this.advance();
          return;
        }
        // The acked position stops before this event (see advance), so it is published again on resume.
        if (this.failure === undefined) {
          this.failure = err;
          // Wake the read loop, which may be idle waiting for new events, so the round ends and resumes.
          void this.subscription?.close();
        }
        entry.done = true;
        this.advance();
      },
    );
  }

  /** Moves the acked position over the contiguous prefix of acked publishes. */
  private advance(): void {
    let moved = false;
    while (this.inFlightHead < this.inFlight.length && this.inFlight[this.inFlightHead]!.done) {
      // After a failure nothing counts as acked any more: the pipeline drains and resumes from here.
      if (this.failure === undefined) {
        this.acked = this.inFlight[this.inFlightHead]!.position;
        this.unsavedCount++;
      }
      this.inFlightHead++;
      moved = true;
    }
    if (this.inFlightHead > 1024 && this.inFlightHead * 2 > this.inFlight.length) {
      this.inFlight.splice(0, this.inFlightHead);
      this.inFlightHead = 0;
    }
    if (!moved) return;
    this.capacityWaiter?.();
    if (this.inFlight.length === this.inFlightHead) this.drainWaiter?.();
    this.maybeSave();
  }

  private hasCapacity(): Promise<void> {
    return new Promise<void>((resolve) => {
      this.capacityWaiter = () => {
        this.capacityWaiter = undefined;
        resolve();
      };
    });
  }

  /** Resolves once every publish in flight has settled. */
  private async drained(): Promise<void> {
    if (this.inFlight.length !== this.inFlightHead) {
      await new Promise<void>((resolve) => {
        this.drainWaiter = () => {
          this.drainWaiter = undefined;
          resolve();
        };
      });
    }
    this.inFlight.length = 0;
    this.inFlightHead = 0;
  }

  private maybeSave(): void {
    if (this.acked === this.saved) return;
    if (this.unsavedCount >= this.checkpointEvery) {
      this.unsavedCount = 0;
      void this.saveCheckpoint();
    } else if (!this.saveTimer) {
      this.saveTimer = setTimeout(() => {
        this.saveTimer = undefined;
        this.unsavedCount = 0;
        void this.saveCheckpoint();
      }, this.checkpointIntervalMs);
      this.saveTimer.unref();
    }
  }

  /** Saves the acked position; saves are serialized and never go backwards. */
  private saveCheckpoint(): Promise<void> {
    this.saving = this.saving.then(async () => {
      const position = this.acked;
      if (position <= this.saved) return;
      try {
        await this.store.saveCheckpoint(this.name, position);
        this.saved = position;
      } catch (err) {
        // Not fatal: the next save carries a later position; a crash meanwhile only means more re-publishing.
        this.logger.warn({ err, position: position.toString() }, 'cannot save relay checkpoint');
      }
    });
    return this.saving;
  }

  private statsForLog(): Record<string, unknown> {
    return { ...this.stats, startedFrom: this.stats.startedFrom.toString() };
  }
}

/** The client's refusal of a message above the server's max_payload: no retry can succeed. */
function isTooLargeForTheBus(err: unknown): boolean {
  return err instanceof Error && /max_payload/i.test(err.message);
}
