/**
 * Following the team feed over HTTP: `GET /v1/feed` as Server-Sent Events, parsed with
 * `eventsource-parser`, each entry checked against the contract, resumed after a dropped
 * connection from the last position received (`Last-Event-ID`).
 */
import { FeedEntry } from '#contracts';
import { createParser } from 'eventsource-parser';
import { GpunetApiError, GpunetProtocolError } from './errors.js';
import type { HttpTransport } from './http.js';

/** Options of {@link followFeed}. */
export interface FeedOptions {
  /** Only this job's entries; the feed then ends after its `JobEnded`. */
  jobId?: string;
  /** Start after this store position (a `FeedEntry.position` you hold). Default: from the start. */
  after?: string;
  /** Stops following (the iterator then returns). */
  signal?: AbortSignal;
  /** Called when the connection dropped and the feed reconnects, with the position it resumes after. */
  onReconnect?: (after: string, cause: unknown) => void;
  /** First delay before reconnecting, doubled up to 5 s while reconnects fail. Default 250 ms. */
  reconnectDelayMs?: number;
}

const MAX_RECONNECT_DELAY_MS = 5_000;

/**
 * The team's feed (or one job's), in store order, live: catches up from `after`, then yields new
 * entries as they are recorded. A dropped connection or a server restart is resumed after the
 * last entry yielded (never one twice, none lost). Ends when `signal` aborts, or, for a job,
 * after its `JobEnded`. Refusals (401, 403, 404, 400) are thrown as {@link GpunetApiError}.
 */
export async function* followFeed(http: HttpTransport, options: FeedOptions = {}): AsyncGenerator<FeedEntry> {
  let last = options.after ?? '0';
  let delay = options.reconnectDelayMs ?? 250;
  const { signal } = options;
  while (!signal?.aborted) {
    let ended = false;
    try {
      const response = await http.send({
        method: 'GET',
        path: '/v1/feed',
        query: { jobId: options.jobId },
        headers: { accept: 'text/event-stream', 'last-event-id': last },
        timeoutMs: 0,
        idempotent: true,
        ...(signal ? { signal } : {}),
      });
      if (!response.body) throw new GpunetProtocolError('GET /v1/feed: the answer has no body');
      for await (const entry of entries(response.body)) {
        if (BigInt(entry.position) <= BigInt(last)) continue;
        last = entry.position;
        delay = options.reconnectDelayMs ?? 250;
        yield entry;
        if (options.jobId !== undefined && entry.type === 'JobEnded') {
          ended = true;
          return;
        }
      }
      if (signal?.aborted) return;
      options.onReconnect?.(last, new Error('the server closed the feed'));
    } catch (err) {
      if (signal?.aborted || ended) return;
      if (err instanceof GpunetApiError && !err.retryable) throw err;
      if (err instanceof GpunetProtocolError) throw err;
      options.onReconnect?.(last, err);
    }
    await sleep(delay, signal);
    delay = Math.min(delay * 2, MAX_RECONNECT_DELAY_MS);
  }
}

/** The entries of one SSE response body, as they arrive. */
async function* entries(body: ReadableStream<Uint8Array>): AsyncGenerator<FeedEntry> {
  const queue: FeedEntry[] = [];
  let bad: Error | undefined;
  const parser = createParser({
    onEvent: (event) => {
      let json: unknown;
      try {
        json = JSON.parse(event.data);
      } catch {
        bad ??= new GpunetProtocolError(`feed event ${event.id ?? '?'} is not JSON`);
        return;
      }
      const parsed = FeedEntry.safeParse(json);
      if (!parsed.success) bad ??= new GpunetProtocolError(`feed event ${event.id ?? '?'} does not match the FeedEntry contract: ${parsed.error.message}`);
      else queue.push(parsed.data);
    },
  });
  const decoder = new TextDecoder();
  for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
    parser.feed(decoder.decode(chunk, { stream: true }));
    if (bad) throw bad;
    while (queue.length > 0) yield queue.shift()!;
  }
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}
