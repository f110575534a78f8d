import { jobLogSubjects, LOGS_STREAM, LogLine, nodeOfLogSubject } from '#contracts';
import { TransientError } from '#errors';
import { LOGGER, NATS_CONNECTION } from '#service-kit';
import { jetstream, jetstreamManager, type ConsumerMessages, type JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { Inject, Injectable } from '@nestjs/common';
import type { Logger } from 'pino';

export interface ReadLogsOptions {
  /**
   * Keep reading new lines until this resolves (e.g. when the job reaches a final state), then
   * stop after the lines published by then. Default: stop after the lines there are now.
   */
  until?: Promise<unknown>;
  /** Stops the read early (the client went away). */
  signal?: AbortSignal;
  /**
   * Whether attempt `attemptId` of the job was placed on `nodeId`: a line is kept only when its
   * subject's node ran its attempt (a node may publish on `gpunet.logs.*.*.<its id>` for any job,
   * so this is what keeps it out of jobs it does not run). Default: every line is kept.
   */
  placedOn?: (nodeId: string, attemptId: string) => boolean | Promise<boolean>;
}

/**
 * Reads a job's log lines from JetStream (`GPUNET_LOGS`, subjects `gpunet.logs.<team>.<jobId>.<nodeId>`)
 * with an ordered consumer: an ephemeral, flow-controlled replay in stream order that the server
 * drops on its own when the reader goes away. Lines that are not a valid LogLine are skipped;
 * lines from a node the line's attempt was not placed on are dropped and logged at warn.
 */
@Injectable()
export class JobLogs {
  private jsm: Promise<JetStreamManager> | undefined;

  constructor(
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  /** The log lines of `team`'s job `jobId` (the caller has checked the job is the principal's to read). */
  async *read(team: string, jobId: string, options: ReadLogsOptions = {}): AsyncGenerator<LogLine> {
    const subject = jobLogSubjects(team, jobId);
    const refused = new Map<string, number>();
    const { signal } = options;
    let target: number | undefined;
    let messages: ConsumerMessages | undefined;
    let yielded = 0;
    const stop = () => messages?.stop();

    // The stream sequence of the last line now: the read ends there once it is known.
    const settle = async () => {
      target = await this.lastSequence(subject);
      if (yielded >= target) stop();
    };
    if (options.until === undefined) {
      await settle();
      if (target === 0) return;
    }

    try {
      const consumer = await jetstream(this.nc).consumers.get(LOGS_STREAM, { filter_subjects: subject });
      messages = await consumer.consume();
    } catch (err) {
      throw new TransientError(`cannot read the logs of ${jobId} from ${LOGS_STREAM}: ${(err as Error).message}`, { cause: err });
    }
    signal?.addEventListener('abort', stop, { once: true });
    options.until?.then(settle).catch((err: unknown) => {
      this.logger.warn({ err, jobId }, 'cannot find the end of a followed log; stopping');
      stop();
    });
    if (target !== undefined && yielded >= target) stop();
    try {
      for await (const m of messages) {
        yielded = m.seq;
        const parsed = LogLine.safeParse(safeJson(m.data));
        const nodeId = nodeOfLogSubject(m.subject) ?? '?';
        if (!parsed.success) this.logger.debug({ jobId, seq: m.seq }, 'skipping a log message that is not a LogLine');
        else if (options.placedOn && !(await options.placedOn(nodeId, parsed.data.attemptId))) {
          // Once per node and read: a node writing into a job it does not run, for the operator to see.
          if (!refused.has(nodeId)) this.logger.warn({ jobId, nodeId, attemptId: parsed.data.attemptId.slice(0, 100), seq: m.seq }, 'log line from a node the attempt was not placed on: dropped');
          refused.set(nodeId, (refused.get(nodeId) ?? 0) + 1);
        } else yield parsed.data;
        if (signal?.aborted || (target !== undefined && m.seq >= target)) break;
      }
    } finally {
      signal?.removeEventListener('abort', stop);
      await messages.close().catch(() => undefined);
    }
  }

  private async lastSequence(subject: string): Promise<number> {
    this.jsm ??= jetstreamManager(this.nc);
    try {
      const last = await (await this.jsm).streams.getMessage(LOGS_STREAM, { last_by_subj: subject });
      return last?.seq ?? 0;
    } catch (err) {
      this.jsm = undefined;
      throw new TransientError(`cannot read ${LOGS_STREAM}: ${(err as Error).message}`, { cause: err });
    }
  }
}

function safeJson(bytes: Uint8Array): unknown {
  try {
    return JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    return undefined;
  }
}
