/**
 * Progress on the terminal: byte bars with rate (cli-progress) for uploads and downloads, and
 * a spinner for waits. Drawn on stderr and only when it is a terminal; otherwise silent, and
 * the command prints a one-line summary instead.
 */
import cliProgress from 'cli-progress';
import { formatBytes, formatDuration } from './format.js';
import type { Printer } from './output.js';

/** A bar over bytes: `label |█████░░░░| 45% 3.1 MiB/6.9 MiB 12.4 MiB/s ETA 5m12s`. */
export interface ByteBar {
  update(done: number, total: number, label?: string): void;
  stop(): void;
}

/**
 * Rate and time left of a transfer, from the bytes moved since this phase's first report (so a
 * resumed upload that starts at 45% is not credited with bytes an earlier run sent). Pure.
 */
export function transferRate(first: { at: number; done: number }, now: { at: number; done: number; total: number }): { bytesPerSecond: number; etaMs: number | undefined } {
  const seconds = (now.at - first.at) / 1000;
  const moved = now.done - first.done;
  if (seconds <= 0 || moved <= 0) return { bytesPerSecond: 0, etaMs: now.done >= now.total ? 0 : undefined };
  const bytesPerSecond = moved / seconds;
  return { bytesPerSecond, etaMs: Math.round((Math.max(0, now.total - now.done) / bytesPerSecond) * 1000) };
}

/** `ETA 5m12s`, `ETA 0s`, or `ETA –` while there is no rate yet. */
export function etaText(etaMs: number | undefined): string {
  if (etaMs === undefined) return 'ETA –';
  return `ETA ${formatDuration(Math.round(etaMs / 1000) * 1000)}`;
}

export function byteBar(out: Printer, label: string, clock: () => number = Date.now): ByteBar {
  if (!out.interactive) return { update: () => undefined, stop: () => undefined };
  const bar = new cliProgress.SingleBar(
    {
      stream: out.stderr,
      format: '{label} |{bar}| {percentage}% {done}/{all} {rate} {eta}',
      barCompleteChar: '█',
      barIncompleteChar: '░',
      barsize: 28,
      hideCursor: true,
      clearOnComplete: false,
      fps: 10,
    },
    cliProgress.Presets.shades_classic,
  );
  let running = false;
  let current = label;
  let first: { at: number; done: number } | undefined;
  return {
    update(done, total, next) {
      if (next && next !== current) first = undefined; // a new phase: its own rate
      if (next) current = next;
      const at = clock();
      first ??= { at, done };
      const { bytesPerSecond, etaMs } = transferRate(first, { at, done, total });
      const payload = { label: current.padEnd(14).slice(0, 24), done: formatBytes(done), all: formatBytes(total), rate: `${formatBytes(Math.round(bytesPerSecond))}/s`, eta: etaText(etaMs) };
      if (!running) {
        bar.start(Math.max(total, 1), done, payload);
        running = true;
      } else {
        bar.setTotal(Math.max(total, 1));
        bar.update(done, payload);
      }
    },
    stop() {
      if (running) bar.stop();
      running = false;
      first = undefined;
    },
  };
}

/** A one-line spinner: `⠹ waiting for intake, ledger (3/7 healthy)`. */
export interface Spinner {
  text(text: string): void;
  /** A line above the spinner (the spinner moves down), e.g. each event of a job as it happens. */
  log(line: string): void;
  stop(final?: string): void;
}

const FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

export function spinner(out: Printer, initial: string): Spinner {
  let text = initial;
  if (!out.interactive) {
    return { text: (t) => void (text = t), log: (line) => out.note(line), stop: (final) => (final ? out.note(final) : undefined) };
  }
  let frame = 0;
  const draw = () => out.stderr.write(`\r\x1b[2K${FRAMES[frame++ % FRAMES.length]} ${text}`);
  draw();
  const timer = setInterval(draw, 100);
  timer.unref();
  return {
    text: (t) => void (text = t),
    log(line) {
      out.stderr.write(`\r\x1b[2K${line}\n`);
      draw();
    },
    stop(final) {
      clearInterval(timer);
      out.stderr.write('\r\x1b[2K');
      if (final) out.note(final);
    },
  };
}
