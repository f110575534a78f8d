/**
 * Progress on the terminal: byte bars with rate (cli-progress) for uploads and downloads, and
 * a spinner for waits. Drawn on stderr and only when it is a terminal; otherwise silent, and
 * the command prints a one-line summary instead.
 */
import cliProgress from 'cli-progress';
import { formatBytes } from './format.js';
import type { Printer } from './output.js';

/** A bar over bytes: `label |█████░░░░| 45% 3.1 MiB/6.9 MiB 12.4 MiB/s`. */
export interface ByteBar {
  update(done: number, total: number, label?: string): void;
  stop(): void;
}

export function byteBar(out: Printer, label: string): ByteBar {
  if (!out.interactive) return { update: () => undefined, stop: () => undefined };
  const started = Date.now();
  const bar = new cliProgress.SingleBar(
    {
      stream: out.stderr,
      format: '{label} |{bar}| {percentage}% {done}/{all} {rate}',
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
  return {
    update(done, total, next) {
      if (next) current = next;
      const seconds = Math.max(0.001, (Date.now() - started) / 1000);
      const payload = { label: current.padEnd(14).slice(0, 24), done: formatBytes(done), all: formatBytes(total), rate: `${formatBytes(Math.round(done / seconds))}/s` };
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
