/** Where a log line came from: the job's two streams, or the agent itself (markers, notices). */
export type LogStream = 'stdout' | 'stderr' | 'system';

/** Called for every captured line, live, in the order the lines are written to the log file. */
export type LogListener = (line: string, stream: LogStream) => void;

/** Start of the line written once when the cap is reached; readers can search for it. */
export const TRUNCATION_MARKER = '[gpunet] log truncated';

const LF = 0x0a;
const CR = 0x0d;

/**
 * Splits a byte stream into lines. A line ends at `\n`, `\r\n` or a lone `\r` (progress bars
 * redraw with `\r`; treating it as a break lets followers see progress live). Lines longer than
 * `maxLineBytes` are cut into pieces so one runaway line cannot hold memory. Lines are returned
 * without their terminator, as bytes: decoding happens once per line, never mid-character across
 * chunk boundaries.
 */
export class LineSplitter {
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  /** The previous chunk ended with `\r`: a `\n` starting the next one belongs to that break. */
  private afterCR = false;

  constructor(private readonly maxLineBytes: number) {
    if (!Number.isInteger(maxLineBytes) || maxLineBytes < 1) throw new RangeError('maxLineBytes must be a positive integer');
  }

  /** Feeds a chunk; returns the lines it completed. */
  push(chunk: Buffer): Buffer[] {
    const lines: Buffer[] = [];
    let start = 0;
    let i = 0;
    if (this.afterCR && chunk.length > 0 && chunk[0] === LF) start = i = 1;
    this.afterCR = false;
    for (; i < chunk.length; i++) {
      const b = chunk[i];
      if (b !== LF && b !== CR) continue;
      this.append(chunk.subarray(start, i), lines);
      lines.push(this.take());
      if (b === CR) {
        if (i + 1 < chunk.length) {
          if (chunk[i + 1] === LF) i++;
        } else {
          this.afterCR = true;
        }
      }
      start = i + 1;
    }
    this.append(chunk.subarray(start), lines);
    return lines;
  }

  /** Returns the unterminated rest, if any (call at end of stream). */
  flush(): Buffer[] {
    this.afterCR = false;
    return this.pendingBytes > 0 ? [this.take()] : [];
  }

  /** Adds bytes to the pending line, emitting `maxLineBytes` pieces while it is longer than that. */
  private append(bytes: Buffer, out: Buffer[]): void {
    let rest = bytes;
    while (this.pendingBytes + rest.length > this.maxLineBytes) {
      const room = this.maxLineBytes - this.pendingBytes;
      if (room > 0) {
        this.pending.push(rest.subarray(0, room));
        this.pendingBytes += room;
        rest = rest.subarray(room);
      }
      out.push(this.take());
    }
    if (rest.length > 0) {
      this.pending.push(rest);
      this.pendingBytes += rest.length;
    }
  }

  private take(): Buffer {
    const line = this.pending.length === 1 ? this.pending[0] : Buffer.concat(this.pending, this.pendingBytes);
    this.pending = [];
    this.pendingBytes = 0;
    return line;
  }
}

/** Options of {@link LogCapture}. */
export interface LogCaptureOptions {
  /** Bytes of job output (lines plus their `\n`) kept before truncating. */
  readonly maxBytes: number;
  /** Longest line before it is cut. */
  readonly maxLineBytes: number;
  /** Receives the bytes for the log file; returns `false` to ask the producer to pause (backpressure). */
  readonly write: (data: Buffer) => boolean;
  readonly onLog?: LogListener;
}

/**
 * Turns a job's stdout and stderr into one line-wise log with a size cap. Once the cap is reached
 * a visible marker line is written and further output is counted but discarded. Agent notices
 * (`system` lines) are always written: they are few and say what the agent did to the run.
 */
export class LogCapture {
  /** Raw bytes the job wrote to stdout and stderr. */
  outputBytes = 0;
  /** Bytes written to the log file, markers and notices included. */
  logBytes = 0;
  /** Whether output was discarded because of the cap. */
  truncated = false;

  private keptBytes = 0;
  private listener: LogListener | undefined;
  private readonly splitters: Record<'stdout' | 'stderr', LineSplitter>;

  constructor(private readonly opts: LogCaptureOptions) {
    this.listener = opts.onLog;
    this.splitters = { stdout: new LineSplitter(opts.maxLineBytes), stderr: new LineSplitter(opts.maxLineBytes) };
  }

  /** Feeds output of the job. Returns `false` when the sink asked to pause. */
  push(stream: 'stdout' | 'stderr', chunk: Buffer): boolean {
    this.outputBytes += chunk.length;
    if (this.truncated) return true; // keep draining the pipe so the job never blocks on a full one
    return this.lines(stream, this.splitters[stream].push(chunk));
  }

  /** The stream ended: its unterminated last line is kept. */
  end(stream: 'stdout' | 'stderr'): boolean {
    return this.truncated ? true : this.lines(stream, this.splitters[stream].flush());
  }

  /** Writes an agent notice, never subject to the cap. */
  system(text: string): boolean {
    return this.emit(Buffer.from(text, 'utf8'), 'system');
  }

  /** Writes the closing summary when output was discarded. */
  finish(): boolean {
    if (!this.truncated) return true;
    return this.system(
      `[gpunet] ${this.outputBytes - this.keptBytes} of ${this.outputBytes} bytes of job output were discarded (log cap ${this.opts.maxBytes} bytes)`,
    );
  }

  private lines(stream: 'stdout' | 'stderr', lines: Buffer[]): boolean {
    let ok = true;
    for (const line of lines) {
      if (this.keptBytes + line.length + 1 > this.opts.maxBytes) {
        this.truncated = true;
        return this.system(`${TRUNCATION_MARKER}: it reached its cap of ${this.opts.maxBytes} bytes; further output is discarded`) && ok;
      }
      this.keptBytes += line.length + 1;
      ok = this.emit(line, stream) && ok;
    }
    return ok;
  }

  private emit(line: Buffer, stream: LogStream): boolean {
    const data = Buffer.allocUnsafe(line.length + 1);
    line.copy(data);
    data[line.length] = LF;
    this.logBytes += data.length;
    const ok = this.opts.write(data);
    if (this.listener) {
      try {
        this.listener(line.toString('utf8'), stream);
      } catch (err) {
        // A broken listener must not break the run: stop calling it and say so in the log.
        this.listener = undefined;
        this.system(`[gpunet] log listener failed and was detached: ${(err as Error)?.message ?? String(err)}`);
      }
    }
    return ok;
  }
}
