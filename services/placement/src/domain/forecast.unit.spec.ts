import type { EventData } from '#contracts';
import { ev, given, T0, type Unpositioned } from './fixtures.js';
import { forecast } from './forecast.js';

const HOUR = 3_600_000;

function submitted(jobId: string, gpus: number, timeLimitMs: number, gpuModel?: string): Unpositioned {
  const e = ev.submitted(jobId, gpus, gpuModel) as { type: 'JobSubmitted'; data: EventData<'JobSubmitted'> };
  return { type: 'JobSubmitted', data: { ...e.data, spec: { ...e.data.spec, request: { ...e.data.spec.request, timeLimitMs } } } };
}
const heldAt = (jobId: string, nodeId: string, gpuIndices: number[], t: number, gpuModel = 'A100'): Unpositioned => ({
  type: 'ComputeHeld',
  data: { jobId, attemptId: `${jobId}-a1`, nodeId, gpuIndices, gpuModel, gpus: gpuIndices.length, heldAt: new Date(t).toISOString() },
});

describe('capacity forecast from the live plan', () => {
  it('given idle nodes, then every GPU of every model is free every hour', () => {
    const f = forecast(given(ev.node('a', 4, 'A100'), ev.node('h', 2, 'H100')).state, T0, { hours: 3 });
    expect(f.totals).toEqual({ A100: 4, H100: 2 });
    expect(f.hours.map((h) => [h.start - T0, h.free])).toEqual([
      [0, { A100: 4, H100: 2 }],
      [HOUR, { A100: 4, H100: 2 }],
      [2 * HOUR, { A100: 4, H100: 2 }],
    ]);
  });

  it('counts running work until its time limit, a reservation for its hours, and a planned start now', () => {
    // a: 4 A100; `run` holds 3 for 2h from T0; `big` (4 GPUs, 1h) reserves all 4 from 2h to 3h; `small` (1 GPU, 30m) starts now on GPU 3.
    const h = given(ev.node('a', 4), submitted('run', 3, 2 * HOUR), ev.placed('run', 1, 'a', [0, 1, 2]), heldAt('run', 'a', [0, 1, 2], T0))
      .apply(submitted('big', 4, HOUR), ev.staged('big'))
      .apply(submitted('small', 1, 30 * 60_000), ev.staged('small'));
    // Headroom off: `run` and `big` are both long work, which headroom would not let hold all 4 GPUs while `small` waits (plan.unit.spec.ts).
    const f = forecast(h.state, T0, { hours: 4, headroom: false });
    expect(f.hours.map((x) => x.free.A100)).toEqual([0, 1, 0, 4]);
  });

  it('keeps models apart and never counts GPUs held by work that never ends', () => {
    const h = given(ev.mixedNode('m', ['A100', 'A100', 'H100']), ev.placed('ghost', 1, 'm', [2], 'H100'));
    expect(forecast(h.state, T0, { hours: 2 }).hours.map((x) => x.free)).toEqual([
      { A100: 2, H100: 0 },
      { A100: 2, H100: 0 },
    ]);
  });
});
