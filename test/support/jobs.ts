/** Jobs for end-to-end tests: small specs and waiting for jobs to be over, billed and released. */
import type { JobView } from '#contracts';
import type { RecordedEvent } from '#event-store';
import { isFinalState, type JobFileSpec } from '#sdk';
import type { TestNetwork } from './network.js';
import { until } from './poll.js';

/** Options of {@link scriptJob}. */
export interface ScriptJobOptions {
  gpus?: number;
  /** Default `1m`. */
  timeLimit?: string;
  env?: Record<string, string>;
  name?: string;
  globs?: string[];
}

/** A job that runs `script` (sh) inline. */
export function scriptJob(script: string, options: ScriptJobOptions = {}): JobFileSpec {
  return {
    ...(options.name ? { name: options.name } : {}),
    work: { kind: 'script', script: { inline: script }, ...(options.env ? { env: options.env } : {}) },
    request: { gpus: options.gpus ?? 1, timeLimit: options.timeLimit ?? '1m' },
    ...(options.globs ? { outputs: { globs: options.globs } } : {}),
  } as JobFileSpec;
}

/** The events of some jobs, read from the store (metadata.jobId), in store order. */
export async function jobEvents(net: TestNetwork, jobIds: readonly string[], types?: readonly string[]): Promise<RecordedEvent[]> {
  const wanted = new Set(jobIds);
  const all = await net.events(types ? { types } : {});
  return all.filter((e) => wanted.has(e.metadata.jobId ?? (e.data as { jobId?: string })?.jobId ?? ''));
}

/** What {@link settle} saw once every job was over. */
export interface Settled {
  views: Map<string, JobView>;
  events: RecordedEvent[];
}

/**
 * Waits until every job is in a final state (intake's view), every attempt that held compute is
 * released, and every attempt that finished after holding compute has its usage line.
 */
export async function settle(net: TestNetwork, jobIds: readonly string[], options: { timeoutMs?: number } = {}): Promise<Settled> {
  const client = net.client();
  const views = new Map<string, JobView>();
  let missing: string[] = [];
  await until(
    `${jobIds.length} job(s) to end`,
    async () => {
      const open = jobIds.filter((id) => !views.has(id));
      const fresh = await Promise.all(open.map((id) => client.getJob(id)));
      for (const v of fresh) if (isFinalState(v.state)) views.set(v.jobId, v);
      missing = jobIds.filter((id) => !views.has(id));
      return missing.length === 0;
    },
    { timeoutMs: options.timeoutMs ?? 60_000, intervalMs: 200, describe: () => `still open: ${missing.join(', ')}` },
  );
  let events: RecordedEvent[] = [];
  let unsettled: string[] = [];
  await until(
    'every held attempt to be released and billed',
    async () => {
      events = await jobEvents(net, jobIds);
      const ofType = (type: string) => new Set(events.filter((e) => e.type === type).map((e) => (e.data as { attemptId: string }).attemptId));
      const held = ofType('ComputeHeld');
      const finished = ofType('JobFinished');
      const released = ofType('ComputeReleased');
      const billed = ofType('UsageRecorded');
      unsettled = [...held].filter((a) => !released.has(a) || (finished.has(a) && !billed.has(a)));
      return unsettled.length === 0;
    },
    { timeoutMs: options.timeoutMs ?? 60_000, intervalMs: 200, describe: () => `not yet released or billed: ${unsettled.join(', ')}` },
  );
  return { views, events };
}
