import { IllegalStateError } from '#errors';
import {
  commitForward,
  projectionTablesOf,
  SnapshotSlot,
  trustedCheckpoint,
  type EventStore,
  type ProjectionCheckpoint,
  type ProjectionRow,
  type ProjectionTable,
  type ProjectionTableSpec,
} from '#event-store';
import { mapLimit, type BlobStore } from '#blobs';
import type { BlobRef } from '#contracts';
import { EVENT_STORE, LOGGER, StoreFollower } from '#service-kit';
import { Inject, Injectable, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import type { Logger } from 'pino';
import { BLOB_STORE } from '../blobs/blob-store.provider.js';
import { decodeDataRefsParts, encodeDataRefsParts, evolve, initialDataRefs, retainedBy, type DataRefs, type RetainedRef } from '../domain/index.js';
import { manifestFiles } from './manifest-files.js';

/** The reference model's snapshot in the store's database (`projection_snapshot_storage_refs`, decision 0044). */
export const DATA_REFS_SNAPSHOT = 'storage_refs';
/** Bump whenever the model or `evolve` changes shape or meaning: a snapshot of another format is ignored. */
export const DATA_REFS_SNAPSHOT_FORMAT = 4;

/**
 * The retained references ({@link RetainedRef}: outputs', logs' and checkpoints' blobs, per team),
 * one row each, in the store's database (`projection_storage_retained`, decision 0045): they grow
 * with every job ever run, and a plan asks only about the blobs it may remove. A checkpoint's
 * manifest is written with its files, as `file` rows naming it (`via`), in the same transaction:
 * a plan never reads every checkpoint of a team to learn which files they hold. A manifest that
 * cannot be read then (the object store is unavailable) is written `expanded` 0: plans read it
 * themselves, and hand its files back to be written (`expanded`).
 */
export const RETAINED_TABLE: ProjectionTableSpec = {
  name: 'storage_retained',
  version: 1,
  // Set on checkpoint manifests only (plans look for those written unexpanded); files are found by key.
  columns: [
    { name: 'team', type: 'text' },
    { name: 'expanded', type: 'integer' },
  ],
  indexes: [['team', 'expanded']],
};

/** A retained reference's row key, `<team>/<kind>/<sha256>` (a team id has no `/`): the row is found by it. */
export const retainedKey = (r: RetainedRef): string => `${r.team}/${r.kind}/${r.sha256}`;

/** The reference a row key names. */
export function retainedOfKey(key: string): RetainedRef {
  const [team, kind, sha256] = key.split('/') as [string, RetainedRef['kind'], string];
  return { team, kind, sha256 };
}

/** A reference with what its row's document says: for a checkpoint's file the manifest it came with; for a manifest whether its files are rows. */
type RetainedDoc = RetainedRef & { via?: string; expanded?: boolean };

/** The row of a reference: a small document, and columns on manifests only (a row costs about 200 bytes in SQLite). */
function retainedRow(d: RetainedDoc): ProjectionRow {
  const doc = JSON.stringify({ ...(d.via ? { via: d.via } : {}), ...(d.expanded === false ? { expanded: false } : {}) });
  const values = d.kind === 'folder' ? { team: d.team, expanded: d.expanded === false ? 0 : 1 } : { team: null, expanded: null };
  return { key: retainedKey(d), doc, values };
}

/** Folded references that make a write at once rather than at the next tick. */
const RETAINED_FLUSH_ROWS = 1_000;
/** How often folded references are written when few come. */
const RETAINED_FLUSH_MS = 1_000;
/** Keys per lookup. */
const LOOKUP_KEYS = 1_000;
/** Checkpoint manifests read at once while writing. */
const MANIFEST_READS = 8;

/** How often the snapshot is brought up to the model while running; and at shutdown. */
const SNAPSHOT_EVERY_MS = 60_000;
/**
 * A save encodes and writes the whole model on the event loop: the next waits at least this many
 * times the last one's duration, so saves take at most about 1 % of the time however large the model.
 */
const SNAPSHOT_SPACING = 100;
/** A start that folded fewer events than this leaves the save to the timer: the snapshot it loaded is nearly as far. */
const SAVE_AFTER_START_EVENTS = 10_000;

/**
 * Keeps the input reference model ({@link DataRefs}) in memory: loads its snapshot, folds the
 * store after it before anything is consumed, then follows it. The store rather than the bus: it
 * is one ordered log of every service's events, so a release is never seen before the JobFinished
 * that tells whether the job goes on, and storage's own DataRemoved arrive in the same order.
 *
 * The model changes only by folding the store in order, so it is at every moment the fold of the
 * store up to the last event applied: it is saved as it stands (decision 0044), with that event's
 * position and id, by compare and set: after a start that folded much, every minute (spaced by 100
 * times the last save's duration), and at shutdown. A start trusts a snapshot only if the store holds that
 * event and it is of this format; otherwise it says why and folds from the start of the store.
 *
 * The retained references (outputs', logs' and checkpoints' blobs) are not in the model: each event
 * folded hands its references to {@link RETAINED_TABLE}, written every second or every 1,000
 * references with the position folded (decision 0045). A snapshot is encoded first and saved only
 * once that table holds its position, so a start from it finds the references of every event it
 * covers; references of events the table already holds are not written again.
 */
@Injectable()
export class DataRefsFeed implements OnModuleInit, OnApplicationShutdown {
  readonly model: DataRefs = initialDataRefs();
  private follower: StoreFollower | undefined;
  private slot: SnapshotSlot | undefined;
  /** The last event folded into the model, and where the stored snapshot is (as far as this process knows). */
  private folded: ProjectionCheckpoint = { position: 0n, eventId: null };
  private stored: ProjectionCheckpoint = { position: 0n, eventId: null };
  private timer: NodeJS.Timeout | undefined;
  private flushTimer: NodeJS.Timeout | undefined;
  private saving: Promise<void> = Promise.resolve();
  /** How long the last save took and when it ended (the next waits SNAPSHOT_SPACING times as long). */
  private lastSave = { ms: 0, endedAt: 0 };
  private retained: ProjectionTable | undefined;
  /** The position the retained table held when this process last wrote it or found it ahead. */
  private retainedHeld: ProjectionCheckpoint = { position: 0n, eventId: null };
  /** The table's position at start: the references of events up to it are in it already. */
  private retainedFrom = 0n;
  /** References folded and not yet written. */
  private pending: RetainedRef[] = [];
  /** Files of manifests written unexpanded, read since by a plan: written with the next write. */
  private expansions: RetainedDoc[] = [];
  private flushQueued = false;
  private writing: Promise<void> = Promise.resolve();
  /** The table went back under this process (another one emptied it): plans stop, a restart folds again. */
  private retainedStale = false;
  private readonly watchers = new Set<(ref: RetainedRef) => void>();

  constructor(
    @Inject(EVENT_STORE) private readonly store: EventStore,
    @Inject(BLOB_STORE) private readonly blobs: BlobStore,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  async onModuleInit(): Promise<void> {
    await this.restore();
    // The store's own poll interval: whoever needs the model current (a release, a sweep) asks
    // `catchUp`/`waitFor`, which read the store at once, so a faster poll only cost wake-ups.
    this.follower = new StoreFollower(this.store, this.logger, {
      name: 'input references',
      from: this.folded.position,
      apply: (e) => {
        // A table emptied under this process is not written again (plans stop): nothing to keep for it.
        if (e.position > this.retainedFrom && !this.retainedStale) {
          for (const ref of retainedBy(this.model, e)) {
            this.pending.push(ref);
            for (const watcher of this.watchers) watcher(ref);
          }
        }
        evolve(this.model, e);
        this.folded = { position: e.position, eventId: e.eventId };
        if (this.pending.length >= RETAINED_FLUSH_ROWS && !this.flushQueued) {
          this.flushQueued = true;
          void this.flushRetained()
            .catch((err: unknown) => this.logger.warn({ err }, 'writing the retained references failed; the next tick tries again'))
            .finally(() => (this.flushQueued = false));
        }
      },
    });
    const started = await this.follower.start();
    await this.flushRetained(true);
    if (started.events >= SAVE_AFTER_START_EVENTS) await this.snapshot();
    this.timer = setInterval(() => {
      if (Date.now() - this.lastSave.endedAt >= SNAPSHOT_SPACING * this.lastSave.ms) void this.snapshot();
    }, SNAPSHOT_EVERY_MS);
    this.timer.unref();
    this.flushTimer = setInterval(() => {
      if (this.pending.length > 0) void this.flushRetained().catch((err: unknown) => this.logger.warn({ err }, 'writing the retained references failed; the next tick tries again'));
    }, RETAINED_FLUSH_MS);
    this.flushTimer.unref();
  }

  async onApplicationShutdown(): Promise<void> {
    clearInterval(this.timer);
    clearInterval(this.flushTimer);
    await this.follower?.close();
    await this.snapshot();
  }

  /**
   * Writes the references folded so far, with the position of the last event folded, by compare
   * and set: when another storage process moved the table, from where it now is (the fold is the
   * same everywhere), or nothing when it holds as much already. After it the table holds at least
   * every reference folded before the call. With none to write, it moves the table's position only
   * when asked (`position`): a snapshot is saved only at a position the table holds.
   */
  flushRetained(position = false): Promise<void> {
    const run = this.writing.then(async () => {
      const table = this.retained;
      const to = this.folded;
      if (!table || this.retainedStale || to.position <= this.retainedHeld.position) return;
      if (this.pending.length === 0 && this.expansions.length === 0 && !position) return;
      const refs = this.pending;
      const expansions = this.expansions;
      this.pending = [];
      this.expansions = [];
      try {
        const docs: RetainedDoc[] = [...expansions];
        let unread = 0;
        await mapLimit(refs, MANIFEST_READS, async (r) => {
          if (r.kind === 'file') return void docs.push(r);
          try {
            // A checkpoint's recorded size is its files' total, not the manifest's: read without a size check.
            const files = await manifestFiles(this.blobs, r.team, r.sha256, undefined);
            docs.push(r, ...files.map((f) => ({ team: r.team, kind: 'file' as const, sha256: f.sha256, via: r.sha256 })));
          } catch {
            unread++;
            docs.push({ ...r, expanded: false });
          }
        });
        if (unread > 0) this.logger.warn({ manifests: unread }, 'checkpoint manifests not readable now: written unexpanded, plans read them');
        const written = await commitForward(table, this.retainedHeld, to, docs.map(retainedRow));
        if ('held' in written) this.retainedHeld = written.held;
        else {
          this.logger.error({ position: String(written.behind.position), held: String(this.retainedHeld.position) }, 'the retained references were emptied by another storage process; this one plans no removal until restarted');
          this.retainedStale = true;
        }
      } catch (err) {
        // Not written: they go again with the next write.
        this.pending = [...refs, ...this.pending];
        this.expansions = [...expansions, ...this.expansions];
        throw err;
      }
    });
    this.writing = run.catch(() => undefined);
    return run;
  }

  /** Resolves once the writes of the table begun so far have ended: the references they took from memory are in the table then. */
  async retainedWritten(): Promise<void> {
    await this.writing;
  }

  /** Calls `watcher` with every reference folded from now on, until the returned function is called. */
  watchRetained(watcher: (ref: RetainedRef) => void): () => void {
    this.watchers.add(watcher);
    return () => this.watchers.delete(watcher);
  }

  /** A plan read the files of a manifest written unexpanded: they are written with the next write (the manifest never changes). */
  expanded(team: string, manifest: string, files: readonly BlobRef[]): void {
    this.expansions.push({ team, kind: 'folder', sha256: manifest }, ...files.map((f) => ({ team, kind: 'file' as const, sha256: f.sha256, via: manifest })));
  }

  /** The teams' checkpoint manifests written unexpanded: a plan reads their files itself. */
  async unexpandedFolders(teams: Iterable<string>): Promise<Map<string, string[]>> {
    const table = this.usableRetained();
    const out = new Map<string, string[]>();
    for (const team of teams) {
      const where = [
        { column: 'team', op: '=', value: team },
        { column: 'expanded', op: '=', value: 0 },
      ] as const;
      out.set(team, (await table.query({ where })).rows.map((r) => retainedOfKey(r.key).sha256));
    }
    return out;
  }

  /** References folded and not yet in the table. */
  get unwritten(): readonly RetainedRef[] {
    return this.pending;
  }

  /**
   * Of these blobs of each team, those the table holds as retained: a file of an output, a log or
   * a checkpoint (`files`), or a checkpoint's manifest (`folders`). See `unwritten` for the rest.
   */
  async retainedAmong(blobs: ReadonlyMap<string, ReadonlySet<string>>): Promise<Map<string, { files: Set<string>; folders: Set<string> }>> {
    const table = this.usableRetained();
    const out = new Map<string, { files: Set<string>; folders: Set<string> }>();
    const keys = [...blobs].flatMap(([team, shas]) => [...shas].flatMap((sha256) => [retainedKey({ team, kind: 'file', sha256 }), retainedKey({ team, kind: 'folder', sha256 })]));
    for (let i = 0; i < keys.length; i += LOOKUP_KEYS) {
      for (const key of (await table.get(keys.slice(i, i + LOOKUP_KEYS))).keys()) {
        const ref = retainedOfKey(key);
        let found = out.get(ref.team);
        if (!found) out.set(ref.team, (found = { files: new Set(), folders: new Set() }));
        (ref.kind === 'file' ? found.files : found.folders).add(ref.sha256);
      }
    }
    return out;
  }

  private usableRetained(): ProjectionTable {
    if (!this.retained) throw new IllegalStateError('the retained references are not open yet');
    if (this.retainedStale) throw new IllegalStateError('the retained references were emptied by another storage process: restart this one');
    return this.retained;
  }

  /** Resolves true once the model includes every event up to `position`, or false after `timeoutMs`. */
  waitFor(position: bigint, timeoutMs: number): Promise<boolean> {
    return this.follower!.waitFor(position, timeoutMs);
  }

  /** Resolves true once the model includes everything the store held when called. */
  catchUp(timeoutMs: number): Promise<boolean> {
    return this.follower!.catchUp(timeoutMs);
  }

  /** The position of the last event folded into the model. */
  get position(): bigint {
    return this.folded.position;
  }

  /** Brings the stored snapshot up to the model, by compare and set; never throws. */
  snapshot(): Promise<void> {
    this.saving = this.saving.then(async () => {
      if (!this.slot || this.folded.position <= this.stored.position) return;
      const to = this.folded;
      const began = Date.now();
      try {
        // The model as it stands at `to`; saved only once the retained table holds `to` too, so a
        // start from this snapshot finds the references of every event it covers.
        const parts = encodeDataRefsParts(this.model);
        await this.flushRetained(true);
        if (this.retainedHeld.position < to.position) return;
        if (await this.slot.save(this.stored, to, parts)) this.stored = to;
        // Another storage process moved it: learn where it is, and go on from there next time.
        else this.stored = await this.slot.checkpoint();
      } catch (err) {
        this.logger.warn({ err, position: to.position.toString() }, 'could not save the input references\' snapshot; the next start folds more of the store');
      }
      this.lastSave = { ms: Date.now() - began, endedAt: Date.now() };
    });
    return this.saving;
  }

  /** Loads a trusted snapshot into the model; otherwise the model starts empty and the whole store is folded. */
  private async restore(): Promise<void> {
    const host = projectionTablesOf(this.store);
    if (!host) throw new IllegalStateError('storage needs a store that keeps projection tables (SQLite or PostgreSQL)');
    this.retained = await host.openProjectionTable(RETAINED_TABLE);
    this.retainedHeld = await trustedCheckpoint(this.store, this.retained, (cp, found) =>
      this.logger.warn({ position: String(cp.position), eventId: cp.eventId, found }, 'the retained references hold a position whose event this store does not hold; folding them again from the start'),
    );
    this.retainedFrom = this.retainedHeld.position;
    try {
      this.slot = await SnapshotSlot.open(this.store, DATA_REFS_SNAPSHOT, DATA_REFS_SNAPSHOT_FORMAT);
      const snapshot = await this.slot?.load((why) =>
        this.logger.warn({ reason: why.reason, position: why.checkpoint.position.toString() }, `input references' snapshot ignored, folding from the start of the store: ${why.detail}`),
      );
      if (!snapshot) return;
      if (snapshot.checkpoint.position > this.retainedHeld.position) {
        // Saved only once the table held its position: the table was emptied or made again since.
        this.logger.warn(
          { position: snapshot.checkpoint.position.toString(), retained: this.retainedHeld.position.toString() },
          'input references\' snapshot ignored, folding from the start of the store: the retained references are behind it',
        );
        return;
      }
      Object.assign(this.model, decodeDataRefsParts(snapshot.parts));
      this.folded = snapshot.checkpoint;
      this.stored = snapshot.checkpoint;
      this.logger.info({ position: snapshot.checkpoint.position.toString(), jobs: this.model.jobs.size }, 'input references loaded from their snapshot');
    } catch (err) {
      this.logger.warn({ err }, 'input references\' snapshot unreadable, folding from the start of the store');
      Object.assign(this.model, initialDataRefs());
      this.folded = { position: 0n, eventId: null };
    }
  }
}
