/**
 * Placement's snapshots (decision 0037): its folded state kept in the store's database with the
 * position it is the fold of, so a start folds only the events after it.
 *
 * A snapshot is only ever the fold of a prefix of the store. The live state is not one (decisions
 * are applied when written, ahead of events the bus has not delivered yet; heartbeats change it),
 * so a step does not serialize it: it loads the stored snapshot, folds the store from its position
 * up to the head with the same fold a start uses, and saves the result by compare and set. Any
 * placement process may step (a deposed leader too): each step's result is correct whoever makes
 * it, and the compare and set keeps the snapshot from moving backwards.
 */
import { SnapshotSlot, type EventStore, type ProjectionCheckpoint } from '#event-store';
import type { Logger } from 'pino';
import { initialState, type StateOptions } from '../domain/index.js';
import { PLACEMENT_SNAPSHOT, PLACEMENT_SNAPSHOT_FORMAT, PlacementFold } from './placement-fold.js';

/** A trusted snapshot, decoded: the fold up to `checkpoint`. */
export interface LoadedSnapshot {
  fold: PlacementFold;
  checkpoint: ProjectionCheckpoint;
}

/** What one step did. */
export interface SnapshotStep {
  /** Events folded onto the stored snapshot. */
  events: number;
  /** The snapshot's position after the step (unchanged when nothing was saved). */
  position: bigint;
  saved: boolean;
}

export class PlacementSnapshots {
  private constructor(
    private readonly store: EventStore,
    private readonly slot: SnapshotSlot,
    private readonly options: StateOptions,
    private readonly now: () => number,
    private readonly log: Logger,
  ) {}

  /** Placement's snapshot in `store`; undefined for a store without projection tables (a test double). */
  static async open(store: EventStore, options: StateOptions, now: () => number, log: Logger): Promise<PlacementSnapshots | undefined> {
    const slot = await SnapshotSlot.open(store, PLACEMENT_SNAPSHOT, PLACEMENT_SNAPSHOT_FORMAT);
    return slot && new PlacementSnapshots(store, slot, options, now, log);
  }

  /**
   * The stored snapshot if it can be trusted (the store holds its position, it is of this format
   * and half-life and reads as one), else undefined after a log line that says why: the caller
   * folds from zero.
   */
  async load(): Promise<LoadedSnapshot | undefined> {
    const snapshot = await this.slot.load((why) =>
      this.log.warn({ reason: why.reason, position: why.checkpoint.position.toString(), eventId: why.checkpoint.eventId }, `placement snapshot ignored, folding from the start of the store: ${why.detail}`),
    );
    if (!snapshot) return undefined;
    try {
      return { fold: PlacementFold.decode(snapshot.parts.join(''), this.options, this.now), checkpoint: snapshot.checkpoint };
    } catch (err) {
      this.log.warn({ reason: 'unreadable', position: snapshot.checkpoint.position.toString(), err: (err as Error).message }, `placement snapshot ignored, folding from the start of the store: ${(err as Error).message}`);
      return undefined;
    }
  }

  /** Saves `text`, a fold of the store up to `to` as {@link PlacementFold.encode} wrote it, if the stored snapshot is still at `from`. */
  saveText(from: ProjectionCheckpoint, to: ProjectionCheckpoint, text: string): Promise<boolean> {
    return this.slot.save(from, to, text);
  }

  /** The position the stored snapshot holds (unchecked). */
  checkpoint(): Promise<ProjectionCheckpoint> {
    return this.slot.checkpoint();
  }

  /**
   * Moves the snapshot up to `to` (default: the store's head): the stored snapshot (or, when there
   * is none to trust, an empty state) with the events after it folded on, saved when that is past
   * what is stored. Another writer's save in between wins; this one's is dropped.
   */
  async step(to?: bigint): Promise<SnapshotStep> {
    const base = await this.load();
    const stored = base?.checkpoint ?? (await this.slot.checkpoint());
    const head = to ?? (await this.store.headPosition());
    if (head <= stored.position) return { events: 0, position: stored.position, saved: false };
    const fold = base?.fold ?? new PlacementFold(initialState(this.options), this.now);
    const folded = await fold.foldStore(this.store, base ? base.checkpoint.position : 0n, head, this.log);
    if (!folded.last || folded.last.position <= stored.position) return { events: folded.events, position: stored.position, saved: false };
    const saved = await this.slot.save(stored, folded.last, fold.encode());
    return { events: folded.events, position: saved ? folded.last.position : stored.position, saved };
  }
}
