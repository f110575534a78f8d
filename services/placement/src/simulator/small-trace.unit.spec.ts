import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { generateTrace } from './generate-trace.js';
import { POLICY_NAMES } from './policies.js';
import { simulate } from './simulate.js';

const file = fileURLToPath(new URL('../../../../examples/traces/small.swf', import.meta.url));
const text = readFileSync(file, 'utf8');

describe('examples/traces/small.swf', () => {
  it('is exactly what the generator writes (regenerate with write-trace.js)', () => {
    expect(text).toBe(generateTrace());
  });

  it.each(POLICY_NAMES)('replays under %s with sane metrics, the same twice', (policy) => {
    const report = simulate(text, { policy, gpusPerNode: 8 });
    const m = report.metrics;
    expect(report.cluster).toEqual({ nodes: 8, gpusPerNode: 8, totalGpus: 64 });
    expect(m.jobs).toBe(300);
    expect(m.rejected).toBe(0);
    expect(report.skipped).toBe(0);
    expect(m.utilization).toBeGreaterThan(0.2);
    expect(m.utilization).toBeLessThanOrEqual(1);
    expect(m.averageBoundedSlowdown).toBeGreaterThanOrEqual(1);
    expect(m.averageWaitMs).toBeGreaterThan(0);
    expect(m.p95WaitSmallHalfMs).toBeGreaterThanOrEqual(0);
    expect(m.maxWaitLargest10PctMs).toBeGreaterThan(0);
    // The span covers at least the submissions (last at 28 180 s) and never less than the busy time.
    expect(m.spanMs).toBeGreaterThanOrEqual(28_180_000 - 232_000);
    expect(simulate(text, { policy, gpusPerNode: 8 })).toEqual(report);
  });

  it('strict fcfs makes small jobs wait longer than the default, which lets them pass', () => {
    const fcfs = simulate(text, { policy: 'fcfs', backfill: false, gpusPerNode: 8 }).metrics;
    const dflt = simulate(text, { policy: 'default', gpusPerNode: 8 }).metrics;
    expect(fcfs.p95WaitSmallHalfMs).toBeGreaterThan(dflt.p95WaitSmallHalfMs);
    expect(fcfs.averageWaitMs).toBeGreaterThan(dflt.averageWaitMs);
  });
});

