/**
 * The network's own figures, read as Prometheus would: each process's `/metrics`, parsed. Shared by
 * the benches that read them (bench:e2e's overload phase, bench:soak).
 */
import type { TestNetwork } from '../support/network.js';

/** Every sample of a Prometheus text exposition: metric name → summed value, and name{labels} → value. */
function parseMetrics(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)/.exec(line);
    if (!m) continue;
    const value = Number(m[3]);
    if (!Number.isFinite(value)) continue;
    out.set(m[1]!, (out.get(m[1]!) ?? 0) + value);
    if (m[2]) out.set(`${m[1]}${m[2]}`, value);
  }
  return out;
}

/** Each network process's /metrics, parsed (a process without a metrics port, or not answering, is left out). */
export async function scrape(net: TestNetwork): Promise<Map<string, Map<string, number>>> {
  const out = new Map<string, Map<string, number>>();
  await Promise.all(
    net.processes.map(async (p) => {
      if (!p.metricsPort) return;
      try {
        const res = await fetch(`http://127.0.0.1:${p.metricsPort}/metrics`, { signal: AbortSignal.timeout(5_000) });
        if (res.ok) out.set(p.name, parseMetrics(await res.text()));
      } catch {
        // A process that does not answer counts nothing.
      }
    }),
  );
  return out;
}
