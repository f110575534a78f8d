import { hostname } from 'node:os';
import { Commands, Queries, querySubject, Events, partitionedEventSubject, type ServiceName } from '#contracts';
import { ValidationError } from '#errors';
import { guardCheckedOutClients, openEventStore, parseEventStoreUrl, type EventStore } from '#event-store';
import { natsAuthOptions } from '#identity';
import {
  autoReplicas,
  JetStreamServer,
  JetStreamTransportModule,
  missingConsumers,
  OutboxRelay,
  PostgresInbox,
  SqliteInbox,
  serveQuery,
  type BusEvent,
  type ConsumerBinding,
  type Inbox,
  type QueryContract,
  type Topology,
} from '#messaging';
import { contextFromFields, Metrics, serveMetrics, SpanKind, startTracing, trace, tracer, context as otelContext, type MetricsServer, type Tracing } from '#telemetry';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection, type Subscription } from '@nats-io/transport-node';
import { Module, type DynamicModule, type INestApplicationContext, type Type } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import pg from 'pg';
import { pino, type Logger } from 'pino';
import 'reflect-metadata';
import type { z } from 'zod';
import { systemClock, type Clock } from './clock.js';
import { loadConfig, type BaseConfig } from './config.js';
import { EventWriter } from './event-writer.js';
import { elect, LeaderLease, leaderRoleOf, type LeaderOptions } from './leadership.js';
import { busMetrics, consumerMetrics, instrumentStore, relayMetrics } from './kit-metrics.js';
import { CLOCK, EVENT_STORE, EVENT_WRITER, LOGGER, METRICS, NATS_CONNECTION, SERVICE_CONFIG, SERVICE_CONTEXT } from './tokens.js';
import { defaultTopologyFile, eventPartitionsOf, topologyFor } from './topology.js';

/** Everything a service's providers may need, built once at start. */
export interface ServiceContext<C = BaseConfig> {
  readonly name: ServiceName;
  /** This process: the service name, or e.g. an execution agent's node id. */
  readonly instance: string;
  /** The event partition this process consumes (`GPUNET_PARTITION`), for a partitioned service run with N > 1. */
  readonly partition?: { readonly index: number; readonly count: number };
  /** The network's number of event partitions (topology `eventPartitions`, decision 0030): what its relay publishes by. */
  readonly eventPartitions: number;
  readonly config: C;
  readonly logger: Logger;
  readonly store: EventStore;
  readonly writer: EventWriter;
  readonly clock: Clock;
  readonly nc: NatsConnection;
  readonly inbox: Inbox;
  readonly startedAt: Date;
  /** This process's Prometheus registry, served on `/metrics` when GPUNET_METRICS_PORT is set. */
  readonly metrics: Metrics;
}

/** What a service declares; `runService` does the rest. */
export interface ServiceDefinition<S extends z.ZodObject = z.ZodObject> {
  name: ServiceName;
  /** Service-specific environment variables (keys are the names); merged with `baseConfig`. */
  config?: S;
  /** The Nest module with the service's controllers and providers. */
  module: Type<unknown>;
  /** Instance id when GPUNET_INSTANCE is unset. Default: the service name. */
  instance?: (config: BaseConfig & z.output<S>) => string;
  /**
   * Whether this service's consumer is split into the network's event partitions (decision 0030):
   * with `eventPartitions` N > 1 each process runs one partition, `GPUNET_PARTITION=i/N`, seen by
   * `consumers` as `ctx.partition`. Default false: such a service runs one consumer of every event
   * (placement, storage), and `GPUNET_PARTITION` is refused.
   */
  partitioned?: boolean;
  /** Durable consumers this process runs. Default: one named after the instance. `[]`: none. */
  consumers?: (ctx: ServiceContext<BaseConfig & z.output<S>>) => ConsumerBinding[];
  /** Stream-id prefix of the events this process writes (its relay publishes those). Default `<name>-`. */
  streamPrefix?: (ctx: ServiceContext<BaseConfig & z.output<S>>) => string;
  /**
   * Whether this process creates and updates the topology's streams (default `true`). An
   * execution node sets `false`: it uses the streams the control plane made and may not change
   * them (deploy/nats-permissions.yaml).
   */
  manageStreams?: boolean;
  /**
   * The store this process opens, instead of `GPUNET_STORE_URL`: a process outside the control
   * plane (an execution node) keeps its own journal and never sees the central store.
   */
  storeUrl?: (config: BaseConfig & z.output<S>) => string;
  /**
   * What carries this process's events onward, instead of the outbox relay to JetStream (a node
   * reports its journal to the recorder). Started after the app, stopped before NATS closes.
   */
  relay?: (ctx: ServiceContext<BaseConfig & z.output<S>>) => ServiceRelay;
  /**
   * Whether this process provisions the topology (streams and its consumers). Default true.
   * False: it only waits for its consumers to exist (made by the control plane), so it needs no
   * right to create or change streams.
   */
  provision?: boolean;
  /**
   * A single-writer part (decision 0029): the process waits as a standby until it holds the
   * role's lease (NATS KV `gpunet-leases`, key = role; with `perPartition`, one role per event
   * partition, `<role>-p<i>`), records its term in the store, and only
   * then starts (onStart, its consumers, timers, relay). Every append it makes is fenced on that
   * term; when the lease ends or the store refuses an append, it stops deciding at once and steps
   * down (`runServiceMain` starts it again as a standby).
   */
  leader?: LeaderOptions;
  /** Also serve HTTP (intake). `bodyLimit` of JSON bodies, default `8mb`. */
  http?: (ctx: ServiceContext<BaseConfig & z.output<S>>) => { port: number; host?: string; bodyLimit?: string };
  /**
   * Checks of the configuration that need I/O (a key file), run once store and NATS are open and
   * *before* a `leader` waits for its lease: a standby that could not work fails at its start, not
   * hours later when it takes over.
   */
  preflight?: (ctx: ServiceContext<BaseConfig & z.output<S>>) => Promise<void> | void;
  /** After store and NATS are open, before anything is consumed (e.g. fold state from the store); a `leader` runs it once elected. */
  onStart?: (ctx: ServiceContext<BaseConfig & z.output<S>>) => Promise<void> | void;
  /** Before the store and NATS close on shutdown. */
  onStop?: (ctx: ServiceContext<BaseConfig & z.output<S>>) => Promise<void> | void;
  /**
   * Whether this process reports the whole bus on its `/metrics`: every durable consumer's lag and
   * every stream's size, the dead letters per consumer. One process per network does (placement),
   * so a stopped service's backlog is still seen. Default false.
   */
  busMetrics?: boolean;
  /** Overrides for tests: environment (default process.env), clock, and where log lines go (default stdout). */
  env?: NodeJS.ProcessEnv;
  clock?: Clock;
  logDestination?: pino.DestinationStream;
}

/** Something that carries a process's recorded events onward (see `ServiceDefinition.relay`). */
export interface ServiceRelay {
  start(): Promise<void>;
  stop(): Promise<void>;
  /** Store position of the last event carried onward (for `/metrics`), when the relay knows it. */
  readonly position?: bigint;
}

/** Identity helper so that a definition's config type flows into its callbacks. */
export function defineService<S extends z.ZodObject>(def: ServiceDefinition<S>): ServiceDefinition<S> {
  return def;
}

export interface RunningService<C = BaseConfig> {
  readonly ctx: ServiceContext<C>;
  readonly app: INestApplicationContext;
  /** The HTTP address when the service serves HTTP. */
  readonly httpUrl?: string;
  /** `http://host:port` of `/metrics` when served (GPUNET_METRICS_PORT). */
  readonly metricsUrl?: string;
  /** For a `leader` service: the role it leads, this process's term, and a promise that resolves when it ends (the reason). */
  readonly leadership?: { readonly role: string; readonly holder: string; readonly term: number; readonly lost: Promise<string> };
  /** Graceful stop: consumers finish or hand back the message in hand, the relay flushes, connections close. */
  stop(): Promise<void>;
}

/** Commands and queries this service answers, as subject → request/response schemas. */
function queryContracts(name: ServiceName): Record<string, QueryContract> {
  const out: Record<string, QueryContract> = {};
  for (const c of Object.values(Commands)) if (c.handler === name) out[c.subject] = { request: c.schema, response: c.replySchema };
  for (const q of Object.values(Queries)) if (q.service === name) out[q.subject] = { request: q.schema, response: q.replySchema };
  return out;
}

/** The event the store holds at a bus event's stream and revision. */
async function storedCopy(store: EventStore, event: BusEvent): Promise<BusEvent | undefined> {
  if (event.streamId === undefined || event.revision === undefined) return undefined;
  const [stored] = await store.readStream(event.streamId, { fromRevision: event.revision, maxCount: 1 });
  return stored && stored.revision === event.revision ? stored : undefined;
}

const eventSchemas: Record<string, z.ZodType> = Object.fromEntries(Object.values(Events).map((e) => [e.name, e.schema]));

/**
 * Starts one service process: config → logger → event store → NATS → topology → Nest app with
 * the JetStream strategy (and HTTP when asked) → outbox relay → health. Returns a handle for
 * in-process tests; `main.ts` files use `runServiceMain`, which also wires SIGTERM.
 */
export async function startService<S extends z.ZodObject>(
  def: ServiceDefinition<S>,
  run: {
    signal?: AbortSignal;
    /** Called when a `leader` service has passed its checks and begins to wait for its lease. */
    onStandby?: () => void;
  } = {},
): Promise<RunningService<BaseConfig & z.output<S>>> {
  type C = BaseConfig & z.output<S>;
  const config = loadConfig((def.config ?? ({ shape: {} } as unknown as S)) as S, def.env ?? process.env) as C;
  const topologyFile = config.GPUNET_TOPOLOGY_FILE ?? defaultTopologyFile();
  const eventPartitions = await eventPartitionsOf(topologyFile);
  const partition = partitionOf(def, config, eventPartitions);
  // Every process of a service (replicas, partitions) shares its relay's checkpoint; see relayName.
  const serviceInstance = def.instance?.(config) ?? def.name;
  const instance = config.GPUNET_INSTANCE ?? (partition ? `${serviceInstance}-p${partition.index}` : serviceInstance);
  // `host`: on a network of several machines a log line says which one did it (journald keeps the lines per machine).
  const options = { level: config.GPUNET_LOG_LEVEL, base: { service: def.name, instance, host: hostname() } };
  const logger = def.logDestination ? pino(options, def.logDestination) : pino(options);
  const clock = def.clock ?? systemClock;
  const startedAt = clock.now();
  const metrics = new Metrics({ service: def.name, instance });
  // Before anything opens: spans of the start (the store fold) are exported too.
  const tracing: Tracing | undefined = config.GPUNET_OTLP_ENDPOINT ? startTracing({ service: def.name, instance, endpoint: config.GPUNET_OTLP_ENDPOINT }) : undefined;

  const storeUrl = def.storeUrl?.(config) ?? config.GPUNET_STORE_URL;
  const location = parseEventStoreUrl(storeUrl);
  if (location.kind === 'sqlite') mkdirSync(dirname(location.path), { recursive: true });
  const store = await openEventStore(storeUrl, { ...(config.GPUNET_CHAIN_KEY && !def.storeUrl ? { chainKey: config.GPUNET_CHAIN_KEY } : {}) });
  instrumentStore(metrics, store, location.kind);
  let inboxPool: pg.Pool | undefined;
  let inbox: Inbox;
  if (location.kind === 'sqlite') inbox = new SqliteInbox({ path: location.path });
  else {
    inboxPool = new pg.Pool({ connectionString: location.connectionString, max: 2 });
    // pg emits 'error' on the pool when the server ends an idle client (restart, failover);
    // unhandled, that would end the process. The next query reconnects.
    inboxPool.on('error', (err) => logger.warn({ err }, 'inbox connection lost; reconnecting on next use'));
    guardCheckedOutClients(inboxPool);
    inbox = new PostgresInbox(inboxPool);
  }
  const nc = await connect({
    ...(await natsAuthOptions(config.GPUNET_NATS_NKEY_FILE)),
    servers: config.GPUNET_NATS_URL.split(',').map((s) => s.trim()),
    name: `gpunet-${def.name}-${instance}`,
    noAsyncTraces: true,
    maxReconnectAttempts: -1,
  });
  const writer = new EventWriter(store, def.name, clock);
  const ctx: ServiceContext<C> = { name: def.name, instance, ...(partition ? { partition } : {}), eventPartitions, config, logger, store, writer, clock, nc, inbox, startedAt, metrics };

  const bindings = def.consumers ? def.consumers(ctx) : [{ durable: instance }];
  const durables = bindings.map((b) => b.durable);
  let lease: LeaderLease | undefined;
  try {
    const topology = await topologyFor(topologyFile, instance, durables, partition?.index);
    await def.preflight?.(ctx);
    let leadership: Leadership | undefined;
    if (def.leader) {
      const role = leaderRoleOf(def.leader, partition);
      const leaderGauge = metrics.gauge({ name: 'gpunet_leader', help: '1 while this process leads its single-writer role, 0 as a standby (decision 0029).', labelNames: ['role'] });
      leaderGauge.set({ role }, 0);
      // The lease bucket is replicated as the event stream is (R3 in a cluster): a lost nats-server must not take the lease with it.
      const declared = topology.streams.find((st) => st.name === 'GPUNET_EVENTS')?.replicas ?? 1;
      const replicas = declared === 'auto' ? autoReplicas(nc.info) : declared;
      lease = new LeaderLease(nc, role, instance, { leaseMs: config.GPUNET_LEASE_MS, renewMs: config.GPUNET_LEASE_RENEW_MS, replicas }, logger);
      const waited = performance.now();
      run.onStandby?.();
      await lease.acquire(run.signal);
      const { fence, term } = await elect(store, writer, role, lease.holder, config.GPUNET_LEASE_MS, clock);
      const held = lease;
      writer.fenceWith(fence, (err) => held.fenced(`the store refused an append: ${err.message}`));
      void held.lost.then((reason) => {
        writer.depose(reason);
        leaderGauge.set({ role }, 0);
      });
      leaderGauge.set({ role }, 1);
      logger.info({ role, holder: lease.holder, term, fence: fence.revision.toString(), waitedMs: Math.round(performance.now() - waited) }, 'leader: acquired');
      leadership = { role, holder: lease.holder, term, lost: held.lost, lease: held };
    }
    if (def.provision === false) {
      await waitForConsumers(nc, topology.consumers, logger, {
        why: 'waiting for the control plane to create this process\'s consumers',
        done: 'every consumer this process runs exists',
      });
    }
    await def.onStart?.(ctx);
    if (def.busMetrics) busMetrics(metrics, nc, topology, logger);
    return await startApp(def, ctx, bindings, topology, location.kind, { inboxPool, tracing, relayName: `relay-${serviceInstance}`, leadership });
  } catch (err) {
    await lease?.release().catch(() => undefined);
    // Nothing half-started stays open: a test that catches this error leaks no connection.
    await tracing?.shutdown();
    await nc.close().catch(() => undefined);
    await inbox.close().catch(() => undefined);
    await inboxPool?.end().catch(() => undefined);
    await store.close().catch(() => undefined);
    throw err;
  }
}

interface Leadership {
  role: string;
  holder: string;
  term: number;
  lost: Promise<string>;
  lease: LeaderLease;
}

async function startApp<C extends BaseConfig>(
  def: ServiceDefinition<z.ZodObject>,
  ctx: ServiceContext<C>,
  bindings: ConsumerBinding[],
  topology: Topology,
  storeKind: string,
  owned: { inboxPool: pg.Pool | undefined; tracing: Tracing | undefined; relayName: string; leadership: Leadership | undefined },
): Promise<RunningService<C>> {
  const { config, logger, store, writer, clock, nc, inbox, instance, startedAt, metrics, eventPartitions } = ctx;
  const { inboxPool, tracing, relayName, leadership } = owned;
  const durables = bindings.map((b) => b.durable);

  @Module({})
  class KitModule {}
  const kit: DynamicModule = {
    module: KitModule,
    global: true,
    providers: [
      { provide: SERVICE_CONFIG, useValue: config },
      { provide: SERVICE_CONTEXT, useValue: ctx },
      { provide: LOGGER, useValue: logger },
      { provide: EVENT_STORE, useValue: store },
      { provide: EVENT_WRITER, useValue: writer },
      { provide: CLOCK, useValue: clock },
      { provide: NATS_CONNECTION, useValue: nc },
      { provide: METRICS, useValue: metrics },
    ],
    exports: [SERVICE_CONFIG, SERVICE_CONTEXT, LOGGER, EVENT_STORE, EVENT_WRITER, CLOCK, NATS_CONNECTION, METRICS],
  };
  @Module({ imports: [kit, JetStreamTransportModule, def.module] })
  class RootModule {}

  const consumerFigures = consumerMetrics(metrics);
  const strategy = new JetStreamServer({
    connection: nc,
    ...(def.provision === false ? {} : { topology }),
    streams: def.manageStreams === false ? 'use' : 'manage',
    // With an identity (permissions on), a service may make only its own durable; the operator
    // (`gpunet up`) or each owner makes the other standing ones, and the relay waits for them.
    standing: config.GPUNET_NATS_NKEY_FILE === undefined ? 'create' : 'leave',
    // Every event is handled as the store holds it, never as a bus message claims it (decision
    // 0016) — in a process that holds the central store. A node's own journal holds no such copy:
    // its work comes only from the recorder, which alone may publish on its work subjects.
    consumers: bindings.map((b) => ({ inbox, onSettled: consumerFigures.onSettled, ...(def.storeUrl ? {} : { recorded: (e: BusEvent) => storedCopy(store, e) }), ...b })),
    events: eventSchemas,
    queries: queryContracts(def.name),
    queue: def.name,
    logger,
  });

  let app: INestApplicationContext;
  let httpUrl: string | undefined;
  const http = (def.http as ((c: ServiceContext<C>) => { port: number; host?: string; bodyLimit?: string }) | undefined)?.(ctx);
  // A start that fails halfway (a consumer that cannot be made, a port taken) closes what it
  // opened: the app's providers (store followers, timers) and the relay would otherwise go on
  // running on a store the caller closes next.
  let created: INestApplicationContext | undefined;
  let relay: ServiceRelay | undefined;
  let metricsServer: MetricsServer | undefined;
  try {
    if (http) {
      const web = await NestFactory.create<NestExpressApplication>(RootModule, { logger: false, bodyParser: false });
      created = web;
      web.useBodyParser('json', { limit: http.bodyLimit ?? '8mb' });
      // A server span per request, child of the caller's `traceparent` when it sent one; the work
      // the request causes (events appended, queries asked) joins that trace.
      if (tracing) {
        web.use((req: { method: string; path: string; headers: Record<string, unknown> }, res: { statusCode: number; on(e: 'finish' | 'close', f: () => void): void }, next: () => void) => {
          const parent = contextFromFields(req.headers);
          const span = tracer().startSpan(`${req.method} ${req.path.split('/').slice(0, 3).join('/')}`, { kind: SpanKind.SERVER, attributes: { 'http.request.method': req.method, 'url.path': req.path } }, parent);
          let ended = false;
          const end = () => {
            if (ended) return;
            ended = true;
            span.setAttribute('http.response.status_code', res.statusCode);
            span.end();
          };
          res.on('finish', end);
          res.on('close', end);
          otelContext.with(trace.setSpan(parent, span), next);
        });
      }
      web.connectMicroservice({ strategy }, { inheritAppConfig: true });
      await web.startAllMicroservices();
      const host = http.host ?? '127.0.0.1';
      await web.listen(http.port, host);
      const address = web.getHttpServer().address();
      const port = typeof address === 'object' && address ? address.port : http.port;
      httpUrl = `http://${host}:${port}`;
      app = web;
    } else {
      const micro = await NestFactory.createMicroservice(RootModule, { strategy, logger: false });
      created = micro;
      await micro.listen();
      app = micro;
    }

    relay =
      (def.relay as ((c: ServiceContext<C>) => ServiceRelay) | undefined)?.(ctx) ??
      new OutboxRelay(store, nc, {
        // One checkpoint per service, not per process: a second replica or partition resumes where
        // the service's relays got to, instead of publishing the whole store again from position 0.
        // Each running relay publishes every event of the prefix; JetStream keeps the first copy
        // (Nats-Msg-Id = event id within the duplicate window) and consumers' inboxes drop a later one.
        name: relayName,
        filter: { streamPrefix: (def.streamPrefix as ((c: ServiceContext<C>) => string) | undefined)?.(ctx) ?? `${def.name}-` },
        ...(eventPartitions > 1 ? { subjectOf: (e: BusEvent) => partitionedEventSubject(e.type, e.metadata, eventPartitions) } : {}),
        ready: async (stopped) => {
          await waitForConsumers(nc, topology.standing, logger, {
            why: 'relay: waiting for the consumers the events stream keeps events for (each service makes its own at start; `gpunet up` makes them all); the events wait in the store',
            done: 'relay: every consumer the events are kept for exists; publishing',
            stopped,
          });
        },
        logger,
      });
    await relay.start();
    if (relay.position !== undefined) {
      const filter = { streamPrefix: (def.streamPrefix as ((c: ServiceContext<C>) => string) | undefined)?.(ctx) ?? `${def.name}-` };
      relayMetrics(metrics, store, relay as { position: bigint }, filter, () => clock.now().getTime());
    }
    if (config.GPUNET_METRICS_PORT !== undefined) {
      metricsServer = await serveMetrics(metrics, { port: config.GPUNET_METRICS_PORT, host: config.GPUNET_METRICS_HOST });
    }

  } catch (err) {
    await metricsServer?.close().catch(() => undefined);
    await relay?.stop().catch(() => undefined);
    await created?.close().catch(() => undefined);
    throw err;
  }
  const health: Subscription = serveQuery(
    nc,
    querySubject(def.name, 'Health'),
    { request: Queries.Health.schema, response: Queries.Health.replySchema },
    async () => {
      const checks: { name: string; ok: boolean; detail?: string }[] = [];
      try {
        await store.headPosition();
        checks.push({ name: 'event-store', ok: true });
      } catch (err) {
        checks.push({ name: 'event-store', ok: false, detail: (err as Error).message });
      }
      checks.push(nc.isClosed() ? { name: 'nats', ok: false, detail: 'connection closed' } : { name: 'nats', ok: true });
      const now = clock.now();
      return {
        service: def.name,
        instance,
        status: checks.every((c) => c.ok) ? 'ok' : 'failing',
        startedAt: startedAt.toISOString(),
        uptimeMs: Math.max(0, now.getTime() - startedAt.getTime()),
        checks,
        checkedAt: now.toISOString(),
      };
    },
    { logger },
  );

  logger.info({ consumers: durables, http: httpUrl, metrics: metricsServer && `${metricsServer.url}/metrics`, tracing: config.GPUNET_OTLP_ENDPOINT ?? 'off', store: storeKind }, 'service started');

  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      logger.info('stopping');
      await app.close(); // consumers finish or hand back the message in hand
      await (def.onStop as ((c: ServiceContext<C>) => Promise<void> | void) | undefined)?.(ctx);
      await relay.stop();
      // After the last append: the standby may take over at once.
      await leadership?.lease.release();
      health.unsubscribe();
      await nc.drain().catch(() => undefined);
      await inbox.close();
      await inboxPool?.end();
      await store.close();
      await metricsServer?.close();
      await tracing?.shutdown();
      logger.info('stopped');
    })());
  return {
    ctx,
    app,
    ...(httpUrl ? { httpUrl } : {}),
    ...(metricsServer ? { metricsUrl: metricsServer.url } : {}),
    ...(leadership ? { leadership: { role: leadership.role, holder: leadership.holder, term: leadership.term, lost: leadership.lost } } : {}),
    stop,
  };
}

/**
 * This process's partition: `GPUNET_PARTITION` checked against the topology's `eventPartitions`
 * and against whether the service is partitioned at all. Each mismatch is a ValidationError
 * naming the variable and what to set, so no partition is left unconsumed or consumed twice by a
 * process that counts differently.
 */
function partitionOf(def: ServiceDefinition<z.ZodObject>, config: BaseConfig, eventPartitions: number): { index: number; count: number } | undefined {
  const p = config.GPUNET_PARTITION;
  const issue = (message: string, fix: string) => new ValidationError(`invalid configuration: GPUNET_PARTITION: ${message}`, [{ path: 'GPUNET_PARTITION', message, fix }]);
  if (p && !def.partitioned) throw issue(`${def.name} is not partitioned: one process consumes every event`, 'unset GPUNET_PARTITION for this service');
  if (!def.partitioned) return undefined;
  if (!p) {
    if (eventPartitions === 1) return undefined;
    throw issue(`the topology splits the events into ${eventPartitions} partitions and this ${def.name} process names none (not set)`, `set GPUNET_PARTITION=i/${eventPartitions}, i from 0 to ${eventPartitions - 1}, one process per partition`);
  }
  if (p.count !== eventPartitions) throw issue(`names ${p.count} partitions (got "${p.index}/${p.count}") but the topology's eventPartitions is ${eventPartitions}`, `set GPUNET_PARTITION=${Math.min(p.index, eventPartitions - 1)}/${eventPartitions}, or change eventPartitions in the topology file for every process`);
  return p.count === 1 ? undefined : p;
}

/**
 * Resolves once every one of `consumers` exists on the server; false when `stopped` says to give
 * up first. Says what it waits for once and then every 30 s (`why`: who makes them, what waits
 * meanwhile), and when the wait is over. Each service waits for the consumers it runs when the
 * control plane makes them (bounded by its start-up timeout), and its relay for the durables the
 * events stream keeps events for (decision 0038: before that, an interest stream would drop what
 * it publishes; the events wait in the store).
 */
async function waitForConsumers(
  nc: NatsConnection,
  consumers: readonly { readonly stream: string; readonly durable: string }[],
  logger: Logger,
  wait: { why: string; done: string; stopped?: () => boolean },
): Promise<boolean> {
  if (consumers.length === 0) return true;
  const jsm = await jetstreamManager(nc);
  let toldAt: number | undefined;
  while (!wait.stopped?.()) {
    const missing = await missingConsumers(jsm, consumers).catch((err: unknown) => [`(cannot ask: ${(err as Error).message})`]);
    if (missing.length === 0) {
      if (toldAt !== undefined) logger.info(wait.done);
      return true;
    }
    if (toldAt === undefined || Date.now() - toldAt >= 30_000) {
      logger.warn({ missing }, wait.why);
      toldAt = Date.now();
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  return false;
}

/**
 * `main.ts` entry: starts the service and stops it cleanly on SIGTERM/SIGINT (exit 0), or exits
 * 1 with the reason when start fails or stopping takes longer than `GPUNET_STOP_TIMEOUT_MS` (20 s).
 * A `leader` service waits as a standby until it holds its lease; when its term ends (lease
 * lost, or fenced off by the store) it stops and waits as a standby again, in the same process.
 */
export async function runServiceMain<S extends z.ZodObject>(def: ServiceDefinition<S>): Promise<void> {
  let running: RunningService<BaseConfig & z.output<S>> | undefined;
  let signalled = false;
  const waiting = new AbortController();
  const onSignal = (signal: NodeJS.Signals) => {
    signalled = true;
    if (!running) {
      // A standby waiting for its lease: nothing to drain.
      waiting.abort(new Error(`${signal} while waiting for the lease`));
      return;
    }
    const current = running;
    current.ctx.logger.info({ signal }, 'signal received');
    const timer = setTimeout(() => {
      current.ctx.logger.error('stop timed out');
      process.exit(1);
    }, Number(process.env.GPUNET_STOP_TIMEOUT_MS ?? 20_000));
    timer.unref();
    current.stop().then(
      () => process.exit(0),
      (err: unknown) => {
        current.ctx.logger.error({ err }, 'stop failed');
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', onSignal);
  process.once('SIGINT', onSignal);
  // Once a process has passed its checks and waited as a standby, a start that fails (the takeover
  // meets the outage that cost the old leader its lease: a nats-server gone, the cluster electing;
  // or, after stepping down, starting again meets it) is retried, never the end of the process: a
  // standby that ended there would leave its role with no one to take over next time.
  let steppedDown = false;
  let wasStandby = false;
  for (let failures = 0; ; ) {
    try {
      running = await startService(def, { signal: waiting.signal, onStandby: () => (wasStandby = true) });
      failures = 0;
    } catch (err) {
      if (signalled) process.exit(0);
      const e = err as Error & { issues?: unknown };
      if ((steppedDown || wasStandby) && !(err instanceof ValidationError)) {
        failures++;
        const delayMs = Math.min(500 * 2 ** Math.min(failures, 4), 8_000);
        process.stderr.write(`${def.name}: cannot start ${steppedDown ? 'again as a standby' : 'after waiting as a standby'} (${e.message}); retrying in ${delayMs} ms\n`);
        await new Promise((r) => setTimeout(r, delayMs));
        continue;
      }
      process.stderr.write(`${def.name}: cannot start: ${e.message}\n`);
      if (e.issues) process.stderr.write(`${JSON.stringify(e.issues, null, 2)}\n`);
      process.exit(1);
    }
    if (!running.leadership) return;
    const reason = await running.leadership.lost;
    if (signalled) return; // the signal handler stops and exits
    const { logger } = running.ctx;
    logger.warn({ role: running.leadership.role, holder: running.leadership.holder, term: running.leadership.term, reason }, 'leader: stepped down');
    const stepping = running;
    running = undefined;
    await stepping.stop().catch((err: unknown) => logger.error({ err }, 'stop after stepping down failed'));
    if (signalled) process.exit(0);
    steppedDown = true;
  }
}

/** Alias of `runServiceMain`, the entry point of a service's `main.ts`. */
export const runService = runServiceMain;
