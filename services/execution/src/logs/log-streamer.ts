import { logSubject, type LogLine } from '#contracts';
import type { JetStreamClient } from '@nats-io/jetstream';
import { createWriteStream, type WriteStream } from 'node:fs';
import { once } from 'node:events';
import { join } from 'node:path';
import type { LogStream } from '../run/index.js';

/** Options of {@link LogStreamer}. */
export interface LogStreamerOptions {
  /** Publishes awaiting their PubAck at once. Default 256. */
  readonly maxInFlight?: number;
  /** Lines waiting to be published before further lines are dropped from the live stream (never from the files). Default 20 000. */
  readonly maxQueued?: number;
  /** Agent clock, ISO. */
  readonly now: () => string;
}

/** What a streamer did. */
export interface LogStreamStats {
  published: number;
  /** Lines left out of the live stream because the queue was full. */
  dropped: number;
  /** Publishes JetStream refused or did not acknowledge. */
  failed: number;
}

/** The run's captured stdout and stderr as files, uploaded with the outputs. */
export interface LogFiles {
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Streams a run's log lines live to JetStream `gpunet.logs.<team>.<jobId>.<nodeId>` (stream GPUNET_LOGS) as
 * {@link LogLine} JSON, and writes them to `stdout.log` / `stderr.log` in the run's `logs/`
 * (agent notices go to `stderr.log`, as a terminal would show them).
 *
 * Publishing is pipelined: up to `maxInFlight` publishes await their PubAck at once, sent in
 * line order on one connection, so a chatty job is never slowed by the bus. Beyond `maxQueued`
 * waiting lines the live stream drops lines and says how many at the end; the files keep
 * everything the run engine kept (its log cap applies before this).
 */
export class LogStreamer {
  readonly stats: LogStreamStats = { published: 0, dropped: 0, failed: 0 };
  readonly files: LogFiles;
  private readonly subject: string;
  private readonly queue: string[] = [];
  private inFlight = 0;
  private idle: (() => void)[] = [];
  private readonly out: Record<'stdout' | 'stderr', WriteStream>;
  private readonly maxInFlight: number;
  private readonly maxQueued: number;

  constructor(
    private readonly js: JetStreamClient,
    team: string,
    jobId: string,
    nodeId: string,
    private readonly attemptId: string,
    logsDir: string,
    private readonly options: LogStreamerOptions,
  ) {
    this.subject = logSubject(team, jobId, nodeId);
    this.maxInFlight = options.maxInFlight ?? 256;
    this.maxQueued = options.maxQueued ?? 20_000;
    this.files = { stdout: join(logsDir, 'stdout.log'), stderr: join(logsDir, 'stderr.log') };
    this.out = {
      stdout: createWriteStream(this.files.stdout, { flags: 'a', mode: 0o600 }),
      stderr: createWriteStream(this.files.stderr, { flags: 'a', mode: 0o600 }),
    };
    // A failing log file must not break the run; the run engine's own log file reports disk trouble.
    for (const s of Object.values(this.out)) s.on('error', () => undefined);
  }

  /** Takes one line (a run engine `onLog` listener). Never throws, never blocks. */
  readonly push = (line: string, stream: LogStream): void => {
    this.out[stream === 'stdout' ? 'stdout' : 'stderr'].write(`${line}\n`);
    this.enqueue(line, stream === 'system' ? 'agent' : stream);
  };

  /** An agent notice, e.g. what happened to the outputs. */
  notice(line: string): void {
    this.push(line, 'system');
  }

  /** Waits for every queued line to be acknowledged, then closes the files. */
  async close(): Promise<LogStreamStats> {
    if (this.stats.dropped > 0) {
      const dropped = this.stats.dropped;
      this.enqueue(`[gpunet] ${dropped} log line(s) were not streamed live (the job wrote faster than the bus took them); they are in the stored logs`, 'agent', true);
    }
    if (this.inFlight > 0 || this.queue.length > 0) await new Promise<void>((res) => this.idle.push(res));
    await Promise.all(
      Object.values(this.out).map(async (s) => {
        if (s.closed) return;
        const closed = once(s, 'close').catch(() => undefined);
        s.end();
        await closed;
      }),
    );
    return this.stats;
  }

  private enqueue(line: string, stream: LogLine['stream'], force = false): void {
    if (!force && this.queue.length >= this.maxQueued) {
      this.stats.dropped += 1;
      return;
    }
    const body: LogLine = { ts: this.options.now(), stream, line, attemptId: this.attemptId };
    this.queue.push(JSON.stringify(body));
    this.pump();
  }

  private pump(): void {
    while (this.inFlight < this.maxInFlight && this.queue.length > 0) {
      const payload = this.queue.shift()!;
      this.inFlight += 1;
      this.js.publish(this.subject, payload).then(
        () => {
          this.stats.published += 1;
          this.settle();
        },
        () => {
          this.stats.failed += 1;
          this.settle();
        },
      );
    }
  }

  private settle(): void {
    this.inFlight -= 1;
    this.pump();
    if (this.inFlight === 0 && this.queue.length === 0) for (const fn of this.idle.splice(0)) fn();
  }
}
