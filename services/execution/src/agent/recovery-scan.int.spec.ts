import { openEventStore, type EventStore } from '#event-store';
import { EventWriter, systemClock } from '#service-kit';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { attemptStreamId } from '../domain/index.js';
import { checkpointAfter, recoveryCheckpointId, scanForRecovery } from './recovery-scan.js';

const at = '2026-01-01T00:00:00.000Z';
let dir: string;
let store: EventStore;
let placement: EventWriter;
let agent: EventWriter;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'gpunet-recovery-'));
  store = await openEventStore(`sqlite:${join(dir, 'events.db')}`);
  placement = new EventWriter(store, 'placement', systemClock);
  agent = new EventWriter(store, 'execution', systemClock);
});
afterAll(async () => {
  await store?.close();
  await rm(dir, { recursive: true, force: true });
});

const place = (nodeId: string, n: number) =>
  placement.append(`work-placement-job-job-${n}`, [
    { type: 'JobPlaced', data: { jobId: `job-${n}`, attemptId: `a${n}`, attempt: 1, nodeId, gpuIndices: [0], gpuModel: 'A100', placedAt: at } },
  ]);
const ids = (n: number, nodeId = 'n1') => ({ jobId: `job-${n}`, attemptId: `a${n}`, nodeId });
const hold = (n: number) => agent.append(attemptStreamId('n1', `a${n}`), [{ type: 'ComputeHeld', data: { ...ids(n), gpuIndices: [0], gpuModel: 'A100', gpus: 1, heldAt: at } }]);
const finishAndRelease = (n: number) =>
  agent.append(attemptStreamId('n1', `a${n}`), [
    { type: 'JobFinished', data: { ...ids(n), outcome: 'completed', exitCode: 0, signal: null, finishedAt: at } },
    { type: 'ComputeReleased', data: { ...ids(n), gpuIndices: [0], releasedAt: at } },
  ]);

describe('recovery scan', () => {
  it('finds this node\'s open attempts only, and reads from its mark onwards next time', async () => {
    await place('n1', 1); // held, never finished
    await hold(1);
    await place('n1', 2); // done
    await hold(2);
    await finishAndRelease(2);
    await place('n2', 3); // another node's
    await place('n1', 4); // placed, never held

    const first = await scanForRecovery(store, 'n1');
    expect(first.attempts.map((s) => [s.placement.attemptId, s.phase])).toEqual([
      ['a1', 'held'],
      ['a4', 'placed'],
    ]);
    expect(first.causes.get('a1')!.type).toBe('JobPlaced');

    // a4 is resolved at once, a1 stays open: the mark stays below a1's placement.
    const mark = checkpointAfter(first, ['a1']);
    expect(mark).toBe(first.placedAt.get('a1')! - 1n);
    await store.saveCheckpoint(recoveryCheckpointId('n1'), mark);
    await finishAndRelease(1);
    await place('n1', 5);

    const second = await scanForRecovery(store, 'n1');
    expect(second.attempts.map((s) => s.placement.attemptId)).toEqual(['a4', 'a5']); // a4 was never recorded as finished here
    expect(checkpointAfter(second, [])).toBe(second.head);
    await store.saveCheckpoint(recoveryCheckpointId('n1'), second.head);
    expect((await scanForRecovery(store, 'n1')).attempts).toEqual([]);
  });
});
