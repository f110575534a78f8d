import { z } from 'zod';
import { parseDurationMs } from '../duration.js';
import { TopologyError } from '../errors.js';
import { describeIssues, toFieldIssues } from '../zod-issues.js';

/**
 * Streams and durable pull consumers as plain data. The real definitions live in
 * `deploy/topology/*.yaml|json`; `provision()` makes the server match them at start.
 * Durations are written `500ms`, `30s`, `2m`, `1h`, `30d` or as integer milliseconds.
 */

const duration = z.union([z.string(), z.number()]).transform((value, ctx) => {
  try {
    return parseDurationMs(value);
  } catch (err) {
    ctx.addIssue({ code: 'custom', message: (err as Error).message });
    return z.NEVER;
  }
});

const name = z.string().regex(/^[A-Za-z0-9_-]+$/, 'letters, digits, _ and - only (no dots, spaces or wildcards)');
const subject = z.string().regex(/^[^\s]+$/, 'a NATS subject without spaces');
/** -1 means unlimited, as on the server. */
const limit = z.number().int().min(-1);

const streamSchema = z.strictObject({
  name,
  subjects: z.array(subject).min(1),
  description: z.string().optional(),
  /** Default `file`. */
  storage: z.enum(['file', 'memory']).default('file'),
  /** Default `limits`. */
  retention: z.enum(['limits', 'interest', 'workqueue']).default('limits'),
  /** Default 0 (unlimited). */
  maxAge: duration.default(0),
  /** Default -1 (unlimited). */
  maxMsgs: limit.default(-1),
  /** Default -1 (unlimited). */
  maxBytes: limit.default(-1),
  /** Default -1 (unlimited). */
  maxMsgSize: limit.default(-1),
  /** What to do at a limit: drop the oldest (`old`, default) or refuse the new (`new`). */
  discard: z.enum(['old', 'new']).default('old'),
  /** Window in which a repeated `Nats-Msg-Id` is dropped. Default 2m. */
  duplicateWindow: duration.default(120_000),
  /**
   * Copies of the stream kept by the cluster (Raft). Default 1. `auto`: 3 when the server is a
   * member of a cluster (its INFO names one), 1 when it runs alone — one topology file for both
   * (decision 0022). A cluster that cannot hold 3 copies refuses the stream (provision names it).
   */
  replicas: z.union([z.number().int().min(1).max(5), z.literal('auto')]).default(1),
  /** Default false. Once true, the server never lets it go back. */
  denyDelete: z.boolean().default(false),
  /** Default false. Once true, the server never lets it go back. */
  denyPurge: z.boolean().default(false),
});

const consumerSchema = z
  .strictObject({
    stream: name,
    durable: name,
    description: z.string().optional(),
    /**
     * Subjects this consumer receives. nats-server 2.9 allows one filter per consumer: with
     * several, an older server gets their common wildcard instead and the consumer runner skips
     * (acks) event types it has no handler for. Default: the whole stream.
     */
    filterSubjects: z.array(subject).min(1).optional(),
    /** How long the server waits for an ack before redelivering. Default 30s. */
    ackWait: duration.default(30_000),
    /** Unacked messages in flight at most; the consumer pauses beyond. Default 1000. */
    maxAckPending: z.number().int().min(1).default(1000),
    /**
     * Server-side delivery cap. Default -1: the consumer runner dead-letters after its own
     * `maxDeliveries`, which must happen before the server gives up silently.
     */
    maxDeliver: z.number().int().min(-1).refine((n) => n !== 0, 'must be -1 or at least 1').default(-1),
    /** Where a new consumer starts. Default `all`. */
    deliverPolicy: z.enum(['all', 'new', 'last']).default('all'),
    /** Outstanding pull requests at most. Default 512. */
    maxWaiting: z.number().int().min(1).default(512),
  });

const topologySchema = z
  .strictObject({
    streams: z.array(streamSchema).default([]),
    consumers: z.array(consumerSchema).default([]),
    /**
     * Durables a stream of `interest` retention keeps its messages for from the moment it exists
     * (decision 0038). Such a stream drops a message no consumer wants yet, so a process that
     * provisions streams also creates these, when missing, right after the stream; it never
     * changes one that exists (its owner does, through `consumers`).
     */
    standing: z.array(consumerSchema).default([]),
  })
  .superRefine((t, ctx) => {
    const seen = new Set<string>();
    t.streams.forEach((s, i) => {
      if (seen.has(s.name)) ctx.addIssue({ code: 'custom', path: ['streams', i, 'name'], message: `stream ${s.name} is defined twice` });
      seen.add(s.name);
    });
    const durables = new Set<string>();
    t.consumers.forEach((c, i) => {
      const id = `${c.stream}/${c.durable}`;
      if (durables.has(id)) ctx.addIssue({ code: 'custom', path: ['consumers', i, 'durable'], message: `consumer ${id} is defined twice` });
      durables.add(id);
    });
  });

/** A topology as written in code or in a `deploy/topology` file (durations as text or ms, defaults omitted). */
export type TopologyDefinition = z.input<typeof topologySchema>;
/** A stream as written. */
export type StreamDefinition = z.input<typeof streamSchema>;
/** A durable pull consumer as written. */
export type ConsumerDefinition = z.input<typeof consumerSchema>;

/** A validated topology: defaults applied, durations in integer milliseconds. */
export type Topology = z.output<typeof topologySchema>;
export type StreamSpec = Topology['streams'][number];
export type ConsumerSpec = Topology['consumers'][number];

/**
 * Validates a topology (from code or a parsed file). Throws TopologyError whose issues name each bad
 * field by path (e.g. `consumers.0.ackWait`), prefixed by `source` in the message when given.
 */
export function parseTopology(input: unknown, source = 'topology'): Topology {
  const result = topologySchema.safeParse(input);
  if (!result.success) {
    const issues = toFieldIssues(result.error);
    throw new TopologyError(`${source} is invalid: ${describeIssues(issues)}`, issues);
  }
  return result.data;
}

/** Merges several topologies (e.g. one file per service) into one; duplicates are reported by `parseTopology`. */
export function mergeTopologies(...parts: TopologyDefinition[]): TopologyDefinition {
  return { streams: parts.flatMap((p) => p.streams ?? []), consumers: parts.flatMap((p) => p.consumers ?? []), standing: parts.flatMap((p) => p.standing ?? []) };
}

/** A consumer template of a topology file: `{instance}`/`{partition}` placeholders, and what it stands in for. */
export type TemplateDefinition = ConsumerDefinition & {
  /** On a partitioned network (eventPartitions N > 1), this template's N durables take the place of this one of `consumers:`. */
  replaces?: string;
};

/**
 * The durables each stream of `interest` retention keeps its messages for (decision 0038): its
 * `consumers:`, and on a network of N > 1 event partitions, each partition's durable of a
 * `{partition}` template in place of the consumer it `replaces` (`ledger-p0` … instead of `ledger`).
 * Per-instance templates (a node's work consumer) are not among them: they are made when the
 * instance is enrolled.
 */
export function standingConsumers(raw: TopologyFileDefinition, eventPartitions: number): ConsumerDefinition[] {
  const interest = new Set((raw.streams ?? []).filter((s) => s.retention === 'interest').map((s) => s.name));
  const partitioned = eventPartitions > 1 ? (raw.templates ?? []).filter((t) => t.durable.includes('{partition}') && interest.has(t.stream)) : [];
  const replaced = new Set(partitioned.flatMap((t) => (t.replaces ? [`${t.stream}/${t.replaces}`] : [])));
  const fixed = (raw.consumers ?? []).filter((c) => interest.has(c.stream) && !replaced.has(`${c.stream}/${c.durable}`));
  const perPartition = partitioned.flatMap(({ replaces: _replaces, ...t }) =>
    Array.from({ length: eventPartitions }, (_, i) => ({
      ...t,
      durable: t.durable.replaceAll('{partition}', String(i)),
      ...(t.filterSubjects ? { filterSubjects: t.filterSubjects.map((f) => f.replaceAll('{partition}', String(i))) } : {}),
    })),
  );
  return [...fixed, ...perPartition];
}

/** A topology file as written (deploy/topology.yaml): the topology, its per-instance templates and its event partitions. */
export type TopologyFileDefinition = TopologyDefinition & { templates?: TemplateDefinition[]; eventPartitions?: unknown };
