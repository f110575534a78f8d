import type { EventStore, ReadAllFilter } from '#event-store';
import type { SettledMessage, Topology } from '#messaging';
import { LATENCY_BUCKETS_SECONDS, type Metrics } from '#telemetry';
import { jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Logger } from 'pino';

/** What every process measures about its consumers, whatever its service. */
export interface ConsumerMetrics {
  onSettled(s: SettledMessage): void;
}

/**
 * Consumer figures every process keeps for its own durable consumers, updated once per settled
 * message (a counter increment and a histogram observation: no allocation per job).
 */
export function consumerMetrics(metrics: Metrics): ConsumerMetrics {
  const messages = metrics.counter({
    name: 'gpunet_consumer_messages_total',
    help: 'Messages settled by this process\'s durable consumers, by outcome (handled, duplicate, skipped, retried, dead_lettered).',
    labelNames: ['stream', 'consumer', 'outcome'],
  });
  const redeliveries = metrics.counter({
    name: 'gpunet_consumer_redeliveries_total',
    help: 'Messages handled again after an earlier delivery (JetStream delivery count above 1).',
    labelNames: ['stream', 'consumer'],
  });
  const deadLetters = metrics.counter({
    name: 'gpunet_dead_letters_total',
    help: 'Messages this process sent to the dead-letter stream, by reason (schema_invalid, max_deliveries, terminal_error, not_recorded).',
    labelNames: ['consumer', 'reason'],
  });
  const handleSeconds = metrics.histogram({
    name: 'gpunet_consumer_handle_seconds',
    help: 'Time from the start of handling a message to its settle (ack, nak or dead letter).',
    labelNames: ['consumer'],
    buckets: LATENCY_BUCKETS_SECONDS,
  });
  return {
    onSettled: (s) => {
      messages.inc({ stream: s.stream, consumer: s.consumer, outcome: s.outcome });
      if (s.deliveryCount > 1) redeliveries.inc({ stream: s.stream, consumer: s.consumer });
      if (s.outcome === 'dead_lettered') deadLetters.inc({ consumer: s.consumer, reason: s.reason ?? 'unknown' });
      handleSeconds.observe({ consumer: s.consumer }, s.seconds);
    },
  };
}

/** Times every append to the store (`gpunet_store_append_seconds`) by wrapping the instance's method. */
export function instrumentStore(metrics: Metrics, store: EventStore, kind: string): void {
  const appendSeconds = metrics.histogram({
    name: 'gpunet_store_append_seconds',
    help: 'Time of one appendToStream call to the event store (one transaction), successful or not.',
    labelNames: ['backend'],
    buckets: LATENCY_BUCKETS_SECONDS,
  });
  const labels = { backend: kind };
  const original = store.appendToStream.bind(store);
  (store as { appendToStream: EventStore['appendToStream'] }).appendToStream = async (...args) => {
    const end = appendSeconds.startTimer(labels);
    try {
      return await original(...args);
    } finally {
      end();
    }
  };
  metrics.gauge({
    name: 'gpunet_store_head_position',
    help: 'Global position of the newest event in the store this process writes to.',
    async collect() {
      this.set(Number(await store.headPosition()));
    },
  });
}

/**
 * Relay figures: how far the relay has carried this process's events, and the age of the oldest
 * event it has not carried yet (0 when it is caught up) — the outbox relay lag an operator
 * alerts on. Read at scrape time: one indexed read of at most one event.
 */
export function relayMetrics(metrics: Metrics, store: EventStore, relay: { position: bigint }, filter: ReadAllFilter | undefined, now: () => number): void {
  metrics.gauge({
    name: 'gpunet_outbox_relay_position',
    help: 'Store position of the last event the relay knows is on the bus (contiguously).',
    collect() {
      this.set(Number(relay.position));
    },
  });
  metrics.gauge({
    name: 'gpunet_outbox_relay_lag_seconds',
    help: 'Age of the oldest event this process recorded that the relay has not published yet; 0 when caught up.',
    async collect() {
      const [next] = await store.readAll({ fromPosition: relay.position, maxCount: 1, ...(filter ? { filter } : {}) });
      this.set(next ? Math.max(0, (now() - Date.parse(next.recordedAt)) / 1000) : 0);
    },
  });
}

/**
 * The bus as JetStream sees it, for the whole network: every durable consumer's backlog
 * (`num_pending`: not yet delivered; `num_ack_pending`: delivered, not acked; `num_redelivered`)
 * and every stream's message count — the dead-letter stream's per consumer. One process per
 * network reports these (placement, see its definition), so a stopped service's consumer still
 * shows its growing lag. Read at scrape time, a few JetStream API calls; a failed read keeps
 * the series out of that scrape rather than reporting a stale figure.
 */
export function busMetrics(metrics: Metrics, nc: NatsConnection, topology: Topology, logger: Logger, dlqStream = 'GPUNET_DLQ'): void {
  const streams = [...new Set(topology.streams.map((s) => s.name))];
  let warned = false;
  const warn = (err: unknown) => {
    if (!warned) logger.warn({ err: (err as Error).message }, 'cannot read JetStream figures for /metrics (this is logged once)');
    warned = true;
  };
  const pending = metrics.gauge({ name: 'gpunet_jetstream_consumer_pending_messages', help: 'Messages of the consumer\'s filter not yet delivered to it (JetStream num_pending): its lag.', labelNames: ['stream', 'consumer'] });
  const ackPending = metrics.gauge({ name: 'gpunet_jetstream_consumer_ack_pending_messages', help: 'Messages delivered to the consumer and not yet acknowledged (num_ack_pending).', labelNames: ['stream', 'consumer'] });
  const redelivered = metrics.gauge({ name: 'gpunet_jetstream_consumer_redelivered_messages', help: 'Messages delivered more than once and not yet acknowledged (num_redelivered).', labelNames: ['stream', 'consumer'] });
  const streamMessages = metrics.gauge({ name: 'gpunet_jetstream_stream_messages', help: 'Messages held by the stream.', labelNames: ['stream'] });
  const dlqMessages = metrics.gauge({ name: 'gpunet_dead_letter_messages', help: 'Dead letters held by the dead-letter stream, by the consumer that gave up on them.', labelNames: ['consumer'] });
  let jsm: Awaited<ReturnType<typeof jetstreamManager>> | undefined;
  // One read serves every gauge of a scrape: prom-client calls each collect in turn.
  let reading: Promise<void> | undefined;
  const read = () =>
    (reading ??= (async () => {
      try {
        jsm ??= await jetstreamManager(nc, { timeout: 2_000 });
        pending.reset();
        ackPending.reset();
        redelivered.reset();
        for (const stream of streams) {
          for (const c of await jsm.consumers.list(stream).next()) {
            // Durable consumers only: ephemeral ones (`gpunet logs` readers) would be unbounded label values.
            if (!c.config.durable_name) continue;
            const labels = { stream, consumer: c.name };
            pending.set(labels, c.num_pending);
            ackPending.set(labels, c.num_ack_pending);
            redelivered.set(labels, c.num_redelivered);
          }
        }
        streamMessages.reset();
        for (const stream of streams) streamMessages.set({ stream }, (await jsm.streams.info(stream)).state.messages);
        dlqMessages.reset();
        if (streams.includes(dlqStream)) {
          const info = await jsm.streams.info(dlqStream, { subjects_filter: '>' });
          for (const [subject, n] of Object.entries(info.state.subjects ?? {})) dlqMessages.set({ consumer: subject.split('.').slice(2).join('.') || subject }, n);
        }
      } catch (err) {
        warn(err);
      } finally {
        setImmediate(() => (reading = undefined));
      }
    })());
  // Each gauge's collect awaits the one shared read.
  for (const g of [pending, ackPending, redelivered, streamMessages, dlqMessages]) {
    (g as unknown as { collect: () => Promise<void> }).collect = read;
  }
}
