/**
 * Signed chain heads against a real store: the notary that builds and records the next digest,
 * and the check of a store against its own digests and digests exported earlier. Both walk the
 * log in position order keeping one head per stream, so memory is per stream, not per event.
 */
import { CHAIN_DIGEST_FORMAT, ChainHeadsSigned, DIGEST_STREAM, type StreamHead } from '#contracts';
import { computeEventHash, GENESIS_HASH, type EventStore, type RecordedEvent } from '#event-store';
import type { Identity } from '#identity';
import { digestHash, foldProblem, linkProblem, rootProblem, signatureProblem, signDigest, sortedHeads, type Heads } from './digest.js';
import { HeadsTree } from './heads-tree.js';
import { NotaryTable, NotaryTableMismatchError, NotaryTableMovedError, type HeadsPlan } from './notary-table.js';

/** Events read per page when checking a whole store against its digests. */
const PAGE = 5_000;
/**
 * Events read per page by the notary. A digest ends where its `maxHeads`-th stream moved, so the
 * rest of the page it ends in is read again by the next digest: at 5,000 a pass of ten digests
 * over 15,000 events (five minutes at 5 jobs/s) read about 45,000, and each page of real events
 * (about 2 kB each) held the ledger's heap 50–70 MiB higher until the next major collection. A
 * full digest covers at least `maxHeads` events (every stream it lists moved), so a page no
 * longer than the default 1,000 reads again at most what the digest itself covers (decision 0042).
 */
export const NOTARY_PAGE = 500;

/** Most heads one digest lists (see `Notary`). */
export const DEFAULT_MAX_HEADS = 1_000;

/** Events after `from` up to `to` (inclusive), `pageSize` at a time. */
async function* walk(store: EventStore, from: bigint, to: bigint, pageSize = PAGE): AsyncGenerator<RecordedEvent> {
  let at = from;
  for (;;) {
    const page = await store.readAll({ fromPosition: at, toPosition: to, maxCount: pageSize });
    yield* page;
    if (page.length < pageSize) return;
    at = page[page.length - 1]!.position;
    await turn();
  }
}

/**
 * A turn of the event loop. The SQLite store answers synchronously, so a walk or a catch-up over
 * many digests would otherwise hold the loop throughout: a ledger starting on 20,000 jobs spent
 * 6–10 s in its notary's first pass and lost its 6 s leader lease, again at every start.
 */
function turn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

function headOf(e: RecordedEvent): StreamHead {
  return { streamId: e.streamId, revision: e.revision.toString(), position: e.position.toString(), hash: e.hash };
}

/** A digest recorded in the store that is not a valid ChainHeadsSigned. */
export class DigestFormatError extends Error {
  constructor(
    message: string,
    readonly position: bigint,
  ) {
    super(message);
    this.name = 'DigestFormatError';
  }
}

/** Digests read per page: a first pass over a store of millions of streams records thousands of about 200 kB each. */
const DIGEST_PAGE = 100;

function parseDigest(e: RecordedEvent): { digest: ChainHeadsSigned; recordedAt: bigint; eventId: string } {
  const parsed = ChainHeadsSigned.safeParse(e.data);
  if (e.streamId !== DIGEST_STREAM || e.type !== 'ChainHeadsSigned' || !parsed.success) throw new DigestFormatError(`event ${e.eventId} at position ${e.position} of ${e.streamId} is not a ChainHeadsSigned digest of ${DIGEST_STREAM}`, e.position);
  return { digest: parsed.data, recordedAt: e.position, eventId: e.eventId };
}

/** The store's digests from `fromRevision` on, in sequence order, a page at a time, each with the position and event id it was recorded at. */
export async function* digestPages(store: EventStore, fromRevision = 0n): AsyncGenerator<{ digest: ChainHeadsSigned; recordedAt: bigint; eventId: string }[]> {
  for (let at = fromRevision; ; ) {
    const events = await store.readStream(DIGEST_STREAM, { fromRevision: at, maxCount: DIGEST_PAGE });
    if (events.length > 0) yield events.map(parseDigest);
    if (events.length < DIGEST_PAGE) return;
    at = events[events.length - 1]!.revision + 1n;
    await turn();
  }
}

/** The store's digests (`ledger-digests`), in sequence order, each with the position it was recorded at. All in memory: see `digestPages`. */
export async function readDigests(store: EventStore, fromRevision = 0n): Promise<{ digest: ChainHeadsSigned; recordedAt: bigint }[]> {
  const all: { digest: ChainHeadsSigned; recordedAt: bigint }[] = [];
  for await (const page of digestPages(store, fromRevision)) all.push(...page);
  return all;
}

/** The store's latest digest: the stream read a page at a time, only its last event checked against the contract. */
export async function latestDigest(store: EventStore): Promise<ChainHeadsSigned | undefined> {
  let last: RecordedEvent | undefined;
  for (let at = 0n; ; ) {
    const events = await store.readStream(DIGEST_STREAM, { fromRevision: at, maxCount: DIGEST_PAGE });
    last = events[events.length - 1] ?? last;
    if (events.length < DIGEST_PAGE) return last && parseDigest(last).digest;
    at = last!.revision + 1n;
    await turn();
  }
}

/** The chain does not hold where the notary reads: it refuses to sign over it. */
export class ChainBrokenError extends Error {
  constructor(
    message: string,
    readonly position: bigint,
    readonly streamId: string,
  ) {
    super(message);
    this.name = 'ChainBrokenError';
  }
}

/**
 * Builds the next digest of a store. Keeps the last digest and the heads it covers in the store's
 * database (`NotaryTable`, decision 0051: the Merkle tree's nodes of level 6 and above in memory);
 * each `next` reads only the events since, checking each links to its stream's previous head
 * (revision + 1, hash recomputed), so it never signs over a chain it did not see hold. A restart
 * folds only the digests recorded after the table's; a table that does not hold what the signed
 * digests say is emptied and folded again from them.
 */
export class Notary {
  private last: ChainHeadsSigned | undefined;
  private heads: NotaryTable | undefined;
  private synced = -1n;
  /** Set once the table was found not to hold what the digests say: the next sync folds it again from the first digest. */
  private refold = false;
  /** The last digest `next` made, and its plan: folding that very digest once recorded needs no second reading of the table. */
  private planned: { digest: ChainHeadsSigned; from: bigint; plan: HeadsPlan } | undefined;
  /** Told when the table is emptied to be folded again from the digests, and why. */
  onRefold: (why: string) => void = () => undefined;

  /**
   * @param maxHeads most heads one digest lists (default 1000, ~200 kB): past it the digest covers
   * only up to where that many streams moved, so an event stays well under NATS's 1 MB payload
   * limit even for the first digest of a large store; the next digest goes on from there.
   */
  constructor(
    private readonly store: EventStore,
    private readonly identity: Identity,
    private readonly chainKey?: string,
    private readonly maxHeads = DEFAULT_MAX_HEADS,
  ) {}

  get publicKey(): string {
    return this.identity.publicKey;
  }

  /** The latest digest recorded (after `sync`). */
  get latest(): ChainHeadsSigned | undefined {
    return this.last;
  }

  /** Streams the latest digest covers. */
  get streams(): number {
    return this.heads?.size ?? 0;
  }

  /**
   * Catches up with digests recorded meanwhile (by this notary or another instance), each folded
   * into the table; each of format /2 must give its stream count and root, and the latest's
   * signature must hold.
   */
  async sync(): Promise<void> {
    await this.held(() => this.syncOnce());
  }

  /**
   * The next digest, covering the store head (or, when more than `maxHeads` streams moved, up to
   * where that many did: `partial`), or undefined when nothing but digests was recorded since the
   * last one (the store did not move). Not yet appended: see `expectedRevision`.
   */
  next(signedAt: string): Promise<{ digest: ChainHeadsSigned; partial: boolean } | undefined> {
    return this.held(async () => {
      await this.syncOnce();
      const heads = this.heads!;
      const head = await this.store.headPosition();
      const from = this.last ? BigInt(this.last.position) : 0n;
      if (head <= from) return undefined;
      const changed = new Map<string, StreamHead>();
      let moved = false;
      let at = head;
      // Each event's hash is recomputed (about 10 ms a page): queries get a turn between pages.
      pages: for (let after = from; ; ) {
        const page = await this.store.readAll({ fromPosition: after, toPosition: head, maxCount: NOTARY_PAGE });
        const known = await heads.heads([...new Set(page.map((e) => e.streamId))].filter((id) => !changed.has(id)));
        for (const e of page) {
          if (changed.size >= this.maxHeads && !changed.has(e.streamId)) {
            at = e.position - 1n;
            break pages;
          }
          const prev = changed.get(e.streamId) ?? known.get(e.streamId);
          const revision = prev ? BigInt(prev.revision) + 1n : 0n;
          const broken =
            e.revision !== revision
              ? `position ${e.position} is revision ${e.revision} of ${e.streamId} where ${revision} was due`
              : computeEventHash(prev?.hash ?? GENESIS_HASH, e, this.chainKey) !== e.hash
                ? `position ${e.position} (${e.streamId} revision ${e.revision}) does not match its hash`
                : undefined;
          if (broken) {
            // The store's chain, or the head the table gave for it: the table's is checked first.
            if (!changed.has(e.streamId)) await heads.check([e.streamId]);
            throw new ChainBrokenError(broken, e.position, e.streamId);
          }
          changed.set(e.streamId, headOf(e));
          if (e.streamId !== DIGEST_STREAM) moved = true;
        }
        if (page.length < NOTARY_PAGE) break;
        after = page[page.length - 1]!.position;
        await turn();
      }
      if (!moved) return undefined;
      const sorted = sortedHeads(changed.values());
      const plan = await heads.plan(sorted);
      const digest = signDigest({ previous: this.last, heads: sorted, root: plan.root, streams: plan.streams, position: at, signedAt, identity: this.identity });
      this.planned = { digest, from: heads.position, plan };
      return { digest, partial: at < head };
    });
  }

  /** The revision `ledger-digests` must be at to append `d` (`no_stream` for the first). */
  static expectedRevision(d: ChainHeadsSigned): bigint | 'no_stream' {
    return d.sequence === 1 ? 'no_stream' : BigInt(d.sequence - 2);
  }

  /**
   * Runs `work` on the table as loaded: again from a fresh load when another notary moved the
   * table meanwhile; and when the table does not hold what the digests say, empties it so that
   * the next call folds it again from them, and throws ChainBrokenError (a digest is not signed
   * over what the table said).
   */
  private async held<T>(work: () => Promise<T>): Promise<T> {
    for (let moved = 0; ; moved += 1) {
      try {
        return await work();
      } catch (err) {
        if (err instanceof NotaryTableMovedError && moved < 10) {
          this.heads = undefined;
          continue;
        }
        if (err instanceof NotaryTableMismatchError) {
          this.heads = undefined;
          this.refold = true;
          throw new ChainBrokenError(`${err.message}; it is folded again from the signed digests at the next pass`, this.last ? BigInt(this.last.position) : 0n, DIGEST_STREAM);
        }
        throw err;
      }
    }
  }

  /** The table as it is, or emptied when it must be folded again; `last` the digest it holds. */
  private async load(): Promise<NotaryTable> {
    const heads = await NotaryTable.open(this.store);
    this.last = undefined;
    this.synced = -1n;
    if (this.refold) {
      await heads.reset();
      this.refold = false;
      return heads;
    }
    const position = await heads.load((held, found) => this.onRefold(`its position ${held.position} (event ${held.eventId}) is not in this store (found ${found ?? 'nothing'} there)`));
    if (position === 0n) return heads;
    const [at] = await this.store.readAll({ fromPosition: position - 1n, toPosition: position, maxCount: 1 });
    let problem: string | undefined;
    try {
      const { digest } = parseDigest(at!);
      if (digest.format !== CHAIN_DIGEST_FORMAT) problem = `it holds digest #${digest.sequence} of format ${digest.format}, whose root it cannot give`;
      else {
        heads.holding(digest.streams);
        if (heads.root() !== digest.headsRoot) problem = `its nodes do not give digest #${digest.sequence}'s headsRoot`;
        else {
          this.last = digest;
          this.synced = BigInt(digest.sequence - 1);
          return heads;
        }
      }
    } catch (err) {
      if (!(err instanceof DigestFormatError) && !(err instanceof NotaryTableMismatchError)) throw err;
      problem = err.message;
    }
    this.onRefold(problem);
    await heads.reset();
    return heads;
  }

  private async syncOnce(): Promise<void> {
    let fresh = this.heads === undefined;
    this.heads ??= await this.load();
    const heads = this.heads;
    for await (const page of digestPages(this.store, this.synced + 1n)) {
      for (const { digest, recordedAt, eventId } of page) {
        const link = linkProblem(this.last, digest);
        if (link) throw new ChainBrokenError(`the store's own digests do not hold: ${link}`, BigInt(digest.position), DIGEST_STREAM);
        let plan: HeadsPlan;
        const mine = this.planned;
        this.planned = undefined;
        try {
          // The same digest: this notary's key signs nothing else with the same signature.
          plan = mine && mine.from === heads.position && mine.digest.sequence === digest.sequence && mine.digest.signature === digest.signature ? mine.plan : await heads.plan(digest.heads);
        } catch (err) {
          if (err instanceof RangeError) throw new ChainBrokenError(`the store's own digests do not hold: digest #${digest.sequence} lists a head that is not one: ${err.message}`, BigInt(digest.position), DIGEST_STREAM);
          throw err;
        }
        // Each digest of format /2 must give its own root (the next is built on its tree).
        // (Every digest's root is checked by `verifyStoreDigests`; format /1's is rebuilt whole, so it is left to that.)
        const problem = digest.format === CHAIN_DIGEST_FORMAT ? foldProblem(digest, plan.streams, () => plan.root) : undefined;
        if (problem) throw new ChainBrokenError(`the store's own digests do not hold: ${problem}`, BigInt(digest.position), DIGEST_STREAM);
        if (!(await heads.fold(plan, { position: recordedAt, eventId }))) throw new NotaryTableMovedError(heads.position, recordedAt);
        this.last = digest;
        this.synced = BigInt(digest.sequence - 1);
        fresh = true;
        await turn();
      }
    }
    if (!this.last) return;
    // The newest signature vouches for every digest it chains to (see verifyStoreDigests).
    const problem = fresh ? signatureProblem(this.last, this.identity.publicKey) : undefined;
    if (problem) throw new ChainBrokenError(`the store's own digests do not hold: ${problem}`, BigInt(this.last.position), DIGEST_STREAM);
  }
}

// ── checking a store against digests ────────────────────────────────────────────────────────

/** What `verifyStoreDigests` found. */
export type DigestCheck =
  | {
      ok: true;
      /** Digests checked (the store's and the exported ones, merged by sequence). */
      digests: number;
      exported: number;
      /** The latest digest checked. */
      latest?: { sequence: number; position: string; signedAt: string };
      /** Events after the latest digest's position: not yet covered by a signature. */
      unsignedAfter?: string;
    }
  | {
      ok: false;
      firstBadPosition: bigint;
      streamId: string;
      revision?: string;
      reason: string;
    };

type Fail = Extract<DigestCheck, { ok: false }>;

/**
 * Checks the store's history against every digest it records and every digest in `exported`
 * (files written by `gpunet digests export` earlier): each signed by `publicKey`, the digests a
 * chain from #1, every exported digest still in the store, and at each digest's position every
 * stream's head in the store equal to the signed one. A history rewritten with a recomputed chain
 * ends at a head other than the signed one: the result names the stream and the first position
 * no earlier digest vouches for. Run `store.verify()` first for the links themselves.
 */
export async function verifyStoreDigests(store: EventStore, options: { publicKey: string; exported?: readonly ChainHeadsSigned[] }): Promise<DigestCheck> {
  let recorded: { digest: ChainHeadsSigned; recordedAt: bigint }[];
  try {
    recorded = await readDigests(store);
  } catch (err) {
    if (err instanceof DigestFormatError) return { ok: false, firstBadPosition: err.position, streamId: DIGEST_STREAM, reason: err.message };
    throw err;
  }
  const bySequence = new Map<number, { digest: ChainHeadsSigned; recordedAt?: bigint }>();
  for (const r of recorded) bySequence.set(r.digest.sequence, r);
  const exported = [...(options.exported ?? [])].sort((a, b) => a.sequence - b.sequence);
  for (const d of exported) {
    const mine = bySequence.get(d.sequence);
    if (mine && digestHash(mine.digest) === digestHash(d)) continue;
    // A file that is not the network's own digest proves nothing either way: say so first.
    const problem = signatureProblem(d, options.publicKey);
    if (problem) return { ok: false, firstBadPosition: BigInt(d.position), streamId: DIGEST_STREAM, reason: `exported ${problem}` };
    if (!mine) {
      return {
        ok: false,
        firstBadPosition: BigInt(d.position),
        streamId: DIGEST_STREAM,
        reason: `digest #${d.sequence} (covering position ${d.position}, signed ${d.signedAt}) was exported earlier but is not in the store: digests were deleted or the store was rolled back`,
      };
    }
    return { ok: false, firstBadPosition: mine.recordedAt!, streamId: DIGEST_STREAM, reason: `the store's digest #${d.sequence} is not the one exported earlier: the store's digests were replaced` };
  }
  // Each digest covers its predecessor whole (previousDigestHash is the hash of all of it, its
  // signature included), so every link checked and the newest signature checked vouch for all.
  const digests = [...bySequence.values()].sort((a, b) => a.digest.sequence - b.digest.sequence);
  let previous: ChainHeadsSigned | undefined;
  for (const { digest, recordedAt } of digests) {
    const problem = linkProblem(previous, digest);
    if (problem) return { ok: false, firstBadPosition: recordedAt ?? BigInt(digest.position), streamId: DIGEST_STREAM, revision: String(digest.sequence - 1), reason: problem };
    previous = digest;
  }
  const newest = digests[digests.length - 1];
  const unsigned = newest && signatureProblem(newest.digest, options.publicKey);
  if (newest && unsigned) return { ok: false, firstBadPosition: newest.recordedAt ?? BigInt(newest.digest.position), streamId: DIGEST_STREAM, revision: String(newest.digest.sequence - 1), reason: unsigned };

  // One walk: at each digest's position, the heads the store has must be the heads it signed.
  // Between two digests only the streams the digest lists and the streams the walk touched can
  // differ, since everything matched at the previous one.
  const head = await store.headPosition();
  const store_: Heads = new Map();
  const expected = new HeadsTree();
  let touched = new Map<string, bigint>(); // stream → first position since the previous digest
  let i = 0;
  const check = (d: ChainHeadsSigned): Fail | undefined => {
    const names = new Set([...d.heads.map((h) => h.streamId), ...touched.keys()]);
    const before = new Map<string, StreamHead | undefined>([...names].map((n) => [n, expected.get(n)]));
    let malformed: string | undefined;
    try {
      for (const h of d.heads) expected.set(h);
      malformed = rootProblem(expected, d);
    } catch (err) {
      if (!(err instanceof RangeError)) throw err;
      malformed = `digest #${d.sequence} lists a head that is not one: ${err.message}`;
    }
    if (malformed) return { ok: false, firstBadPosition: BigInt(d.position), streamId: DIGEST_STREAM, reason: malformed };
    let worst: Fail | undefined;
    for (const streamId of names) {
      const want = expected.get(streamId);
      const have = store_.get(streamId);
      if (want && have && want.hash === have.hash && want.revision === have.revision && want.position === have.position) continue;
      const first = touched.get(streamId);
      const vouched = before.get(streamId);
      const since = vouched ? `after revision ${vouched.revision} (position ${vouched.position}), which digest #${d.sequence - 1} vouches for,` : 'from its first event';
      let f: Fail;
      if (!want) {
        f = { ok: false, firstBadPosition: first ?? BigInt(have!.position), streamId, revision: '0', reason: `stream ${streamId} is in the store at position ${first ?? have!.position} but not in signed digest #${d.sequence} (covering position ${d.position}): inserted behind the store's back` };
      } else if (!have || first === undefined || BigInt(have.revision) < BigInt(want.revision)) {
        // The first missing event lies after the store's head and at or before the signed one.
        f = {
          ok: false,
          firstBadPosition: BigInt(want.position),
          streamId,
          revision: have ? (BigInt(have.revision) + 1n).toString() : '0',
          reason: `stream ${streamId} ends at ${have ? `revision ${have.revision}` : 'nothing'} as of position ${d.position}, but signed digest #${d.sequence} (${d.signedAt}) recorded revision ${want.revision} at position ${want.position}: events deleted or rewritten`,
        };
      } else {
        const revision = vouched ? (BigInt(vouched.revision) + 1n).toString() : '0';
        f = {
          ok: false,
          firstBadPosition: first,
          streamId,
          revision,
          reason:
            `stream ${streamId} was rewritten ${since} at or before revision ${want.revision} (position ${want.position}): signed digest #${d.sequence} (${d.signedAt}) recorded head ` +
            `${want.hash.slice(0, 16)}… at revision ${want.revision}, the store has ${have.hash.slice(0, 16)}… at revision ${have.revision} (position ${have.position}); the first event no earlier digest vouches for is at position ${first}`,
        };
      }
      if (!worst || f.firstBadPosition < worst.firstBadPosition) worst = f;
    }
    touched = new Map();
    return worst;
  };
  for await (const e of walk(store, 0n, head)) {
    while (i < digests.length && e.position > BigInt(digests[i]!.digest.position)) {
      const bad = check(digests[i]!.digest);
      if (bad) return bad;
      i += 1;
    }
    store_.set(e.streamId, headOf(e));
    if (!touched.has(e.streamId)) touched.set(e.streamId, e.position);
  }
  for (; i < digests.length; i += 1) {
    const d = digests[i]!.digest;
    if (BigInt(d.position) > head) {
      return { ok: false, firstBadPosition: head + 1n, streamId: DIGEST_STREAM, reason: `the store ends at position ${head}, before signed digest #${d.sequence}'s position ${d.position}: its tail was deleted or the store rolled back` };
    }
    const bad = check(d);
    if (bad) return bad;
  }
  const latest = digests[digests.length - 1]?.digest;
  return {
    ok: true,
    digests: digests.length,
    exported: exported.length,
    ...(latest ? { latest: { sequence: latest.sequence, position: latest.position, signedAt: latest.signedAt } } : {}),
    ...(latest && BigInt(latest.position) < head ? { unsignedAfter: latest.position } : !latest && head > 0n ? { unsignedAfter: '0' } : {}),
  };
}

/** The latest digest and the full heads it covers (for dispute bundles' proofs). */
export async function latestDigestTree(store: EventStore): Promise<{ digest: ChainHeadsSigned; tree: HeadsTree } | undefined> {
  const tree = new HeadsTree();
  let last: ChainHeadsSigned | undefined;
  for await (const page of digestPages(store)) {
    for (const { digest } of page) {
      for (const h of digest.heads) tree.set(h);
      last = digest;
    }
  }
  return last ? { digest: last, tree } : undefined;
}
