import type { JobFinished, JobSubmitted, NodeLost, UsageRecorded } from '#contracts';
import { IllegalStateError } from '#errors';
import { IdempotencyConflictError, WrongExpectedVersionError, type EventStore, type RecordedEvent } from '#event-store';
import type { BusEvent } from '#messaging';
import { CLOCK, EVENT_STORE, EVENT_WRITER, type Clock, type EventWriter } from '#service-kit';
import { Inject, Injectable } from '@nestjs/common';
import type { Logger } from 'pino';
import { attemptStreamId, computeHeldOf, intakeJobStreamId, placementNodeStreamId, usageFor, usageStreamId } from '../domain/index.js';
import { PriceBookService } from '../prices/price-book.service.js';

/** What handling one JobFinished did. */
export type UsageOutcome =
  | { kind: 'recorded'; line: UsageRecorded }
  | { kind: 'already_recorded'; line: UsageRecorded }
  | { kind: 'never_held' }
  /** The JobFinished on the bus is not the one the execution recorder recorded (or none is): nothing is billed from it. */
  | { kind: 'not_recorded' };

/**
 * Turns a JobFinished into the attempt's UsageRecorded line: reads the attempt's ComputeHeld from
 * the store, prices it, and appends it to `ledger-usage-<jobId>`.
 *
 * Exactly once per attempt, whatever is redelivered or restarted: the usage stream is read first
 * and an attempt that has a line gets no second one; the append expects the revision that read
 * saw and derives its event id from the JobFinished event and the attempt id, so a concurrent
 * handler of the same attempt fails there and finds the winner's line instead.
 */
@Injectable()
export class UsageRecorderService {
  constructor(
    @Inject(EVENT_STORE) private readonly store: EventStore,
    @Inject(EVENT_WRITER) private readonly writer: EventWriter,
    @Inject(CLOCK) private readonly clock: Clock,
    private readonly prices: PriceBookService,
  ) {}

  async onJobFinished(announced: JobFinished, busEvent: BusEvent, log: Logger): Promise<UsageOutcome> {
    const attemptEvents = await this.store.readStream(attemptStreamId(announced.nodeId, announced.attemptId));
    // Billing reads the attempt's own recorded facts (the recorder appended them from the node's
    // signed reports); the bus message only says where to look. A JobFinished that is not the
    // recorded one — forged, or from any other stream — bills nothing.
    const recordedEnd = attemptEvents.find((e) => e.type === 'JobFinished');
    if (!recordedEnd || recordedEnd.eventId.toLowerCase() !== busEvent.eventId.toLowerCase()) {
      log.warn({ attemptId: announced.attemptId, nodeId: announced.nodeId, eventId: busEvent.eventId }, 'JobFinished on the bus is not the attempt\'s recorded end: nothing billed from it');
      return { kind: 'not_recorded' };
    }
    const finished = recordedEnd.data as JobFinished;
    const event: BusEvent = recordedEnd;
    const held = computeHeldOf(attemptEvents);
    if (!held) {
      log.info({ attemptId: finished.attemptId, outcome: finished.outcome }, 'attempt never held compute: no usage line, nothing billed');
      return { kind: 'never_held' };
    }

    const usageStream = usageStreamId(finished.jobId);
    const recorded = await this.store.readStream(usageStream);
    const existing = lineOf(recorded, finished.attemptId, finished.nodeId);
    if (existing) {
      log.info({ attemptId: finished.attemptId }, 'usage of the attempt already recorded');
      return { kind: 'already_recorded', line: existing };
    }

    const team = await this.teamOf(finished.jobId, held, event);
    const nodeLost = await this.lostWithNode(finished);
    const line = usageFor(held.data, finished, await this.prices.versions(), { team, recordedAt: this.clock.now().toISOString(), nodeLost });
    if (!line) return { kind: 'never_held' };

    const last = recorded[recorded.length - 1];
    try {
      const written = await this.writer.append(usageStream, [{ type: 'UsageRecorded', data: line, discriminator: finished.attemptId }], {
        expectedRevision: last ? last.revision : 'no_stream',
        cause: event,
      });
      if (written.alreadyRecorded) {
        // Another handler of the same JobFinished got there first: its line (and recordedAt) stands.
        const raced = lineOf(await this.store.readStream(usageStream), finished.attemptId, finished.nodeId);
        if (raced) {
          log.info({ attemptId: finished.attemptId }, 'usage of the attempt recorded meanwhile by another handler');
          return { kind: 'already_recorded', line: raced };
        }
      }
    } catch (err) {
      // Another handler of the same JobFinished won the race (its line has another recordedAt,
      // hence the id clash): that line stands. Any other reason to fail is reported as it is.
      if (!(err instanceof WrongExpectedVersionError || err instanceof IdempotencyConflictError)) throw err;
      const raced = lineOf(await this.store.readStream(usageStream), finished.attemptId, finished.nodeId);
      if (!raced) throw err;
      log.info({ attemptId: finished.attemptId }, 'usage of the attempt recorded meanwhile by another handler');
      return { kind: 'already_recorded', line: raced };
    }
    log.info(
      {
        attemptId: line.attemptId,
        team,
        outcome: line.outcome,
        billableMs: line.billableMs,
        amountMicros: line.amountMicros,
        currency: line.currency,
        priceListVersion: line.priceListVersion,
        ...(line.waivedReason ? { waivedReason: line.waivedReason } : {}),
      },
      'usage recorded',
    );
    return { kind: 'recorded', line };
  }

  /** Did placement declare the attempt's node lost with the attempt running (a late report from a node that came back)? */
  private async lostWithNode(finished: JobFinished): Promise<boolean> {
    const events = await this.store.readStream(placementNodeStreamId(finished.nodeId));
    return events.some((e) => e.type === 'NodeLost' && (e.data as NodeLost).affectedAttempts.some((a) => a.attemptId === finished.attemptId));
  }

  /**
   * The team that pays: intake's JobSubmitted, which is the authority; else the team the
   * recorder put in the metadata of the attempt's events (it takes it from the same JobSubmitted).
   */
  private async teamOf(jobId: string, held: RecordedEvent, finished: BusEvent): Promise<string> {
    const submitted = (await this.store.readStream(intakeJobStreamId(jobId))).find((e) => e.type === 'JobSubmitted');
    if (submitted) return (submitted.data as JobSubmitted).team;
    const carried = held.metadata.team ?? finished.metadata.team;
    if (carried) return carried;
    throw new IllegalStateError(`job ${jobId}: no team in the attempt's events and no JobSubmitted in ${intakeJobStreamId(jobId)}; cannot tell who pays`);
  }
}

/**
 * The usage line of an attempt on a node among the events of a usage stream: keyed by both, as a
 * multi-node attempt has one line per node.
 */
function lineOf(events: readonly RecordedEvent[], attemptId: string, nodeId: string): UsageRecorded | undefined {
  const found = events.find((e) => e.type === 'UsageRecorded' && (e.data as UsageRecorded).attemptId === attemptId && (e.data as UsageRecorded).nodeId === nodeId);
  return found?.data as UsageRecorded | undefined;
}
