/** Free GPUs per model per hour for the next hours, as a stepped line chart (uPlot). */
import { useEffect, useRef } from 'react';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import type { Schemas } from '../api/client';

const COLORS = ['#1f6feb', '#d1242f', '#1a7f37', '#9a6700', '#8250df', '#bf3989'];

export function CapacityChart({ capacity }: { capacity: Schemas['CapacityReply'] }) {
  const ref = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const el = ref.current;
    if (!el) return;
    const models = capacity.totals.map((t) => t.gpuModel);
    const xs = capacity.hours.map((h) => Date.parse(h.start) / 1000);
    const series = models.map((m) => capacity.hours.map((h) => h.free.find((f) => f.gpuModel === m)?.gpus ?? 0));
    const plot = new uPlot(
      {
        width: Math.max(320, el.clientWidth),
        height: 260,
        scales: { y: { range: (_u, _min, max) => [0, Math.max(1, max)] } },
        axes: [{}, { label: 'free GPUs' }],
        series: [{ label: 'hour' }, ...models.map((m, i) => ({ label: m, stroke: COLORS[i % COLORS.length], width: 2, paths: uPlot.paths.stepped!({ align: 1 }) }))],
      },
      [xs, ...series],
      el,
    );
    const onResize = () => plot.setSize({ width: Math.max(320, el.clientWidth), height: 260 });
    window.addEventListener('resize', onResize);
    return () => {
      window.removeEventListener('resize', onResize);
      plot.destroy();
    };
  }, [capacity]);
  return <div ref={ref} className="chart" role="img" aria-label={`Free GPUs per model per hour for the next ${capacity.hours.length} hours`} />;
}
