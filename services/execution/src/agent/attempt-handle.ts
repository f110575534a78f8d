import { ConcurrencyError, isRetryable } from '#errors';
import { IdempotencyConflictError } from '#event-store';
import type { Cause, EventWriter, NewEvent } from '#service-kit';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import {
  attemptStreamId,
  decide,
  evolve,
  expectedRevision,
  isRecorded,
  type AttemptCommand,
  type AttemptFact,
  type AttemptState,
  type StopOutcome,
} from '../domain/index.js';

/** How long recording waits out a store that is busy or unreachable before giving up. */
const RECORD_RETRY = { attempts: 8, firstDelayMs: 100, maxDelayMs: 2_000 } as const;

/**
 * One attempt this agent process drives: its state, the one place where commands are decided
 * and their events recorded, and the signal that stops whatever the attempt is doing.
 *
 * Commands run one at a time in call order (the staging path, the process callbacks and a
 * cancel handler may all ask at once), so every append expects exactly the revision the state
 * was folded from. Events get ids derived from `cause` (the JobPlaced, or on recovery the event
 * found in the store): re-handling writes nothing new.
 */
export class AttemptHandle {
  private current: AttemptState;
  private chain: Promise<unknown> = Promise.resolve();
  private readonly stopper = new AbortController();
  /** Process group of the running job, once started (see `onSpawn`). */
  pgid: number | undefined;
  /** Settles when the attempt is released and cleaned up (or its driver gave up). */
  done: Promise<void> = Promise.resolve();

  constructor(
    state: AttemptState,
    private readonly cause: Cause,
    private readonly writer: EventWriter,
    readonly log: Logger,
    /** Team and correlation for metadata; the job's team when known. */
    readonly team?: string,
  ) {
    this.current = state;
  }

  get state(): AttemptState {
    return this.current;
  }

  get jobId(): string {
    return this.current.placement.jobId;
  }

  get attemptId(): string {
    return this.current.placement.attemptId;
  }

  get correlationId(): string {
    return this.cause.metadata.correlationId;
  }

  /** Aborted when the attempt must stop: staging stops, the process gets TERM → grace → KILL. */
  get signal(): AbortSignal {
    return this.stopper.signal;
  }

  /**
   * Decides the command on the current state and records its events; serialized per attempt.
   * Given a function, it sees the state as it is when the command's turn comes and may return
   * `undefined` to do nothing (e.g. the attempt was stopped meanwhile).
   */
  execute(command: AttemptCommand | ((state: AttemptState) => AttemptCommand | undefined)): Promise<AttemptFact[]> {
    const next = this.chain.then(() => {
      const decided = typeof command === 'function' ? command(this.current) : command;
      return decided === undefined ? [] : this.apply(decided);
    });
    this.chain = next.catch(() => undefined);
    return next;
  }

  /**
   * Asks the attempt to stop with this outcome. Before the process runs the attempt finishes at
   * once; while it runs the process is aborted and its end recorded with this outcome.
   * `peerEnded`: a gang part stopped because the part on that node ended first.
   */
  async stop(outcome: StopOutcome, reason: string, at: () => string, peerEnded?: string): Promise<void> {
    const facts = await this.execute(() => ({ type: 'Stop', outcome, reason, at: at(), ...(peerEnded !== undefined && { peerEnded }) }));
    // Only a stop that changed something aborts: a finished attempt's outputs upload goes on.
    if (facts.length > 0) this.stopper.abort(new Error(reason));
  }

  private async apply(command: AttemptCommand): Promise<AttemptFact[]> {
    const facts = decide(this.current, command);
    const recorded = facts.filter(isRecorded);
    if (recorded.length > 0) {
      const { nodeId, attemptId, gangNodes } = this.current.placement;
      // Every part of a gang answers the same JobPlaced: its node tells their event ids apart.
      await this.append(attemptStreamId(nodeId, attemptId), gangNodes === undefined ? recorded : recorded.map((e) => ({ ...e, discriminator: nodeId })));
    }
    this.current = facts.reduce(evolve, this.current);
    return facts;
  }

  private async append(streamId: string, events: readonly NewEvent[]): Promise<void> {
    const expected = expectedRevision(this.current);
    let delay: number = RECORD_RETRY.firstDelayMs;
    for (let attempt = 1; ; attempt++) {
      try {
        await this.writer.append(streamId, events, {
          cause: this.cause,
          expectedRevision: expected,
          jobId: this.jobId,
          ...(this.team ? { team: this.team } : {}),
        });
        return;
      } catch (err) {
        // A conflict means another writer touched this attempt's stream: never papered over.
        if (!isRetryable(err) || attempt >= RECORD_RETRY.attempts || err instanceof ConcurrencyError || err instanceof IdempotencyConflictError) throw err;
        this.log.warn({ err, attempt, streamId }, 'recording failed; retrying');
        await sleep(delay);
        delay = Math.min(delay * 2, RECORD_RETRY.maxDelayMs);
      }
    }
  }
}
