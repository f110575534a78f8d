import { Writable } from 'node:stream';
import { pino } from 'pino';

/** A pino logger at debug level whose lines (parsed) the test reads. */
export function capturedLogger(): { logger: pino.Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const l of chunk.toString().split('\n')) if (l.trim()) lines.push(JSON.parse(l) as Record<string, unknown>);
      done();
    },
  });
  return { logger: pino({ level: 'debug' }, sink), lines };
}
