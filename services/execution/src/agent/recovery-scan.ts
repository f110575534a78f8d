import type { JobPlaced } from '#contracts';
import type { EventStore, ReadAllFilter, RecordedEvent } from '#event-store';
import {
  attemptIdOfStream,
  attemptStreamPrefix,
  attemptsToRecover,
  RECORDED_ATTEMPT_EVENT_TYPES,
  type AttemptState,
  placementOn,
  type Placement,
  type RecordedAttemptEvent,
} from '../domain/index.js';
import { workCopyStreamId } from '../journal/journal.js';

/** The journal's copies of placement's streams (`placement-job-<jobId>`), as the recorder sent them. */
const PLACEMENT_STREAM_PREFIX = workCopyStreamId('placement-');

/** What the store says this node left unfinished. */
export interface RecoveryScan {
  readonly attempts: readonly AttemptState[];
  /** The event each attempt's new events are caused by: its JobPlaced, else its last recorded event. */
  readonly causes: ReadonlyMap<string, RecordedEvent>;
  /** The store's head when the scan began: everything up to it was read. */
  readonly head: bigint;
  /** Where each attempt first appears (its JobPlaced, else its first recorded event). */
  readonly placedAt: ReadonlyMap<string, bigint>;
}

/** Subscriber id of the recovery low-water mark (see {@link scanForRecovery}). */
export const recoveryCheckpointId = (nodeId: string) => `execution-${nodeId}-recovery`;

async function* readAllPages(store: EventStore, filter: ReadAllFilter, from: bigint, to: bigint): AsyncGenerator<RecordedEvent> {
  let position = from;
  for (;;) {
    const page = await store.readAll({ fromPosition: position, toPosition: to, maxCount: 1000, filter });
    for (const e of page) yield e;
    if (page.length < 1000) return;
    position = page[page.length - 1]!.position;
  }
}

/**
 * Reads every placement of this node and every event of its attempt streams recorded after the
 * node's recovery checkpoint (a low-water mark below which every placement is released), up to
 * the current head, and folds them into the attempts that still need something done.
 */
export async function scanForRecovery(store: EventStore, nodeId: string): Promise<RecoveryScan> {
  const head = await store.headPosition();
  const from = (await store.loadCheckpoint(recoveryCheckpointId(nodeId))) ?? 0n;

  const placements: Placement[] = [];
  const causes = new Map<string, RecordedEvent>();
  const placedAt = new Map<string, bigint>();
  for await (const e of readAllPages(store, { types: ['JobPlaced'], streamPrefix: PLACEMENT_STREAM_PREFIX }, from, head)) {
    const data = e.data as JobPlaced;
    const placement = data ? placementOn(data, nodeId) : undefined;
    if (!placement) continue;
    placements.push(placement);
    causes.set(data.attemptId, e);
    placedAt.set(data.attemptId, e.position);
  }

  const attempts = new Map<string, RecordedAttemptEvent[]>();
  const filter = { types: [...RECORDED_ATTEMPT_EVENT_TYPES], streamPrefix: attemptStreamPrefix(nodeId) };
  for await (const e of readAllPages(store, filter, from, head)) {
    const attemptId = attemptIdOfStream(nodeId, e.streamId);
    // A node id that is a prefix of another's ("n1" and "n1-attempt-x") must not adopt its attempts.
    if (attemptId === undefined || (e.data as { nodeId?: string })?.nodeId !== nodeId) continue;
    const list = attempts.get(attemptId) ?? [];
    list.push({ type: e.type, data: e.data } as RecordedAttemptEvent);
    attempts.set(attemptId, list);
    if (!causes.has(attemptId)) causes.set(attemptId, e);
    // Without its JobPlaced in range, the attempt's first event marks where to read from again.
    if (!placedAt.has(attemptId)) placedAt.set(attemptId, e.position);
  }
  return { attempts: attemptsToRecover({ placements, attempts }), causes, head, placedAt };
}

/**
 * The new low-water mark once the scanned attempts are released: just below the oldest
 * placement that was still open, so it is read again next time, or the head when none was.
 */
export function checkpointAfter(scan: RecoveryScan, stillOpen: readonly string[]): bigint {
  let mark = scan.head;
  for (const attemptId of stillOpen) {
    const at = scan.placedAt.get(attemptId);
    if (at !== undefined && at - 1n < mark) mark = at - 1n;
  }
  return mark < 0n ? 0n : mark;
}
