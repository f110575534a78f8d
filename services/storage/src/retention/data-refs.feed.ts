import { SnapshotSlot, type EventStore, type ProjectionCheckpoint } from '#event-store';
import { EVENT_STORE, LOGGER, StoreFollower } from '#service-kit';
import { Inject, Injectable, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import type { Logger } from 'pino';
import { decodeDataRefs, encodeDataRefs, evolve, initialDataRefs, type DataRefs } from '../domain/index.js';

/** The reference model's snapshot in the store's database (`projection_snapshot_storage_refs`, decision 0044). */
export const DATA_REFS_SNAPSHOT = 'storage_refs';
/** Bump whenever the model or `evolve` changes shape or meaning: a snapshot of another format is ignored. */
export const DATA_REFS_SNAPSHOT_FORMAT = 1;
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
  private saving: Promise<void> = Promise.resolve();
  /** How long the last save took and when it ended (the next waits SNAPSHOT_SPACING times as long). */
  private lastSave = { ms: 0, endedAt: 0 };

  constructor(
    @Inject(EVENT_STORE) private readonly store: EventStore,
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
        evolve(this.model, e);
        this.folded = { position: e.position, eventId: e.eventId };
      },
    });
    const started = await this.follower.start();
    if (started.events >= SAVE_AFTER_START_EVENTS) await this.snapshot();
    this.timer = setInterval(() => {
      if (Date.now() - this.lastSave.endedAt >= SNAPSHOT_SPACING * this.lastSave.ms) void this.snapshot();
    }, SNAPSHOT_EVERY_MS);
    this.timer.unref();
  }

  async onApplicationShutdown(): Promise<void> {
    clearInterval(this.timer);
    await this.follower?.close();
    await this.snapshot();
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
        if (await this.slot.save(this.stored, to, encodeDataRefs(this.model))) this.stored = to;
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
    try {
      this.slot = await SnapshotSlot.open(this.store, DATA_REFS_SNAPSHOT, DATA_REFS_SNAPSHOT_FORMAT);
      const snapshot = await this.slot?.load((why) =>
        this.logger.warn({ reason: why.reason, position: why.checkpoint.position.toString() }, `input references' snapshot ignored, folding from the start of the store: ${why.detail}`),
      );
      if (!snapshot) return;
      Object.assign(this.model, decodeDataRefs(snapshot.parts.join('')));
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
