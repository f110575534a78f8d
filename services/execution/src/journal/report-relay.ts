import { NodeReportReply, reportSigningBytes, reportSubject, type NodeReport } from '#contracts';
import { isRetryable } from '#errors';
import type { EventStore, RecordedEvent, Subscription } from '#event-store';
import { signBytes, type Identity } from '#identity';
import { requestQuery } from '#messaging';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import { agentStreamPrefix } from '../domain/index.js';

/** Options of {@link ReportRelay}. */
export interface ReportRelayOptions {
  readonly nodeId: string;
  /** The journal's id (see prepareJournal). */
  readonly journal: string;
  readonly identity: Identity;
  /** One report's timeout. Default 5000 ms. */
  readonly requestTimeoutMs?: number;
  /** First wait after a failed delivery, doubling up to `retryMaxMs`. Default 200 ms. */
  readonly retryBaseMs?: number;
  /** Default 5000 ms. */
  readonly retryMaxMs?: number;
  /** How often the journal is looked at for new events when no notification came. Default: the store's. */
  readonly pollIntervalMs?: number;
}

/** Subscriber id of the relay's checkpoint in the journal: the position of the last acknowledged report. */
export const REPORT_RELAY_CHECKPOINT = 'report-relay';

/**
 * Sends every event of this node's streams in the journal (`execution-<nodeId>-…`) to the
 * recorder, one at a time in journal order, each signed with the node key, and moves its
 * checkpoint past an event only once the recorder answered for it: `accepted` (recorded now),
 * `duplicate` (recorded before) or `refused` (never will be; the recorder recorded the refusal).
 * Anything else — no recorder, the bus gone, a timeout, a retryable error — is retried with
 * backoff, the same report again, so nothing is lost while the bus is away and nothing is
 * recorded twice when it is back (the recorder's append is idempotent by event id).
 */
export class ReportRelay {
  private subscription: Subscription | undefined;
  private running: Promise<void> | undefined;
  private readonly stopper = new AbortController();
  private delivered: bigint | undefined;
  /** Reports answered, by status. */
  readonly stats = { accepted: 0, duplicate: 0, refused: 0, retries: 0 };

  constructor(
    private readonly store: EventStore,
    private readonly nc: NatsConnection,
    private readonly options: ReportRelayOptions,
    private readonly log: Logger,
  ) {}

  /** Journal position of the last event the recorder answered for (0 before the first, this run). */
  get position(): bigint {
    return this.delivered ?? this.startedFrom;
  }
  private startedFrom = 0n;

  async start(): Promise<void> {
    const from = (await this.store.loadCheckpoint(REPORT_RELAY_CHECKPOINT)) ?? 0n;
    this.startedFrom = from;
    this.subscription = this.store.subscribeToAll({
      fromPosition: from,
      filter: { streamPrefix: agentStreamPrefix(this.options.nodeId) },
      ...(this.options.pollIntervalMs !== undefined && { pollIntervalMs: this.options.pollIntervalMs }),
    });
    this.running = this.run(this.subscription);
    this.log.info({ from: String(from), journal: this.options.journal }, 'report relay started');
  }

  /**
   * Stops: first gives the relay up to `flushTimeoutMs` (default 5 s) to deliver what the journal
   * holds (an agent that stops reports its last facts now, not at its next start), then stops
   * after the report in hand; undelivered reports stay in the journal for the next start.
   */
  async stop(flushTimeoutMs = 5_000): Promise<void> {
    const deadline = Date.now() + flushTimeoutMs;
    while (Date.now() < deadline && !this.stopper.signal.aborted && (await this.backlog()) > 0) await new Promise((r) => setTimeout(r, 50));
    this.stopper.abort();
    await this.subscription?.close();
    await this.running;
  }

  /** Events of this node's streams in the journal after the last acknowledged one (0 or 1: it only looks). */
  private async backlog(): Promise<number> {
    const from = this.delivered ?? (await this.store.loadCheckpoint(REPORT_RELAY_CHECKPOINT)) ?? 0n;
    return (await this.store.readAll({ fromPosition: from, maxCount: 1, filter: { streamPrefix: agentStreamPrefix(this.options.nodeId) } })).length;
  }

  private async run(subscription: Subscription): Promise<void> {
    try {
      for await (const event of subscription) {
        if (this.stopper.signal.aborted) return;
        const answered = await this.deliver(event);
        if (!answered) return;
        await this.store.saveCheckpoint(REPORT_RELAY_CHECKPOINT, event.position);
        this.delivered = event.position;
      }
    } catch (err) {
      if (!this.stopper.signal.aborted) this.log.error({ err }, 'report relay stopped; the next start resumes from its checkpoint');
    }
  }

  /** The signed report of one journal event. */
  report(event: RecordedEvent): NodeReport {
    const body: Omit<NodeReport, 'signature'> = {
      nodeId: this.options.nodeId,
      journal: this.options.journal,
      seq: event.position.toString(),
      event: { streamId: event.streamId, eventId: event.eventId, type: event.type, data: event.data, metadata: { ...event.metadata } },
    };
    return { ...body, signature: signBytes(this.options.identity, reportSigningBytes(body)) };
  }

  /** Sends until the recorder answers; false when stopped first. */
  private async deliver(event: RecordedEvent): Promise<boolean> {
    const report = this.report(event);
    const subject = reportSubject(this.options.nodeId);
    let delay = this.options.retryBaseMs ?? 200;
    for (let attempt = 1; ; attempt++) {
      if (this.stopper.signal.aborted) return false;
      try {
        const reply = await requestQuery<NodeReportReply>(this.nc, subject, report, { response: NodeReportReply }, {
          timeoutMs: this.options.requestTimeoutMs ?? 5_000,
          correlationId: event.metadata.correlationId,
          ...(event.metadata.jobId ? { jobId: event.metadata.jobId } : {}),
        });
        this.stats[reply.status] += 1;
        const fields = { eventId: event.eventId, type: event.type, streamId: event.streamId, seq: report.seq, jobId: event.metadata.jobId };
        if (reply.status === 'refused') this.log.error({ ...fields, reason: reply.reason, detail: reply.detail }, 'the recorder refused a report');
        else this.log.debug({ ...fields, status: reply.status }, 'report recorded');
        return true;
      } catch (err) {
        if (!isRetryable(err) && !isTransport(err)) {
          // A reply that is an error the recorder says will not change: still not recorded; keep trying slowly,
          // an operator sees it in this log (a relay that skipped it would lose a fact).
          this.log.error({ err, eventId: event.eventId, attempt }, 'report not taken; retrying');
        } else if (attempt === 1 || attempt % 20 === 0) {
          this.log.warn({ err: (err as Error).message, eventId: event.eventId, attempt }, 'recorder not reachable; the report waits in the journal');
        }
        this.stats.retries += 1;
        await sleepUnlessAborted(delay, this.stopper.signal);
        delay = Math.min(delay * 2, this.options.retryMaxMs ?? 5_000);
      }
    }
  }
}

function isTransport(err: unknown): boolean {
  const name = (err as { name?: string })?.name ?? '';
  return /Timeout|NoResponders|Connection|Closed|Request/i.test(name) || /timeout|no responders|closed|disconnect/i.test((err as Error)?.message ?? '');
}

function sleepUnlessAborted(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}
