/**
 * The chain's verification status for people (`VerifyChain`, `GET /v1/audit/chain`), kept up to
 * date without walking the whole store on every question. A full pass is `gpunet verify`'s check
 * (the adapter's walk of every link and stream head, then every signed digest against the store);
 * after it, a tail pass verifies only the events appended since, each against its stream's head
 * the previous pass verified (revision + 1, hash recomputed over it): by the chain, a verified
 * head vouches for everything before it, so head + tail is the whole store. New digests are linked
 * to the last one checked, the newest signature checked, and every head they list looked up in
 * the store. A tail pass cannot see an event rewritten behind an already verified head (nothing
 * reads it again): a full pass can, which `full` asks for (the console's "verify now").
 */
import { DIGEST_STREAM, type ChainHeadsSigned, type ChainStatus } from '#contracts';
import { computeEventHash, GENESIS_HASH, type EventStore, type RecordedEvent } from '#event-store';
import { linkProblem, signatureProblem } from './digest.js';
import { DigestFormatError, latestDigest, readDigests, verifyStoreDigests } from './store-digests.js';

const PAGE = 5_000;

/** Most stream heads kept between passes; past it a tail pass reads a predecessor from the store (verified earlier) instead. */
const MAX_HEADS = 200_000;

interface Verified {
  upTo: bigint;
  events: number;
  streams: number;
  heads: Map<string, { revision: bigint; hash: string }>;
  latest: ChainHeadsSigned | undefined;
  lastFullAt: string;
}

type Bad = { position: bigint; streamId: string; reason: string };

export interface ChainVerifierOptions {
  /** The store's chain key (`GPUNET_CHAIN_KEY`), when it has one. */
  chainKey?: string | undefined;
  /** The network public key the digests must be signed with; without it signatures are `unchecked`. */
  publicKey?: string | undefined;
  /** The clock (for `checkedAt` and `durationMs`). */
  now: () => Date;
}

export class ChainVerifier {
  private verified: Verified | undefined;
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly store: EventStore,
    private readonly options: ChainVerifierOptions,
  ) {}

  /** Verifies now: a tail pass after a verified one, else (or with `full`) the whole store. One pass at a time. */
  check(full: boolean): Promise<ChainStatus> {
    const run = this.queue.then(() => (full || !this.verified ? this.fullPass() : this.tailPass(this.verified)));
    this.queue = run.catch(() => undefined);
    return run;
  }

  private async fullPass(): Promise<ChainStatus> {
    const started = this.options.now();
    this.verified = undefined;
    const v = await this.store.verify();
    if (!v.ok) {
      return this.answer('full', started, { upTo: v.firstBadPosition - 1n, head: await this.store.headPosition(), events: v.events, checkedNow: v.events, streams: 0, latest: await this.latestDigest(), lastFullAt: null, bad: { position: v.firstBadPosition, streamId: v.streamId, reason: v.reason } });
    }
    let latest: ChainHeadsSigned | undefined;
    if (this.options.publicKey) {
      const d = await verifyStoreDigests(this.store, { publicKey: this.options.publicKey });
      if (!d.ok) {
        const bad = { position: d.firstBadPosition, streamId: d.streamId, reason: d.reason };
        return this.answer('full', started, { upTo: d.firstBadPosition - 1n, head: v.headPosition, events: v.events, checkedNow: v.events, streams: v.streams, latest: await this.latestDigest(), lastFullAt: null, bad });
      }
      latest = await latestDigest(this.store);
    } else {
      latest = await this.latestDigest();
    }
    this.verified = { upTo: v.headPosition, events: v.events, streams: v.streams, heads: new Map(), latest, lastFullAt: this.options.now().toISOString() };
    return this.answer('full', started, { upTo: v.headPosition, head: v.headPosition, events: v.events, checkedNow: v.events, streams: v.streams, latest, lastFullAt: this.verified.lastFullAt });
  }

  private async tailPass(was: Verified): Promise<ChainStatus> {
    const started = this.options.now();
    const head = await this.store.headPosition();
    const heads = was.heads;
    let { upTo, events, streams } = was;
    let checkedNow = 0;
    const fail = (bad: Bad) => {
      this.verified = undefined; // the next question walks the whole store again
      return this.answer('tail', started, { upTo, head, events, checkedNow, streams, latest: was.latest, lastFullAt: was.lastFullAt, bad });
    };
    while (upTo < head) {
      const page = await this.store.readAll({ fromPosition: upTo, toPosition: head, maxCount: PAGE });
      if (page.length === 0) break;
      for (const e of page) {
        const bad = await this.link(e, heads);
        if (bad) return fail(bad);
        if (e.revision === 0n) streams += 1;
        if (heads.size >= MAX_HEADS && !heads.has(e.streamId)) heads.clear();
        heads.set(e.streamId, { revision: e.revision, hash: e.hash });
        events += 1;
        checkedNow += 1;
        upTo = e.position;
      }
    }
    upTo = head > upTo ? head : upTo; // positions of rolled-back appends are never used
    let latest = was.latest;
    if (this.options.publicKey) {
      let fresh: { digest: ChainHeadsSigned; recordedAt: bigint }[];
      try {
        fresh = (await readDigests(this.store, BigInt(latest?.sequence ?? 0))).filter((d) => d.recordedAt <= head);
      } catch (err) {
        if (err instanceof DigestFormatError) return fail({ position: err.position, streamId: DIGEST_STREAM, reason: err.message });
        throw err;
      }
      for (const { digest, recordedAt } of fresh) {
        const problem = linkProblem(latest, digest) ?? (await this.headsProblem(digest));
        if (problem) return fail({ position: recordedAt, streamId: DIGEST_STREAM, reason: problem });
        latest = digest;
      }
      const unsigned = fresh.length > 0 && latest ? signatureProblem(latest, this.options.publicKey) : undefined;
      if (unsigned) return fail({ position: fresh.at(-1)!.recordedAt, streamId: DIGEST_STREAM, reason: unsigned });
    }
    this.verified = { upTo, events, streams, heads, latest, lastFullAt: was.lastFullAt };
    return this.answer('tail', started, { upTo, head, events, checkedNow, streams, latest, lastFullAt: was.lastFullAt });
  }

  /** Whether `e` links to its stream's verified head (kept, or read from the store at the revision before). */
  private async link(e: RecordedEvent, heads: Verified['heads']): Promise<Bad | undefined> {
    let prev = heads.get(e.streamId);
    if (!prev && e.revision > 0n) {
      const [p] = await this.store.readStream(e.streamId, { fromRevision: e.revision - 1n, maxCount: 1 });
      if (p && p.revision === e.revision - 1n) prev = { revision: p.revision, hash: p.hash };
    }
    const due = prev ? prev.revision + 1n : 0n;
    if (e.revision !== due) return { position: e.position, streamId: e.streamId, reason: `revision ${e.revision} where ${due} was due: ${e.revision > due ? 'events deleted before it' : 'revision out of order'}` };
    if (computeEventHash(prev?.hash ?? GENESIS_HASH, e, this.options.chainKey) !== e.hash) {
      return { position: e.position, streamId: e.streamId, reason: 'hash does not match the event and its predecessor: altered or inserted' };
    }
    return undefined;
  }

  /** Whether the store still holds every head a digest signed, as signed. */
  private async headsProblem(d: ChainHeadsSigned): Promise<string | undefined> {
    for (const h of d.heads) {
      const [e] = await this.store.readStream(h.streamId, { fromRevision: BigInt(h.revision), maxCount: 1 });
      if (!e || e.revision !== BigInt(h.revision) || e.hash !== h.hash || e.position.toString() !== h.position) {
        return `signed digest #${d.sequence} (${d.signedAt}) recorded ${h.streamId} revision ${h.revision} at position ${h.position} with head ${h.hash.slice(0, 16)}…; the store has ${e ? `${e.hash.slice(0, 16)}… at position ${e.position}` : 'no such event'}: events deleted or rewritten`;
      }
    }
    return undefined;
  }

  private async latestDigest(): Promise<ChainHeadsSigned | undefined> {
    return latestDigest(this.store).catch(() => undefined);
  }

  private answer(
    pass: 'full' | 'tail',
    started: Date,
    r: { upTo: bigint; head: bigint; events: number; checkedNow: number; streams: number; latest: ChainHeadsSigned | undefined; lastFullAt: string | null; bad?: Bad },
  ): ChainStatus {
    const ended = this.options.now();
    const latest = r.latest;
    const upTo = r.upTo < 0n ? 0n : r.upTo;
    return {
      verified: r.bad === undefined,
      checkedAt: ended.toISOString(),
      pass,
      verifiedUpTo: upTo.toString(),
      headPosition: r.head.toString(),
      events: r.events,
      checkedNow: r.checkedNow,
      streams: r.streams,
      durationMs: Math.max(0, ended.getTime() - started.getTime()),
      lastFullAt: r.lastFullAt,
      signatures: this.options.publicKey ? 'checked' : 'unchecked',
      latestSignedHead: latest ? { sequence: latest.sequence, position: latest.position, signedAt: latest.signedAt, publicKey: latest.publicKey } : null,
      ...(r.bad === undefined && (latest ? BigInt(latest.position) < upTo : upTo > 0n) ? { unsignedAfter: latest?.position ?? '0' } : {}),
      ...(r.bad ? { firstBad: { position: r.bad.position.toString(), streamId: r.bad.streamId, reason: r.bad.reason } } : {}),
    };
  }
}
