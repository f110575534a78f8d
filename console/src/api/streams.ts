/**
 * The two streams of the API, read with fetch (an EventSource cannot send the API key):
 * the team feed (`GET /v1/feed`, SSE) and a job's logs (`GET /v1/jobs/{id}/logs?follow=1`, NDJSON).
 */
import { createParser } from 'eventsource-parser';
import { authedFetch, type Schemas } from './client';

export type FeedEntry = Schemas['FeedEntry'];
export type LogLine = Schemas['LogLine'];

/** Reads the feed until `signal` aborts (or the server ends it: a job's feed ends after its JobEnded). */
export async function followFeed(key: string, query: { after?: string; jobId?: string }, onEntry: (e: FeedEntry) => void, signal: AbortSignal): Promise<void> {
  const params = new URLSearchParams(Object.entries(query).filter(([, v]) => v !== undefined) as [string, string][]);
  const res = await authedFetch(key, `/v1/feed?${params}`, { signal, headers: { Accept: 'text/event-stream' } });
  const parser = createParser({ onEvent: (ev) => onEntry(JSON.parse(ev.data) as FeedEntry) });
  await readText(res, (text) => parser.feed(text));
}

/** Reads a job's log lines, following while it runs when `follow`. */
export async function readLogs(key: string, jobId: string, follow: boolean, onLine: (l: LogLine) => void, signal: AbortSignal): Promise<void> {
  const res = await authedFetch(key, `/v1/jobs/${encodeURIComponent(jobId)}/logs${follow ? '?follow=1' : ''}`, { signal, headers: { Accept: 'application/x-ndjson' } });
  let rest = '';
  await readText(res, (text) => {
    rest += text;
    const lines = rest.split('\n');
    rest = lines.pop() ?? '';
    for (const l of lines) if (l.trim() !== '') onLine(JSON.parse(l) as LogLine);
  });
}

async function readText(res: Response, onText: (text: string) => void): Promise<void> {
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    onText(value);
  }
}
