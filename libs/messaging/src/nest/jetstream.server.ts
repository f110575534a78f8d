import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection, type NodeConnectionOptions, type Subscription } from '@nats-io/transport-node';
import { Server, type CustomTransportStrategy, type MessageHandler } from '@nestjs/microservices';
import { EventEmitter } from 'node:events';
import { isObservable, lastValueFrom, type Observable } from 'rxjs';
import type { z } from 'zod';
import type { BusEvent } from '../bus-event.js';
import { JetStreamConsumerRunner, type ConsumerRunnerOptions, type EventContext, type EventRoute } from '../consumer/consumer-runner.js';
import { EVENTS_STREAM } from '../conventions.js';
import { defaultMessagingLogger, type Logger } from '../logging.js';
import type { QueryContract } from '../query/envelope.js';
import { serveQuery, type QueryContext } from '../query/query-responder.js';
import { provision, type ProvisionReport } from '../topology/provision.js';
import type { TopologyDefinition } from '../topology/topology.js';
import { JetStreamContext, NatsQueryContext } from './jetstream.context.js';

/** One durable consumer the server runs `@EventPattern` handlers on. */
export type ConsumerBinding = Omit<ConsumerRunnerOptions, 'routes' | 'schemas' | 'logger' | 'stream'> & {
  /** Default `GPUNET_EVENTS`. */
  stream?: string;
};

export interface JetStreamServerOptions {
  /** NATS servers. Default `nats://127.0.0.1:4222`. Ignored when `connection` is given. */
  servers?: string | string[];
  /**
   * Further connection options (name, credentials, reconnect policy). Default `noAsyncTraces:
   * true`: otherwise nats.js captures a stack trace for every request, a large share of the CPU a
   * busy consumer or relay spends.
   */
  connectionOptions?: Omit<NodeConnectionOptions, 'servers'>;
  /** Use this connection instead of opening one; `close()` leaves it open. */
  connection?: NatsConnection;
  /** Provisioned at `listen`, before anything is consumed. Default: nothing provisioned. */
  topology?: TopologyDefinition;
  /** How the topology's streams are provisioned (`provision`'s `streams`). Default `manage`. */
  streams?: 'manage' | 'use';
  /** Whether the topology's standing durables are made when missing (`provision`'s `standing`). Default `create`. */
  standing?: 'create' | 'leave';
  /**
   * Durable consumers. `@EventPattern('Type')` handlers run on the first one; pick another with
   * `@EventPattern('Type', { consumer: '<durable>' })`. Required when there are event handlers.
   */
  consumers?: ConsumerBinding[];
  /** Event type → schema of its `data`; an event that fails it is dead-lettered at once. */
  events?: Readonly<Record<string, z.ZodType>>;
  /** Query subject → request/response schemas for `@MessagePattern('<subject>')` handlers. */
  queries?: Readonly<Record<string, QueryContract>>;
  /** Queue group of the query subscriptions. Default: the first consumer's durable name, else none. */
  queue?: string;
  /** Default: the messaging pino logger. */
  logger?: Logger;
}

/** Transport id of JetStreamServer, to pin a handler in a hybrid app: `@EventPattern('X', JETSTREAM_TRANSPORT)`. */
export const JETSTREAM_TRANSPORT = Symbol.for('gpunet.jetstream');

type ServerStatus = 'connected' | 'disconnected' | 'reconnecting';
/** Connection status events that `on()` listens to. */
type StatusEvents = Record<ServerStatus, () => void>;

/** What Nest's default exception filter turns every non-RpcException into. */
function isNestGenericError(err: unknown): boolean {
  return typeof err === 'object' && err !== null && !(err instanceof Error) && (err as { status?: unknown }).status === 'error';
}

/**
 * Nest transport strategy on NATS JetStream (events) and core NATS request/reply (queries):
 *
 *   NestFactory.createMicroservice(AppModule, { strategy: new JetStreamServer({ ... }) })
 *
 * At `listen` it connects, provisions the topology, starts one JetStreamConsumerRunner per
 * consumer for the `@EventPattern('<EventType>')` handlers and subscribes each
 * `@MessagePattern('<subject>')` handler as a query responder. A handler's outcome decides the
 * message's fate (ack / nak with backoff / dead letter) in the runner; import
 * JetStreamTransportModule so that Nest hands errors over unchanged.
 *
 * Handlers receive the event's validated `data` as `@Payload()` and a JetStreamContext as
 * `@Ctx()`. With Nest 12's typings, a handler whose `@Ctx()` parameter is typed needs the
 * decorator's type argument: `@EventPattern<string>('JobSubmitted')`.
 */
export class JetStreamServer extends Server<StatusEvents, ServerStatus> implements CustomTransportStrategy {
  override transportId = JETSTREAM_TRANSPORT;
  /** Handler failures reach the consumer runner, which logs and settles them; Nest need not log them too. */
  override readonly propagatesEventHandlerErrors = true;
  private nc: NatsConnection | undefined;
  private ownsConnection = false;
  private readonly runners: JetStreamConsumerRunner[] = [];
  private readonly subscriptions: Subscription[] = [];
  private readonly emitter = new EventEmitter();
  private readonly log: Logger;
  private warnedGenericError = false;
  /** What provisioning did at the last `listen`. */
  provisionReport: ProvisionReport | undefined;

  constructor(private readonly options: JetStreamServerOptions = {}) {
    super();
    this.log = (options.logger ?? defaultMessagingLogger()).child({ component: 'jetstream-server' });
  }

  async listen(callback: (err?: unknown, ...optionalParams: unknown[]) => void): Promise<void> {
    try {
      await this.start();
      callback();
    } catch (err) {
      callback(err);
    }
  }

  private async start(): Promise<void> {
    const nc = this.options.connection ?? (await connect({ servers: this.options.servers ?? 'nats://127.0.0.1:4222', noAsyncTraces: true, ...this.options.connectionOptions }));
    this.nc = nc;
    this.ownsConnection = !this.options.connection;
    this._status$.next('connected');
    void this.watchConnection(nc);

    if (this.options.topology) {
      this.provisionReport = await provision(await jetstreamManager(nc), this.options.topology, { serverVersion: nc.info?.version, serverInfo: nc.info, logger: this.log, streams: this.options.streams ?? 'manage', standing: this.options.standing ?? 'create' });
    }

    const bindings = this.options.consumers ?? [];
    const routes = new Map<string, Map<string, EventRoute>>(bindings.map((b) => [b.durable, new Map()]));
    for (const [pattern, handler] of this.messageHandlers) {
      if (handler.isEventHandler) {
        const durable = (handler.extras?.consumer as string | undefined) ?? bindings[0]?.durable;
        const table = durable === undefined ? undefined : routes.get(durable);
        if (!table) throw new Error(`@EventPattern('${pattern}') needs a consumer: add ${durable ? `'${durable}'` : 'one'} to JetStreamServer options.consumers`);
        table.set(pattern, { handle: (event, ctx) => this.invokeEvent(handler, event, ctx) });
      } else {
        const queue = this.options.queue ?? bindings[0]?.durable;
        const sub = serveQuery(nc, pattern, this.options.queries?.[pattern] ?? {}, (request, ctx) => this.invokeQuery(handler, request, ctx), {
          ...(queue ? { queue } : {}),
          logger: this.log,
        });
        this.subscriptions.push(sub);
      }
    }
    await nc.flush();

    const js = jetstream(nc);
    for (const binding of bindings) {
      const table = routes.get(binding.durable)!;
      if (table.size === 0) continue;
      const runner = new JetStreamConsumerRunner(js, {
        ...binding,
        stream: binding.stream ?? EVENTS_STREAM,
        routes: table,
        ...(this.options.events ? { schemas: this.options.events } : {}),
        logger: this.log,
      });
      await runner.start();
      this.runners.push(runner);
    }
    this.log.info({ consumers: this.runners.length, queries: this.subscriptions.length }, 'jetstream transport listening');
  }

  /**
   * Stops consuming (messages in hand finish and settle, fetched ones are handed back), stops
   * answering queries after those in progress, then closes the connection if it opened it.
   */
  async close(): Promise<void> {
    await Promise.all(this.runners.splice(0).map((r) => r.close()));
    await Promise.all(this.subscriptions.splice(0).map((s) => s.drain()));
    if (this.nc && this.ownsConnection) await this.nc.drain().catch(() => this.nc?.close());
    this.nc = undefined;
    this._status$.next('disconnected');
    this.emitter.removeAllListeners();
  }

  /** Listens to `connected`, `disconnected`, `reconnecting` (the connection's status). */
  on<EventKey extends keyof StatusEvents = keyof StatusEvents, EventCallback extends StatusEvents[EventKey] = StatusEvents[EventKey]>(event: EventKey, callback: EventCallback): void {
    this.emitter.on(event, callback);
  }

  /** The NATS connection. */
  unwrap<T>(): T {
    if (!this.nc) throw new Error('JetStreamServer is not listening: call listen() first');
    return this.nc as T;
  }

  /** Runner statistics by durable consumer name (health checks, tests). */
  consumerStats(): Record<string, JetStreamConsumerRunner['stats']> {
    return Object.fromEntries(this.runners.map((r) => [r.name, r.stats]));
  }

  private async invokeEvent(handler: MessageHandler, event: BusEvent, ctx: EventContext): Promise<void> {
    const result = await handler(event.data, new JetStreamContext([event, ctx]));
    if (isObservable(result)) {
      await lastValueFrom(result as Observable<unknown>, { defaultValue: undefined }).catch((err: unknown) => {
        throw this.unwrapHandlerError(err);
      });
    }
  }

  private async invokeQuery(handler: MessageHandler, request: unknown, ctx: QueryContext): Promise<unknown> {
    const result: unknown = await handler(request, new NatsQueryContext([ctx]));
    if (!isObservable(result)) return result;
    return lastValueFrom(result as Observable<unknown>, { defaultValue: null }).catch((err: unknown) => {
      throw this.unwrapHandlerError(err);
    });
  }

  private unwrapHandlerError(err: unknown): unknown {
    if (isNestGenericError(err) && !this.warnedGenericError) {
      this.warnedGenericError = true;
      this.log.warn('a handler error reached the transport as Nest\'s generic error: import JetStreamTransportModule so errors keep their class (treated as retryable meanwhile)');
    }
    return err;
  }

  private async watchConnection(nc: NatsConnection): Promise<void> {
    for await (const s of nc.status()) {
      if (s.type === 'disconnect') {
        this._status$.next('disconnected');
        this.emitter.emit('disconnected');
        this.log.warn('nats disconnected');
      } else if (s.type === 'reconnecting') {
        this._status$.next('reconnecting');
        this.emitter.emit('reconnecting');
      } else if (s.type === 'reconnect') {
        this._status$.next('connected');
        this.emitter.emit('connected');
        this.log.info('nats reconnected');
      }
    }
  }
}
