import { jetstream, type JetStreamClient as NatsJetStreamClient, type PubAck } from '@nats-io/jetstream';
import { connect, type NatsConnection, type NodeConnectionOptions } from '@nats-io/transport-node';
import { ClientProxy, type ReadPacket, type WritePacket } from '@nestjs/microservices';
import { ValidationError } from '#errors';
import { EventEmitter } from 'node:events';
import { v7 as uuidv7 } from 'uuid';
import type { z } from 'zod';
import { defaultEventSubject, encodeEvent, type BusEvent, type EventSubjectOf } from '../bus-event.js';
import type { QueryContract } from '../query/envelope.js';
import { requestQuery } from '../query/query-client.js';
import { toFieldIssues } from '../zod-issues.js';

export interface JetStreamClientOptions {
  /** NATS servers. Default `nats://127.0.0.1:4222`. Ignored when `connection` is given. */
  servers?: string | string[];
  /** Further connection options; default `noAsyncTraces: true` (see JetStreamServerOptions). */
  connectionOptions?: Omit<NodeConnectionOptions, 'servers'>;
  /** Use this connection instead of opening one; `close()` leaves it open. */
  connection?: NatsConnection;
  /** Event type → schema of its `data`, checked before `emit` publishes. */
  events?: Readonly<Record<string, z.ZodType>>;
  /** Query subject → schemas: `send` validates the request before it leaves and the reply's data after. */
  queries?: Readonly<Record<string, QueryContract>>;
  /** `metadata.producer` of emitted events. Default `unknown`. */
  producer?: string;
  /** Reply timeout of `send`. Default 5000 ms. */
  timeoutMs?: number;
  /** Where each event goes. Default `gpunet.evt.<type>.<team>.<jobId>`. */
  subjectOf?: EventSubjectOf;
}

/** Metadata for an emitted event; wrap the payload in a BusRecord to set it. */
export interface BusRecordOptions {
  /** Default: a new UUID v7. Give a deterministic id to make re-emitting harmless. */
  eventId?: string;
  jobId?: string;
  team?: string;
  /** Default: the event id. */
  correlationId?: string;
  /** Default: the event id. */
  causationId?: string;
  /** Default: now. */
  occurredAt?: string;
}

/** An event payload with its metadata, for `client.emit('Type', new BusRecord(data, { jobId }))`. */
export class BusRecord<T = unknown> {
  constructor(
    readonly data: T,
    readonly options: BusRecordOptions = {},
  ) {}
}

type ClientStatus = 'connected' | 'disconnected' | 'reconnecting';
/** Connection status events that `on()` listens to. */
type StatusEvents = Record<ClientStatus, () => void>;

/**
 * Nest ClientProxy for the JetStream transport. `emit('<EventType>', data | BusRecord)` publishes
 * an event envelope to `gpunet.evt.<EventType>` with `Nats-Msg-Id` = event id and resolves with
 * the PubAck; `send('<query subject>', request)` does NATS request/reply and yields the reply's
 * `data`, or errors with the reply's error (see `requestQuery`). Both validate with the given contracts.
 *
 * Events that change state should normally be appended to the event store and reach the bus
 * through the outbox relay; `emit` is for producers without a store of their own.
 */
export class JetStreamClient extends ClientProxy<StatusEvents, ClientStatus> {
  private nc: NatsConnection | undefined;
  private js: NatsJetStreamClient | undefined;
  private connecting: Promise<NatsConnection> | undefined;
  private readonly emitter = new EventEmitter();

  constructor(private readonly options: JetStreamClientOptions = {}) {
    super();
  }

  /** Connects once; later calls return the same connection. */
  connect(): Promise<NatsConnection> {
    this.connecting ??= (async () => {
      const nc = this.options.connection ?? (await connect({ servers: this.options.servers ?? 'nats://127.0.0.1:4222', noAsyncTraces: true, ...this.options.connectionOptions }));
      this.nc = nc;
      this.js = jetstream(nc);
      this._status$.next('connected');
      void this.watchConnection(nc);
      return nc;
    })();
    this.connecting.catch(() => (this.connecting = undefined));
    return this.connecting;
  }

  async close(): Promise<void> {
    const nc = this.nc;
    this.nc = undefined;
    this.js = undefined;
    this.connecting = undefined;
    if (nc && !this.options.connection) await nc.drain().catch(() => nc.close());
    this._status$.next('disconnected');
  }

  /** The NATS connection. */
  unwrap<T>(): T {
    if (!this.nc) throw new Error('JetStreamClient is not connected: call connect() first');
    return this.nc as T;
  }

  override on<EventKey extends keyof StatusEvents = keyof StatusEvents, EventCallback extends StatusEvents[EventKey] = StatusEvents[EventKey]>(event: EventKey, callback: EventCallback): void {
    this.emitter.on(event, callback);
  }

  protected publish(packet: ReadPacket, callback: (packet: WritePacket) => void): () => void {
    const subject = this.normalizePattern(packet.pattern);
    requestQuery(this.nc!, subject, packet.data, this.options.queries?.[subject] ?? {}, { timeoutMs: this.options.timeoutMs ?? 5_000 }).then(
      (response) => callback({ response, isDisposed: true }),
      (err: unknown) => callback({ err }),
    );
    // A NATS request cannot be withdrawn; an unsubscribed caller simply ignores the reply.
    return () => undefined;
  }

  protected async dispatchEvent<T = PubAck>(packet: ReadPacket): Promise<T> {
    const type = this.normalizePattern(packet.pattern);
    const record = packet.data instanceof BusRecord ? (packet.data as BusRecord) : new BusRecord(packet.data);
    let data = record.data;
    const schema = this.options.events?.[type];
    if (schema) {
      const parsed = schema.safeParse(data);
      if (!parsed.success) throw new ValidationError(`${type} data does not match its schema`, toFieldIssues(parsed.error, 'data'));
      data = parsed.data;
    }
    const o = record.options;
    const eventId = o.eventId ?? uuidv7();
    const event: BusEvent = {
      eventId,
      type,
      data,
      metadata: {
        correlationId: o.correlationId ?? eventId,
        causationId: o.causationId ?? eventId,
        ...(o.jobId ? { jobId: o.jobId } : {}),
        ...(o.team ? { team: o.team } : {}),
        producer: this.options.producer ?? 'unknown',
        occurredAt: o.occurredAt ?? new Date().toISOString(),
      },
    };
    const m = encodeEvent(event, this.options.subjectOf ?? defaultEventSubject);
    return (await this.js!.publish(m.subject, m.payload, { msgID: m.msgID, headers: m.headers })) as T;
  }

  private async watchConnection(nc: NatsConnection): Promise<void> {
    for await (const s of nc.status()) {
      const status: ClientStatus | undefined = s.type === 'disconnect' ? 'disconnected' : s.type === 'reconnecting' ? 'reconnecting' : s.type === 'reconnect' ? 'connected' : undefined;
      if (status) {
        this._status$.next(status);
        this.emitter.emit(status);
      }
    }
  }
}
