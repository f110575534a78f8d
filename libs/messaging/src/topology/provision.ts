import {
  AckPolicy,
  DeliverPolicy,
  DiscardPolicy,
  JetStreamApiCodes,
  JetStreamApiError,
  ReplayPolicy,
  RetentionPolicy,
  StorageType,
  type ConsumerConfig,
  type JetStreamManager,
  type StreamConfig,
} from '@nats-io/jetstream';
import { ProvisioningError } from '../errors.js';
import { defaultMessagingLogger, type Logger } from '../logging.js';
import { msToNanos } from '../duration.js';
import { parseTopology, type ConsumerSpec, type StreamSpec, type TopologyDefinition } from './topology.js';

export interface ProvisionOptions {
  /**
   * The server's version (`nc.info?.version`). From 2.10 a consumer keeps several filter subjects;
   * before (or when unknown) they collapse to their common wildcard. Default: unknown.
   */
  serverVersion?: string | undefined;
  /** Default: the messaging pino logger. */
  logger?: Logger;
  /**
   * `manage` (default): create missing streams and update changed ones. `use`: for an identity
   * that may not change streams (an execution node): a missing stream is created if the server
   * allows it, otherwise waited for (the control plane makes it), up to `streamWaitMs`; a stream
   * whose config differs is used as it is, with a warning.
   */
  streams?: 'manage' | 'use';
  /** How long `use` waits for a missing stream. Default 60 s. */
  streamWaitMs?: number;
  /**
   * The topology's `standing` durables (decision 0038): `create` (default) makes those missing,
   * never changing one that exists; `leave` does not touch them, for an identity that may create
   * only its own durable (every service on a network with permissions): the operator or each
   * owner makes them, and the relay waits for them ({@link missingConsumers}).
   */
  standing?: 'create' | 'leave';
  /**
   * The server's INFO (`nc.info`): a stream with `replicas: auto` gets {@link CLUSTER_REPLICAS}
   * when it names a cluster, else 1. Default: unknown (alone).
   */
  serverInfo?: { cluster?: string | undefined } | undefined;
}

/** Replicas of a `replicas: auto` stream on a clustered server (a cluster of three tolerates one server down). */
export const CLUSTER_REPLICAS = 3;

/** The replicas `replicas: auto` means on the server that sent `info`: 3 in a cluster, 1 alone. */
export function autoReplicas(info: { cluster?: string | undefined } | undefined): number {
  return info?.cluster ? CLUSTER_REPLICAS : 1;
}

export type ProvisionAction = 'created' | 'updated' | 'unchanged';

export interface ProvisionReport {
  streams: {
    name: string;
    action: ProvisionAction;
    changed: string[];
    /** Fields the topology changes that the server keeps as they are on an existing stream (`retention`). */
    kept: string[];
    /** The existing stream's retention on the server, when it was kept. */
    serverRetention?: string;
  }[];
  consumers: {
    stream: string;
    durable: string;
    action: ProvisionAction;
    changed: string[];
    /** The filter actually configured on the server. */
    filterSubjects: string[];
    /** True when several filter subjects were collapsed for an older server. */
    degraded: boolean;
  }[];
}

/**
 * Creates or updates streams, then durable pull consumers (explicit ack), so that the server
 * matches `topology`. Idempotent: running it again changes nothing; a changed definition updates
 * the resource where the server allows it, and otherwise fails with ProvisioningError naming the
 * fields (it never deletes and recreates: that would lose messages or consumer state).
 */
export async function provision(jsm: JetStreamManager, topology: TopologyDefinition, options: ProvisionOptions = {}): Promise<ProvisionReport> {
  const spec = parseTopology(topology);
  const logger = (options.logger ?? defaultMessagingLogger()).child({ component: 'provision' });
  const multiFilter = supportsMultipleFilters(options.serverVersion);
  const report: ProvisionReport = { streams: [], consumers: [] };

  const replicas = autoReplicas(options.serverInfo);
  for (const stream of spec.streams) {
    const s = { ...stream, replicas: stream.replicas === 'auto' ? replicas : stream.replicas };
    const entry = options.streams === 'use' ? await useStream(jsm, s, options.streamWaitMs ?? 60_000, logger) : await provisionStream(jsm, s);
    report.streams.push(entry);
    if (entry.action !== 'unchanged') logger.info({ stream: s.name, action: entry.action, changed: entry.changed }, 'stream provisioned');
    if (entry.kept.length > 0) {
      logger.warn(
        { stream: s.name, kept: entry.kept, retention: { server: entry.serverRetention, topology: s.retention } },
        `stream ${s.name} keeps its ${entry.kept.join(', ')} (the server cannot change it on an existing stream): recreate the stream to apply the topology's, as docs/operations.md describes ("Recreating a stream")`,
      );
    }
    // A stream of interest retention drops what no consumer wants yet: the durables it must keep
    // messages for exist before anything else is published to it (decision 0038). Only a process
    // that manages streams makes them; an execution node only uses its own.
    if (options.streams !== 'use' && options.standing !== 'leave') {
      for (const c of spec.standing.filter((c) => c.stream === s.name && !spec.consumers.some((own) => own.stream === c.stream && own.durable === c.durable))) {
        const made = await provisionConsumer(jsm, c, multiFilter, { createOnly: true }).catch((err: unknown) => {
          throw new ProvisioningError(
            `cannot create ${s.name}'s standing consumer ${c.durable}, which the stream keeps its messages for: ${(err as Error).message}. An identity that may create only its own durable provisions with \`standing: 'leave'\` (decision 0038)`,
            `consumer ${c.stream}/${c.durable}`,
            [],
            { cause: err },
          );
        });
        report.consumers.push(made);
        if (made.action === 'created') logger.info({ stream: c.stream, durable: c.durable }, 'standing consumer created (the stream keeps its messages for it until it acknowledges them)');
      }
    }
  }
  for (const c of spec.consumers) {
    const entry = await provisionConsumer(jsm, c, multiFilter);
    report.consumers.push(entry);
    if (entry.degraded) {
      logger.warn({ stream: c.stream, durable: c.durable, wanted: c.filterSubjects, using: entry.filterSubjects }, 'server allows one filter subject per consumer: using their common wildcard');
    }
    if (entry.action !== 'unchanged') logger.info({ stream: c.stream, durable: c.durable, action: entry.action, changed: entry.changed }, 'consumer provisioned');
  }
  return report;
}

/**
 * Which of `consumers` do not exist on the server yet, as `stream/durable`: a process waits for
 * the consumers it runs when the control plane makes them, and a relay publishes nothing before
 * the standing durables of `GPUNET_EVENTS` exist (`topology.standing`, decision 0038: a stream of
 * interest retention drops an event no durable wants). Other errors are thrown.
 */
export async function missingConsumers(jsm: JetStreamManager, consumers: readonly { readonly stream: string; readonly durable: string }[]): Promise<string[]> {
  const missing: string[] = [];
  for (const c of consumers) {
    const found = await jsm.consumers.info(c.stream, c.durable).then(
      () => true,
      (err: unknown) => {
        if (isApiError(err, JetStreamApiCodes.ConsumerNotFound) || isApiError(err, JetStreamApiCodes.StreamNotFound)) return false;
        throw err;
      },
    );
    if (!found) missing.push(`${c.stream}/${c.durable}`);
  }
  return missing;
}

/** True from nats-server 2.10, which accepts `filter_subjects`. */
export function supportsMultipleFilters(version: string | undefined): boolean {
  if (!version) return false;
  const [major = 0, minor = 0] = version.split('.').map((p) => Number.parseInt(p, 10));
  return major > 2 || (major === 2 && minor >= 10);
}

/**
 * The narrowest single subject covering all of `subjects`: the shared leading tokens followed by
 * `>` (e.g. `gpunet.evt.A`, `gpunet.evt.B` → `gpunet.evt.>`); undefined when they share none.
 */
export function commonWildcard(subjects: readonly string[]): string | undefined {
  if (subjects.length === 1) return subjects[0];
  const split = subjects.map((s) => s.split('.'));
  const shortest = Math.min(...split.map((t) => t.length));
  const prefix: string[] = [];
  for (let i = 0; i < shortest - 1; i++) {
    const token = split[0]![i]!;
    if (token === '*' || token === '>' || !split.every((t) => t[i] === token)) break;
    prefix.push(token);
  }
  return prefix.length === 0 ? undefined : `${prefix.join('.')}.>`;
}

/** A stream whose replicas are a number (`auto` resolved for the server at hand). */
type ResolvedStreamSpec = StreamSpec & { replicas: number };

function streamConfig(s: ResolvedStreamSpec): Partial<StreamConfig> & { name: string } {
  return {
    name: s.name,
    subjects: s.subjects,
    description: s.description ?? '',
    storage: s.storage === 'memory' ? StorageType.Memory : StorageType.File,
    retention: { limits: RetentionPolicy.Limits, interest: RetentionPolicy.Interest, workqueue: RetentionPolicy.Workqueue }[s.retention],
    max_age: msToNanos(s.maxAge),
    max_msgs: s.maxMsgs,
    max_bytes: s.maxBytes,
    max_msg_size: s.maxMsgSize,
    discard: s.discard === 'new' ? DiscardPolicy.New : DiscardPolicy.Old,
    duplicate_window: msToNanos(s.duplicateWindow),
    num_replicas: s.replicas,
    deny_delete: s.denyDelete,
    deny_purge: s.denyPurge,
  };
}

async function provisionStream(jsm: JetStreamManager, s: ResolvedStreamSpec): Promise<ProvisionReport['streams'][number]> {
  const desired = streamConfig(s);
  const current = await jsm.streams.info(s.name).catch((err: unknown) => {
    if (isApiError(err, JetStreamApiCodes.StreamNotFound)) return undefined;
    throw err;
  });
  if (!current) {
    await jsm.streams.add(desired).catch((err: unknown) => {
      throw new ProvisioningError(`cannot create stream ${s.name}: ${(err as Error).message}`, `stream ${s.name}`, [], { cause: err });
    });
    return { name: s.name, action: 'created', changed: [], kept: [] };
  }
  const differing = differingFields(desired, current.config);
  // The server cannot change an existing stream's retention (nats-server 2.9): the stream keeps
  // its own, with a warning, rather than every service refusing to start on an upgraded network.
  const kept = differing.filter((f) => f === 'retention');
  const changed = differing.filter((f) => f !== 'retention');
  const keptReport = kept.length > 0 ? { kept, serverRetention: String(current.config.retention) } : { kept };
  if (changed.length === 0) return { name: s.name, action: 'unchanged', changed, ...keptReport };
  const { name: _name, ...update } = { ...current.config, ...desired, retention: current.config.retention };
  await jsm.streams.update(s.name, update).catch((err: unknown) => {
    throw new ProvisioningError(`cannot update stream ${s.name} (${changed.join(', ')}): ${(err as Error).message}`, `stream ${s.name}`, changed, { cause: err });
  });
  return { name: s.name, action: 'updated', changed, ...keptReport };
}

/** A stream this identity uses but may not change: see {@link ProvisionOptions.streams}. */
async function useStream(jsm: JetStreamManager, s: ResolvedStreamSpec, waitMs: number, logger: Logger): Promise<ProvisionReport['streams'][number]> {
  const info = () =>
    jsm.streams.info(s.name).catch((err: unknown) => {
      if (isApiError(err, JetStreamApiCodes.StreamNotFound)) return undefined;
      throw err;
    });
  let current = await info();
  if (!current) {
    const created = await jsm.streams.add(streamConfig(s)).then(
      () => true,
      (err: unknown) => {
        logger.info({ stream: s.name, reason: (err as Error).message }, 'stream missing and not ours to create: waiting for the control plane to make it');
        return false;
      },
    );
    if (created) return { name: s.name, action: 'created', changed: [], kept: [] };
    const deadline = Date.now() + waitMs;
    while (!(current = await info())) {
      if (Date.now() >= deadline) throw new ProvisioningError(`stream ${s.name} does not exist after ${waitMs} ms and this identity may not create it: start the control plane's services first`, `stream ${s.name}`, []);
      await new Promise((r) => setTimeout(r, 250));
    }
  }
  const changed = differingFields(streamConfig(s), current.config);
  if (changed.length > 0) logger.warn({ stream: s.name, changed }, 'stream differs from the topology file; using it as it is (its owner updates it)');
  return { name: s.name, action: 'unchanged', changed, kept: [] };
}

async function provisionConsumer(
  jsm: JetStreamManager,
  c: ConsumerSpec,
  multiFilter: boolean,
  options: { createOnly?: boolean } = {},
): Promise<ProvisionReport['consumers'][number]> {
  let filterSubjects: string[] = c.filterSubjects ?? [];
  let degraded = false;
  if (filterSubjects.length > 1 && !multiFilter) {
    const wildcard = commonWildcard(filterSubjects);
    filterSubjects = wildcard ? [wildcard] : [];
    degraded = true;
  }
  const desired: Partial<ConsumerConfig> = {
    durable_name: c.durable,
    description: c.description ?? '',
    ack_policy: AckPolicy.Explicit,
    deliver_policy: { all: DeliverPolicy.All, new: DeliverPolicy.New, last: DeliverPolicy.Last }[c.deliverPolicy],
    replay_policy: ReplayPolicy.Instant,
    ack_wait: msToNanos(c.ackWait),
    max_ack_pending: c.maxAckPending,
    max_deliver: c.maxDeliver,
    max_waiting: c.maxWaiting,
  };
  // Only send the filter fields the server understands; an empty filter means the whole stream.
  if (filterSubjects.length === 1) desired.filter_subject = filterSubjects[0]!;
  else if (filterSubjects.length > 1) desired.filter_subjects = filterSubjects;

  const resource = `consumer ${c.stream}/${c.durable}`;
  const current = await jsm.consumers.info(c.stream, c.durable).catch((err: unknown) => {
    if (isApiError(err, JetStreamApiCodes.ConsumerNotFound)) return undefined;
    if (isApiError(err, JetStreamApiCodes.StreamNotFound)) {
      throw new ProvisioningError(`cannot provision ${resource}: stream ${c.stream} does not exist`, resource, ['stream'], { cause: err });
    }
    throw err;
  });
  if (!current) {
    await jsm.consumers.add(c.stream, desired).catch((err: unknown) => {
      throw new ProvisioningError(`cannot create ${resource}: ${(err as Error).message}`, resource, [], { cause: err });
    });
    return { stream: c.stream, durable: c.durable, action: 'created', changed: [], filterSubjects, degraded };
  }
  // Another service's durable, made here only so that it exists: its owner keeps its config.
  if (options.createOnly) return { stream: c.stream, durable: c.durable, action: 'unchanged', changed: [], filterSubjects, degraded };
  const actual: Partial<ConsumerConfig> = { ...current.config };
  const changed = differingFields(desired, actual);
  // A filter that was set and is now the whole stream shows up as a key the desired config lacks.
  const hadFilter = Boolean(actual.filter_subject) || (actual.filter_subjects?.length ?? 0) > 0;
  if (filterSubjects.length === 0 && hadFilter) changed.push('filter_subject');
  if (changed.length === 0) return { stream: c.stream, durable: c.durable, action: 'unchanged', changed, filterSubjects, degraded };
  const update: Partial<ConsumerConfig> = { ...actual, ...desired };
  if (filterSubjects.length !== 1) delete update.filter_subject;
  if (filterSubjects.length <= 1) delete update.filter_subjects;
  await jsm.consumers.update(c.stream, c.durable, update).catch((err: unknown) => {
    throw new ProvisioningError(`cannot update ${resource} (${changed.join(', ')}): ${(err as Error).message}`, resource, changed, { cause: err });
  });
  return { stream: c.stream, durable: c.durable, action: 'updated', changed, filterSubjects, degraded };
}

/** Keys of `desired` whose value differs on the server (arrays compared as sets, '' equals absent). */
function differingFields(desired: object, actual: object): string[] {
  const a = actual as Record<string, unknown>;
  return Object.entries(desired)
    .filter(([key, want]) => !sameValue(want, a[key]))
    .map(([key]) => key);
}

function sameValue(want: unknown, have: unknown): boolean {
  if (Array.isArray(want)) {
    const h = Array.isArray(have) ? have : [];
    return want.length === h.length && [...want].sort().every((v, i) => v === [...h].sort()[i]);
  }
  if (want === '' && (have === undefined || have === '')) return true;
  if (want === false && have === undefined) return true;
  return want === have;
}

function isApiError(err: unknown, code: number): boolean {
  return err instanceof JetStreamApiError && err.code === code;
}
