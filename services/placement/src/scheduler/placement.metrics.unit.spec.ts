import type { EventData } from '#contracts';
import { Metrics } from '#telemetry';
import { ev, given, T0, type Unpositioned } from '../domain/fixtures.js';
import { forgetEnded, type PlanOptions } from '../domain/index.js';
import { PlacementMetrics } from './placement.metrics.js';

const MIN = 60_000;
const HOUR = 60 * MIN;
/** Size-first ranking with one reservation taken at once, so the reasons below follow from the history alone. */
const OPTIONS: PlanOptions = { weights: { age: 1000, ageCapMs: 7 * 24 * HOUR, fairShare: 10_000, size: 500, sizeFullGpus: 8 }, reservationDepth: 1, reservationAfterMs: 0 };

function submitted(jobId: string, gpus: number, timeLimitMs: number): Unpositioned {
  const e = ev.submitted(jobId, gpus) as { type: 'JobSubmitted'; data: EventData<'JobSubmitted'> };
  return { type: 'JobSubmitted', data: { ...e.data, spec: { ...e.data.spec, request: { ...e.data.spec.request, timeLimitMs } } } };
}

async function pendingByReason(metrics: Metrics): Promise<Record<string, number>> {
  const text = await metrics.text();
  const out: Record<string, number> = {};
  for (const m of text.matchAll(/^gpunet_queue_pending_jobs\{reason="([A-Za-z]+)"[^}]*\} (\d+)$/gm)) out[m[1]!] = Number(m[2]);
  return out;
}

describe('placement metrics: pending jobs by reason', () => {
  it('gives each waiting job the reason the pass\'s plan gives it (Resources, Reservation, Priority), not Resources for all', async () => {
    // n1 has 4 GPUs, 3 held for an hour. `big` (4) holds the one reservation; `long` (1, 2 h) would run into it;
    // `big2` (4) is blocked with no reservation left.
    const h = given(ev.node('n1', 4), submitted('run', 3, HOUR), ev.placed('run', 1, 'n1', [0, 1, 2]))
      .apply(submitted('big', 4, 2 * HOUR), ev.staged('big'))
      .apply(submitted('big2', 4, 2 * HOUR), ev.staged('big2'))
      .apply(submitted('long', 1, 2 * HOUR), ev.staged('long'))
      .apply(submitted('unstaged', 1, HOUR));
    const metrics = new Metrics({ service: 'placement', instance: 'test' }, { processMetrics: false });
    const placement = new PlacementMetrics(metrics, { now: () => new Date(T0 + 10 * MIN) });
    placement.watch(h.state, OPTIONS);

    expect(await pendingByReason(metrics)).toMatchObject({ Resources: 1, Reservation: 1, Priority: 1, Inputs: 1, NoNodes: 0 });
  });

  it('counts forgotten jobs as ended (decision 0043): the figure does not drop when a record leaves memory', async () => {
    const h = given(ev.node('n1', 2), submitted('done', 1, HOUR), ev.staged('done'), ev.placed('done', 1, 'n1', [0]))
      .apply(ev.held('done', 1, 'n1', [0]), ev.finished('done', 1, 'n1'), ev.released('done', 1, 'n1', [0]))
      .apply(submitted('gone', 1, HOUR), ev.cancelRequested('gone'), ev.withdrawn('gone'))
      .apply(submitted('runs', 1, HOUR), ev.staged('runs'), ev.placed('runs', 1, 'n1', [1]));
    const metrics = new Metrics({ service: 'placement', instance: 'test' }, { processMetrics: false });
    new PlacementMetrics(metrics, { now: () => new Date(T0 + 10 * MIN) }).watch(h.state, OPTIONS);
    const byPhase = async () => Object.fromEntries([...(await metrics.text()).matchAll(/^gpunet_placement_jobs\{phase="([a-z_]+)"[^}]*\} (\d+)$/gm)].map((m) => [m[1]!, Number(m[2])]));
    const before = await byPhase();
    expect(before).toMatchObject({ ended: 2, placed: 1 });
    expect(forgetEnded(h.state, 'done') && forgetEnded(h.state, 'gone')).toBe(true);
    expect(await byPhase()).toEqual(before);
  });
});
