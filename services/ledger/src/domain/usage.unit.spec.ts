import { ComputeHeld, JobFinished, UsageRecorded, type JobOutcome } from '#contracts';
import { isRetryable } from '#errors';
import fc from 'fast-check';
import { NoPriceError, type PriceListVersion } from './pricing.js';
import { AttemptMismatchError, computeHeldOf, usageFor } from './usage.js';

const v1: PriceListVersion = {
  version: 1,
  currency: 'EUR',
  effectiveFrom: 0,
  ratesMicrosPerGpuHour: { 'sim-gpu': 3_600_000, A100: 2_000_000 },
  defaultRateMicrosPerGpuHour: 1_000_000,
};
// In force from 10:15 on 2025-06-01: doubles sim-gpu.
const v2: PriceListVersion = { version: 2, currency: 'EUR', effectiveFrom: Date.parse('2025-06-01T10:15:00.000Z'), ratesMicrosPerGpuHour: { 'sim-gpu': 7_200_000 } };

function held(overrides: Partial<ComputeHeld> = {}): ComputeHeld {
  return ComputeHeld.parse({
    jobId: 'job-1',
    attemptId: 'job-1-a1',
    nodeId: 'node-1',
    gpuIndices: [0, 1],
    gpuModel: 'sim-gpu',
    gpus: 2,
    heldAt: '2025-06-01T10:00:00.000Z',
    ...overrides,
  });
}

function finished(overrides: Partial<JobFinished> = {}): JobFinished {
  return JobFinished.parse({
    jobId: 'job-1',
    attemptId: 'job-1-a1',
    nodeId: 'node-1',
    outcome: 'completed',
    exitCode: 0,
    finishedAt: '2025-06-01T10:30:00.000Z',
    ...overrides,
  });
}

const context = { team: 'team-ml', recordedAt: '2025-06-01T10:30:01.000Z' };

describe('usageFor', () => {
  it('given a hold of 2 sim-gpus at 3.60/h, when the attempt completes 30 min later, then it bills 2 × 1,800,000 ms = 3.60', () => {
    const line = usageFor(held(), finished(), [v1], context);
    expect(line).toEqual({
      jobId: 'job-1',
      attemptId: 'job-1-a1',
      team: 'team-ml',
      nodeId: 'node-1',
      gpuModel: 'sim-gpu',
      gpus: 2,
      outcome: 'completed',
      heldFrom: '2025-06-01T10:00:00.000Z',
      finishedAt: '2025-06-01T10:30:00.000Z',
      billableMs: 1_800_000,
      rateMicrosPerGpuHour: 3_600_000,
      amountMicros: 3_600_000,
      currency: 'EUR',
      priceListVersion: 1,
      rounding: 'per-line-half-up-micros',
      recordedAt: '2025-06-01T10:30:01.000Z',
    });
    expect(() => UsageRecorded.parse(line)).not.toThrow();
  });

  it('given a price change during the run, when it finishes, then the rate in force at heldAt applies to the whole line', () => {
    const line = usageFor(held(), finished(), [v1, v2], context)!;
    expect(line).toMatchObject({ priceListVersion: 1, rateMicrosPerGpuHour: 3_600_000, amountMicros: 3_600_000 });
    const later = usageFor(held({ heldAt: '2025-06-01T10:15:00.000Z' }), finished(), [v1, v2], context)!;
    expect(later).toMatchObject({ priceListVersion: 2, billableMs: 900_000, amountMicros: 3_600_000 });
  });

  it('given 1 GPU for 1 ms at 1.80/h (0.5 micro), when priced, then the line rounds half up to 1 micro, once', () => {
    const p: PriceListVersion = { ...v1, ratesMicrosPerGpuHour: { X: 1_800_000 } };
    const line = usageFor(held({ gpuModel: 'X', gpus: 1, gpuIndices: [0], heldAt: '2025-06-01T10:00:00.000Z' }), finished({ finishedAt: '2025-06-01T10:00:00.001Z' }), [p], context)!;
    expect(line).toMatchObject({ billableMs: 1, amountMicros: 1 });
  });

  it.each<JobOutcome>(['completed', 'failed', 'timeout', 'cancelled', 'deadline'])('given outcome %s, then the held time is billed', (outcome) => {
    const line = usageFor(held(), finished({ outcome, exitCode: outcome === 'completed' ? 0 : null }), [v1], context)!;
    expect(line.outcome).toBe(outcome);
    expect(line.amountMicros).toBe(3_600_000);
    expect(line.waivedReason).toBeUndefined();
  });

  it('given a node lost mid-run, when the agent reports it, then the line is recorded with 0 ms, 0 micros and the reason', () => {
    const line = usageFor(held(), finished({ outcome: 'node_lost', exitCode: null }), [v1], context)!;
    expect(line).toMatchObject({ outcome: 'node_lost', billableMs: 0, amountMicros: 0, waivedReason: 'platform_fault', rateMicrosPerGpuHour: 3_600_000 });
    expect(() => UsageRecorded.parse(line)).not.toThrow();
  });

  it('given placement declared the node lost, when the node comes back and reports the attempt completed, then it is waived all the same', () => {
    const line = usageFor(held(), finished({ outcome: 'completed' }), [v1], { ...context, nodeLost: true })!;
    expect(line).toMatchObject({ outcome: 'completed', billableMs: 0, amountMicros: 0, waivedReason: 'platform_fault' });
    expect(() => UsageRecorded.parse(line)).not.toThrow();
    expect(usageFor(held(), finished({ outcome: 'completed' }), [v1], { ...context, nodeLost: false })!.amountMicros).toBeGreaterThan(0);
  });

  it('given a finish stamped before the hold, then nothing is billed rather than a negative amount', () => {
    const line = usageFor(held(), finished({ finishedAt: '2025-06-01T09:59:59.000Z' }), [v1], context)!;
    expect(line).toMatchObject({ billableMs: 0, amountMicros: 0 });
  });

  it('given a model the list does not name, then its default rate applies', () => {
    const line = usageFor(held({ gpuModel: 'T4' }), finished(), [v1], context)!;
    expect(line).toMatchObject({ rateMicrosPerGpuHour: 1_000_000, amountMicros: 1_000_000 });
  });

  it('given an attempt that never held compute, when it finishes, then there is no usage line', () => {
    expect(usageFor(undefined, finished({ outcome: 'cancelled', exitCode: null }), [v1], context)).toBeUndefined();
  });

  it('given stamps of two different attempts, then it refuses with a terminal AttemptMismatchError', () => {
    const run = () => usageFor(held(), finished({ attemptId: 'job-1-a2' }), [v1], context);
    expect(run).toThrow(AttemptMismatchError);
    expect(run).toThrow(/attemptId: job-1-a1 vs job-1-a2/);
    expect(() => usageFor(held(), finished({ nodeId: 'node-2' }), [v1], context)).toThrow(/nodeId/);
  });

  it('given no price for the model, then it refuses with a terminal NoPriceError', () => {
    let error: unknown;
    try {
      usageFor(held({ gpuModel: 'H100' }), finished(), [v2], context);
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(NoPriceError);
    expect(isRetryable(error)).toBe(false);
  });

  it('for any hold and finish, bills max(0, finished − held) ms within half a micro of the exact charge, and node_lost bills 0', () => {
    const base = Date.parse('2025-01-01T00:00:00.000Z');
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 16 }),
        fc.integer({ min: 0, max: 86_400_000 }),
        fc.integer({ min: -5_000, max: 30 * 86_400_000 }),
        fc.integer({ min: 0, max: 50_000_000 }),
        fc.constantFrom<JobOutcome>('completed', 'failed', 'timeout', 'node_lost'),
        (gpus, heldOffset, duration, rate, outcome) => {
          const prices: PriceListVersion[] = [{ version: 1, currency: 'EUR', effectiveFrom: 0, ratesMicrosPerGpuHour: { M: rate } }];
          const h = held({ gpus, gpuIndices: [...Array(gpus).keys()], gpuModel: 'M', heldAt: new Date(base + heldOffset).toISOString() });
          const f = finished({ outcome, finishedAt: new Date(base + heldOffset + duration).toISOString() });
          const line = usageFor(h, f, prices, context)!;
          if (outcome === 'node_lost') return line.billableMs === 0 && line.amountMicros === 0;
          const ms = Math.max(0, duration);
          const exactTimes2 = BigInt(gpus) * BigInt(ms) * BigInt(rate) * 2n;
          const gotTimes2 = BigInt(line.amountMicros) * 3_600_000n * 2n;
          const diff = gotTimes2 > exactTimes2 ? gotTimes2 - exactTimes2 : exactTimes2 - gotTimes2;
          return line.billableMs === ms && diff <= 3_600_000n;
        },
      ),
    );
  });
});

describe('computeHeldOf', () => {
  it('finds the ComputeHeld among the events of an attempt stream, or nothing', () => {
    const h = { type: 'ComputeHeld', data: held() };
    expect(computeHeldOf([h, { type: 'JobStarted', data: {} }, { type: 'JobFinished', data: finished() }])).toBe(h);
    expect(computeHeldOf([{ type: 'JobFinished', data: finished() }])).toBeUndefined();
    expect(computeHeldOf([])).toBeUndefined();
  });
});
