/**
 * Attack: events forged straight onto the bus by a client allowed to publish there (a leaked
 * service credential, a misconfigured permission). Each attack worked before consumers tied
 * events to the store: a `JobFinished` stamped at the hold billed 0 ms, a `PriceListPublished`
 * made compute free, a `JobCancelRequested` stopped another team's running job, a `JobPlaced`
 * ran a job twice, a `ComputeReleased` freed held GPUs. Now every consumer reads the event back
 * from the store first: none of them acts, each dead-letters the forgery as `not_recorded`
 * (what an operator sees in `GPUNET_DLQ`); the nodes never see a forgery (their work is copied
 * from the store by the recorder), and the job runs, ends and is billed as recorded.
 */
import type { DeadLetter } from '#messaging';
import { encodeEvent, type BusEvent } from '#messaging';
import type { RecordedEvent } from '#event-store';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { randomUUID } from 'node:crypto';
import { recomputeUsage, usageByAttempt } from '../support/billing.js';
import { scriptJob, settle } from '../support/jobs.js';
import { TestNetwork, withLogsOnFailure, NETWORK_START_HOOK_MS } from '../support/network.js';
import { until } from '../support/poll.js';
import { OFF_CONTRACT_HEADER } from '../support/bus/bus-contract.js';

let net: TestNetwork | undefined;
const e2e = (body: () => Promise<void>) => withLogsOnFailure(() => net, body);

beforeAll(async () => {
  net = await TestNetwork.start({ agents: 1, gpus: 2 });
}, NETWORK_START_HOOK_MS);

afterAll(async () => {
  await net?.stop();
}, 60_000);

/** A copy of a recorded event as a forger would make it: a fresh id, data changed, placed next in its stream, any hash. */
function forge(base: RecordedEvent, type: string, data: unknown, revision: bigint): BusEvent {
  return { ...base, eventId: randomUUID(), type, data, revision, position: base.position + 1_000n, hash: randomUUID().replace(/-/g, '').padEnd(64, '0') };
}

async function deadLetters(): Promise<DeadLetter[]> {
  const jsm = await jetstreamManager(await net!.nats());
  const info = await jsm.streams.info('GPUNET_DLQ');
  const out: DeadLetter[] = [];
  for (let seq = info.state.first_seq; info.state.messages > 0 && seq <= info.state.last_seq; seq++) {
    const m = await jsm.streams.getMessage('GPUNET_DLQ', { seq }).catch(() => null);
    if (m) out.push(m.json<DeadLetter>());
  }
  return out;
}

describe('attack: forged events on the bus', () => {
  it(
    'no service acts on an event the store does not hold; each forgery is dead-lettered as not_recorded',
    e2e(async () => {
      const client = net!.client();
      const { jobId } = await client.submit(scriptJob('sleep 6; echo done', { timeLimit: '2m' }));
      const started = await until('the job to start', async () => (await net!.events({ jobId, types: ['JobStarted'] }))[0], { timeoutMs: 60_000, intervalMs: 100 });
      const [held] = await net!.events({ jobId, types: ['ComputeHeld'] });
      const [placed] = await net!.events({ jobId, types: ['JobPlaced'] });
      const [submitted] = await net!.events({ jobId, types: ['JobSubmitted'] });
      const [prices] = await net!.events({ types: ['PriceListPublished'] });
      expect(held && placed && submitted && prices).toBeTruthy();
      const heldData = held!.data as { attemptId: string; nodeId: string; gpuIndices: number[]; heldAt: string };
      const priceData = prices!.data as { version: number; ratesMicrosPerGpuHour: Record<string, number>; defaultRateMicrosPerGpuHour?: number };
      const free = Object.fromEntries(Object.keys(priceData.ratesMicrosPerGpuHour).map((model) => [model, 0]));

      const forgeries: BusEvent[] = [
        forge(held!, 'JobFinished', { jobId, attemptId: heldData.attemptId, nodeId: heldData.nodeId, outcome: 'completed', exitCode: 0, signal: null, finishedAt: heldData.heldAt }, started.revision + 1n),
        forge(prices!, 'PriceListPublished', { ...priceData, version: priceData.version + 1, effectiveFrom: new Date(0).toISOString(), ratesMicrosPerGpuHour: free, defaultRateMicrosPerGpuHour: 0 }, prices!.revision + 1n),
        forge(submitted!, 'JobCancelRequested', { jobId, team: net!.team, reason: 'forged', requestedAt: new Date().toISOString() }, submitted!.revision + 1n),
        forge(placed!, 'JobPlaced', { ...(placed!.data as object), attemptId: `${heldData.attemptId}x`, attempt: 2 }, placed!.revision + 1n),
        forge(held!, 'ComputeReleased', { jobId, attemptId: heldData.attemptId, nodeId: heldData.nodeId, gpuIndices: heldData.gpuIndices, releasedAt: heldData.heldAt }, started.revision + 1n),
      ];
      const js = jetstream(await net!.nats());
      for (const f of forgeries) {
        const m = encodeEvent(f);
        m.headers.set(OFF_CONTRACT_HEADER, 'a forged event: not recorded in the store'); // the bus check counts it apart
        await js.publish(m.subject, m.payload, { headers: m.headers, msgID: m.msgID });
      }

      // Every forgery is refused by each consumer that would have acted on it, while the job still runs.
      const forgedIds = new Set(forgeries.map((f) => f.eventId));
      const mustRefuse = [
        ['ledger', 'JobFinished'],
        ['ledger', 'PriceListPublished'],
        ['placement', 'JobCancelRequested'],
        ['placement', 'JobPlaced'],
        ['placement', 'ComputeReleased'],
      ];
      let seen: string[] = [];
      const letters = await until(
        'each consumer to dead-letter the forgery it would have acted on',
        async () => {
          const mine = (await deadLetters()).filter((l) => l.eventId && forgedIds.has(l.eventId));
          seen = mine.map((l) => `${l.consumer}/${l.type}`);
          return mustRefuse.every(([consumer, type]) => seen.includes(`${consumer}/${type}`)) && mine;
        },
        { timeoutMs: 30_000, intervalMs: 200, describe: () => `dead letters so far: ${seen.join(', ')}` },
      );
      expect(new Set(letters.map((l) => l.error.code))).toEqual(new Set(['not_recorded']));
      expect(new Set(letters.map((l) => l.eventId))).toEqual(forgedIds);

      // The job ran to its own end, once, and is billed from what the agent recorded.
      const { views, events } = await settle(net!, [jobId]);
      expect(views.get(jobId)!.state).toBe('completed');
      expect(events.filter((e) => e.type === 'ComputeHeld')).toHaveLength(1);
      const finished = events.filter((e) => e.type === 'JobFinished');
      expect(finished).toHaveLength(1);
      const usage = usageByAttempt(events).get(heldData.attemptId) ?? [];
      expect(usage).toHaveLength(1);
      expect(usage[0]!.billableMs).toBeGreaterThanOrEqual(6_000);
      const want = recomputeUsage(await net!.events({ types: ['PriceListPublished', 'ComputeHeld', 'JobFinished', 'UsageRecorded'] })).get(heldData.attemptId)!;
      expect(usage[0]!.amountMicros).toBe(want.amountMicros);
      expect(usage[0]!.amountMicros).toBeGreaterThan(0);
      // The agent's work comes from the recorder, which copies only what the store holds: no forgery reached the node.
      const jsm = await jetstreamManager(await net!.nats());
      const work = await jsm.streams.info('GPUNET_WORK');
      for (let seq = work.state.first_seq; work.state.messages > 0 && seq <= work.state.last_seq; seq++) {
        const m = await jsm.streams.getMessage('GPUNET_WORK', { seq }).catch(() => null);
        if (m) expect(forgedIds.has((m.json<{ eventId: string }>()).eventId)).toBe(false);
      }
      // The store holds none of the forgeries.
      const stored = new Set((await net!.events()).map((e) => e.eventId));
      for (const id of forgedIds) expect(stored.has(id)).toBe(false);
    }),
    120_000,
  );
});
