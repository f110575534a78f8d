import type { EventStore, RecordedEvent } from '#event-store';
import { StoreFollower } from '#service-kit';
import type { Logger } from 'pino';
import { DIRECTORY_EVENT_TYPES, type DirectoryEvent } from '../domain/key-directory.js';
import type { ApiKeyRing } from './api-keys.js';

/** Streams of intake's team and key events; only intake writes `intake-` streams. */
export const TEAM_STREAM_PREFIX = 'intake-team-';
export const KEY_STREAM_PREFIX = 'intake-key-';
/** Where refused admin attempts are recorded. */
export const REFUSALS_STREAM = 'intake-refusals';

export const teamStreamId = (team: string) => `${TEAM_STREAM_PREFIX}${team}`;
export const keyStreamId = (keyId: string) => `${KEY_STREAM_PREFIX}${keyId}`;

/**
 * How often another intake instance's changes are looked for when no in-process notification
 * arrives: well under the one second within which a revoked key must fail everywhere.
 */
export const KEY_RING_POLL_MS = 100;

/**
 * Keeps the key ring in step with the store: `start()` folds every team and key event (only
 * those types, from intake's streams: a cheap indexed read however large the store), then
 * follows new ones. The store is the truth: an instance applies its own changes the same way
 * (`waitFor` after its append), and sees another instance's within {@link KEY_RING_POLL_MS}.
 */
export class KeyRingFeed {
  private readonly follower: StoreFollower;

  constructor(
    store: EventStore,
    private readonly ring: ApiKeyRing,
    private readonly logger: Logger,
  ) {
    this.follower = new StoreFollower(store, logger, {
      name: 'key ring',
      filter: { types: DIRECTORY_EVENT_TYPES, streamPrefix: 'intake-' },
      pollIntervalMs: KEY_RING_POLL_MS,
      resubscribeDelayMs: 250,
      apply: (e) => this.apply(e),
    });
  }

  async start(): Promise<void> {
    await this.follower.start();
    this.logger.info({ keys: this.ring.size, teams: this.ring.directory.teams.size }, 'key ring ready');
  }

  close(): Promise<void> {
    return this.follower.close();
  }

  /**
   * Resolves true once the ring holds every team and key event the store held when called —
   * another replica's too (decision 0030) — or false after `timeoutMs`.
   */
  sync(timeoutMs: number): Promise<boolean> {
    return this.follower.sync(timeoutMs);
  }

  /** Resolves true once the ring includes the event at `position`, false after `timeoutMs`. */
  waitFor(position: bigint, timeoutMs: number): Promise<boolean> {
    return this.follower.waitFor(position, timeoutMs);
  }

  private apply(event: RecordedEvent): void {
    // Intake's own streams only (the filter says so too): another writer cannot issue a key.
    if (event.metadata.producer !== 'intake' || !event.streamId.startsWith('intake-')) return;
    this.ring.apply({ type: event.type, data: event.data } as DirectoryEvent);
    if (event.type === 'ApiKeyRevoked' || event.type === 'TeamDisabled') {
      this.logger.info({ type: event.type, position: String(event.position), ...(event.data as object) }, 'key ring: refusing from now on');
    }
  }
}
