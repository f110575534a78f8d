import { TransientError } from '#errors';
import { WrongExpectedVersionError, type AppendFence, type EventStore } from '#event-store';
import { jetstream } from '@nats-io/jetstream';
import { Kvm, type KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import { hostname } from 'node:os';
import type { Logger } from 'pino';
import type { Clock } from './clock.js';
import type { EventWriter } from './event-writer.js';
import { newId } from './ids.js';

/** The NATS KV bucket of single-writer leases: one key per role (decision 0029). */
export const LEASE_BUCKET = 'gpunet-leases';

/** Store stream of a role's terms: one LeaderElected per election; its revision is the fence. */
export function leadershipStreamId(role: string): string {
  return `leadership-${role}`;
}

/** A single-writer part run as a leader and standbys (`ServiceDefinition.leader`). */
export interface LeaderOptions {
  /**
   * The role, and the lease's key: one leader per role per network. Lower-case letters, digits
   * and `-` (`LeaderRole`): a NATS KV key and a store stream id at once.
   */
  role: string;
  /**
   * For a partitioned service (decision 0030): one leader per event partition, role
   * `<role>-p<i>` for partition i of N > 1 (the partition's durable's name), `<role>` when the
   * network is not partitioned. Default false.
   */
  perPartition?: boolean;
}

/** The lease key and term stream a process of this service leads, given its partition. */
export function leaderRoleOf(options: LeaderOptions, partition: { index: number } | undefined): string {
  return options.perPartition && partition ? `${options.role}-p${partition.index}` : options.role;
}

/** Lease timing, from GPUNET_LEASE_MS / GPUNET_LEASE_RENEW_MS. */
export interface LeaseTiming {
  /** How long a lease lasts unrenewed (the bucket's TTL): a standby takes over within about this plus `renewMs`. */
  leaseMs: number;
  /** How often the holder renews and a standby tries to take over. */
  renewMs: number;
  /** Replicas of the lease bucket when this process creates it. Default 1. */
  replicas?: number;
}

/**
 * One process's hold on a role's lease in NATS KV. `acquire` waits until the key is free (no
 * holder, or the holder's last renewal has expired on the server) and creates it; the holder
 * renews with an update on its last revision. The holder counts its lease from the moment it
 * *sent* the write that made or renewed it, so it believes itself leader no longer than the
 * server keeps its key; when that time passes without a renewal, `lost` resolves (the process
 * must stop deciding at once). The store fence (`elect`) covers what timing cannot: a process
 * paused past its lease cannot append after the next leader's election.
 */
/** Longest a release waits for a renewal already on its way (see `release`). */
const RENEWAL_WAIT_MS = 5_000;

export class LeaderLease {
  readonly holder: string;
  private kv: KV | undefined;
  private revision = 0;
  private validUntil = 0;
  private timer: NodeJS.Timeout | undefined;
  private resolveLost!: (reason: string) => void;
  /** Resolves (never rejects) with the reason once this process no longer holds the lease. */
  readonly lost: Promise<string> = new Promise((r) => (this.resolveLost = r));
  private isLost = false;
  private stopped = false;
  /** A renewal on its way to the server: `release` waits for it, or its delete would name a revision already gone. */
  private renewing: Promise<void> | undefined;

  constructor(
    private readonly nc: NatsConnection,
    private readonly role: string,
    instance: string,
    private readonly timing: LeaseTiming,
    private readonly logger: Logger,
  ) {
    this.holder = `${instance}@${hostname()}:${process.pid}:${newId().slice(0, 8)}`;
  }

  /** Waits for the lease (retrying every `renewMs`) and starts renewing it. Rejects when `signal` aborts. */
  async acquire(signal?: AbortSignal): Promise<void> {
    const kv = (this.kv ??= await new Kvm(jetstream(this.nc)).create(LEASE_BUCKET, { history: 1, ttl: this.timing.leaseMs, replicas: this.timing.replicas ?? 1 }));
    const ttl = (await kv.status()).ttl;
    if (ttl !== this.timing.leaseMs) {
      this.logger.warn({ bucket: LEASE_BUCKET, bucketTtlMs: ttl, leaseMs: this.timing.leaseMs }, 'leader: the lease bucket was made with another TTL; using the bucket\'s');
    }
    const leaseMs = ttl > 0 ? Math.min(ttl, this.timing.leaseMs) : this.timing.leaseMs;
    this.timing.leaseMs = leaseMs;
    let told = false;
    for (;;) {
      signal?.throwIfAborted();
      const sentAt = performance.now();
      try {
        this.revision = await kv.create(this.role, JSON.stringify({ holder: this.holder }));
        this.validUntil = sentAt + leaseMs;
        break;
      } catch (err) {
        if (!isWrongLastSequence(err)) this.logger.warn({ role: this.role, err: (err as Error).message }, 'leader: cannot reach the lease bucket; retrying');
        else if (!told) {
          const current = await kv.get(this.role).catch(() => null);
          this.logger.info({ role: this.role, holder: this.holder, leader: current?.string() }, 'leader: standby, waiting for the lease');
          told = true;
        }
      }
      await sleep(this.timing.renewMs, signal);
    }
    this.scheduleRenewal();
  }

  private scheduleRenewal(): void {
    if (this.stopped || this.isLost) return;
    const untilExpiry = this.validUntil - performance.now();
    this.timer = setTimeout(() => {
      this.renewing = this.renew().finally(() => (this.renewing = undefined));
    }, Math.max(0, Math.min(this.timing.renewMs, untilExpiry)));
  }

  private async renew(): Promise<void> {
    if (this.stopped || this.isLost) return;
    if (performance.now() >= this.validUntil) return this.lose('lease expired before it could be renewed');
    const sentAt = performance.now();
    // A renewal the bus never answers (the server paused or gone, the client still waiting) must
    // not keep this process from knowing its lease ended: `lost` resolves when it does.
    const ends = setTimeout(() => this.lose('the lease ended while its renewal was on its way: the bus did not answer'), Math.max(0, this.validUntil - sentAt));
    try {
      this.revision = await this.kv!.update(this.role, JSON.stringify({ holder: this.holder }), this.revision, Math.max(1, Math.floor(this.validUntil - sentAt)));
      if (performance.now() >= this.validUntil) return this.lose('renewal came back after the lease had ended');
      this.validUntil = sentAt + this.timing.leaseMs;
      this.logger.debug({ role: this.role, revision: this.revision }, 'leader: renewed');
    } catch (err) {
      if (isWrongLastSequence(err)) return this.lose('another process holds the lease');
      this.logger.warn({ role: this.role, err: (err as Error).message, msLeft: Math.round(this.validUntil - performance.now()) }, 'leader: renewal failed; retrying while the lease lasts');
    } finally {
      clearTimeout(ends);
    }
    this.scheduleRenewal();
  }

  private lose(reason: string): void {
    if (this.isLost) return;
    this.isLost = true;
    clearTimeout(this.timer);
    this.logger.warn({ role: this.role, holder: this.holder, reason }, 'leader: lease lost');
    this.resolveLost(reason);
  }

  /** Whether this process may decide now: it holds a lease that has not ended. */
  get held(): boolean {
    return !this.isLost && !this.stopped && this.revision > 0 && performance.now() < this.validUntil;
  }

  /** Marks the lease lost from outside (the store fenced this process off). */
  fenced(reason: string): void {
    this.lose(reason);
  }

  /** Stops renewing; when still the holder, deletes the key so that a standby takes over at once. */
  async release(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    clearTimeout(this.timer);
    // A renewal already sent moves the revision: deleting with the one before it would fail, and
    // the key would stay until the lease ran out (a restarted ledger waited 4 s for it). Waited
    // for at most RENEWAL_WAIT_MS, however short the renewal period: a renewal takes a round trip
    // (longer on a loaded machine), and one that hangs (the bus is gone) must not hold up the stop.
    if (this.renewing && !this.isLost) await Promise.race([this.renewing, sleep(RENEWAL_WAIT_MS)]);
    if (!this.isLost && this.revision > 0) {
      await this.kv?.delete(this.role, { previousSeq: this.revision }).catch(() => undefined);
    }
    this.resolveLost('released');
  }
}

/**
 * Records a new term in the store: LeaderElected on `leadership-<role>`, expecting the stream's
 * head as read (a concurrent election makes this one read again). Returns the fence every append
 * of the term carries, and the term.
 */
export async function elect(
  store: EventStore,
  writer: EventWriter,
  role: string,
  holder: string,
  leaseMs: number,
  clock: Clock,
): Promise<{ fence: AppendFence; term: number }> {
  const streamId = leadershipStreamId(role);
  for (let tries = 0; ; tries++) {
    const terms = await store.readStream(streamId);
    const head = terms.length === 0 ? -1n : terms[terms.length - 1]!.revision;
    const term = Number(head) + 2;
    try {
      const data = { role, holder, term, leaseMs, electedAt: clock.now().toISOString() };
      const result = await writer.append(streamId, [{ type: 'LeaderElected', data }], { expectedRevision: head < 0n ? 'no_stream' : head });
      return { fence: { streamId, revision: result.nextExpectedRevision }, term };
    } catch (err) {
      if (!(err instanceof WrongExpectedVersionError) || tries >= 5) throw err;
    }
  }
}

/** The error every append of a process gets once it is no longer the leader: retryable, so a message in hand goes back to the bus for the new leader. */
export class NotLeaderError extends TransientError {}

function isWrongLastSequence(err: unknown): boolean {
  const e = err as { code?: number; api_error?: { err_code?: number }; message?: string };
  return e?.api_error?.err_code === 10071 || /wrong last sequence/i.test(e?.message ?? '');
}

/**
 * Waits `ms`, or rejects when `signal` aborts. The abort listener goes when the wait ends: a
 * standby waits on one signal every `renewMs` for as long as the leader lives, and listeners left
 * behind would pile up on it (one per wait).
 */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(t);
      reject(signal!.reason);
    };
    const t = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
