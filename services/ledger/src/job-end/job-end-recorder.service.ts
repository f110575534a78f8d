import type { EventData } from '#contracts';
import { IdempotencyConflictError, WrongExpectedVersionError, type EventStore, type RecordedEvent } from '#event-store';
import type { BusEvent } from '#messaging';
import { CLOCK, EVENT_STORE, EVENT_WRITER, type Clock, type EventWriter } from '#service-kit';
import { Inject, Injectable } from '@nestjs/common';
import type { Logger } from 'pino';
import { decideJobEnd, jobEndStreamId, nodesOfAttempts, placementNodeStreamId, type JobEndedData } from '../domain/index.js';

/** Events read per page of a job's facts. */
const PAGE = 1_000;

/** What one look at a job found. */
export type JobEndOutcome =
  | { kind: 'recorded'; ended: JobEndedData; position: bigint }
  | { kind: 'already_recorded'; ended: JobEndedData }
  | { kind: 'not_over'; why: string };

/**
 * Records each job's `JobEnded` once nothing more will happen to it (the rule is `decideJobEnd`).
 * Called for every event that may be a job's last (a release, a withdrawal, a failed staging, a
 * rejection, a lost node, a usage line); each call reads the job's facts from the store, so what
 * it decides never depends on the order the bus brought them in.
 *
 * Exactly once, whatever is redelivered, restarted or raced: the job's end is the only event of
 * `ledger-job-<jobId>`, appended expecting no stream under an id derived from the job id. A
 * second look finds the stream; a concurrent one fails its append and finds the winner's.
 */
@Injectable()
export class JobEndRecorderService {
  /** Per job, the end of the look under way (looks at one job run one after another). */
  private readonly looking = new Map<string, Promise<void>>();

  constructor(
    @Inject(EVENT_STORE) private readonly store: EventStore,
    @Inject(EVENT_WRITER) private readonly writer: EventWriter,
    @Inject(CLOCK) private readonly clock: Clock,
  ) {}

  /** Looks at the job once: records its JobEnded if it is over and has none. `cause` is the event that made it look. */
  check(jobId: string, cause: BusEvent | undefined, log: Logger): Promise<JobEndOutcome> {
    // One look at a job at a time in this process: looks begun in the same millisecond wrote
    // byte-identical JobEnded events, which the store takes as one append repeated, so each
    // reported it recorded. The next look waits, and finds it.
    const before = this.looking.get(jobId) ?? Promise.resolve();
    const look = before.then(() => this.lookOnce(jobId, cause, log));
    const settled = look.then(
      () => undefined,
      () => undefined,
    );
    this.looking.set(jobId, settled);
    void settled.then(() => {
      if (this.looking.get(jobId) === settled) this.looking.delete(jobId);
    });
    return look;
  }

  private async lookOnce(jobId: string, cause: BusEvent | undefined, log: Logger): Promise<JobEndOutcome> {
    const streamId = jobEndStreamId(jobId);
    const existing = await this.recorded(streamId);
    if (existing) return { kind: 'already_recorded', ended: existing };

    const facts = await this.factsOf(jobId);
    const losses: EventData<'NodeLost'>[] = [];
    for (const nodeId of nodesOfAttempts(facts)) {
      for (const e of await this.store.readStream(placementNodeStreamId(nodeId))) if (e.type === 'NodeLost') losses.push(e.data as EventData<'NodeLost'>);
    }
    const decision = decideJobEnd(facts, losses);
    if (decision.kind === 'not_over') {
      log.debug({ jobId, why: decision.why }, 'job not over yet');
      return decision;
    }

    const ended: JobEndedData = { ...decision.ended, endedAt: this.clock.now().toISOString() };
    // The job's trail: JobEnded joins the correlation of its JobSubmitted.
    const submitted = facts.find((e) => e.type === 'JobSubmitted');
    try {
      const written = await this.writer.append(streamId, [{ type: 'JobEnded', data: ended, eventId: this.writer.eventIdFor(jobId, 'JobEnded') }], {
        expectedRevision: 'no_stream',
        correlationId: submitted?.metadata.correlationId ?? cause?.metadata.correlationId ?? jobId,
        causationId: cause?.eventId ?? jobId,
      });
      log.info({ jobId, outcome: ended.outcome, attempts: ended.attempts, billableMs: ended.billed.billableMs, totals: ended.billed.totals, outputs: ended.outputs?.files.length ?? null }, 'job ended');
      return { kind: 'recorded', ended, position: written.position };
    } catch (err) {
      if (!(err instanceof WrongExpectedVersionError || err instanceof IdempotencyConflictError)) throw err;
      const raced = await this.recorded(streamId);
      if (!raced) throw err;
      log.info({ jobId }, 'job end recorded meanwhile by another handler');
      return { kind: 'already_recorded', ended: raced };
    }
  }

  private async recorded(streamId: string): Promise<JobEndedData | undefined> {
    const found = (await this.store.readStream(streamId, { maxCount: 1 }))[0];
    return found?.type === 'JobEnded' ? (found.data as JobEndedData) : undefined;
  }

  /** Every recorded event naming the job (the store's job index), in store order, up to the head as it is now. */
  private async factsOf(jobId: string): Promise<RecordedEvent[]> {
    const head = await this.store.headPosition();
    const out: RecordedEvent[] = [];
    let from = 0n;
    for (;;) {
      const page = await this.store.readAll({ fromPosition: from, toPosition: head, maxCount: PAGE, filter: { jobId } });
      out.push(...page);
      if (page.length < PAGE) return out;
      from = page[page.length - 1]!.position;
    }
  }
}
