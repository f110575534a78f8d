import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import YAML from 'yaml';

/**
 * The alert rules and the Grafana dashboard name only metrics some process defines: a renamed
 * metric fails here, not silently in an operator's empty panel or an alert that never fires.
 */
const root = join(import.meta.dirname, '../..');

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (name === 'node_modules' || name === 'dist') return [];
    if (statSync(path).isDirectory()) return sources(path);
    return path.endsWith('.ts') && !path.endsWith('.spec.ts') ? [path] : [];
  });
}

const defined = new Set<string>();
for (const file of [...sources(join(root, 'libs')), ...sources(join(root, 'services'))]) {
  for (const m of readFileSync(file, 'utf8').matchAll(/name: '(gpunet_[a-z_]+)'/g)) defined.add(m[1]!);
}

/** A metric name in an expression, without the series suffixes of histograms. */
function metricsIn(expr: string): string[] {
  return [...expr.matchAll(/\b(gpunet_[a-z_]+)/g)].map((m) => m[1]!.replace(/_(bucket|count|sum)$/, ''));
}

describe('deploy/ names only metrics that exist', () => {
  it('finds the metrics defined in the code', () => {
    expect(defined.has('gpunet_queue_pending_jobs')).toBe(true);
    expect(defined.size).toBeGreaterThan(20);
  });

  it('every alert rule', () => {
    const rules = YAML.parse(readFileSync(join(root, 'deploy/prometheus/alerts.yaml'), 'utf8')) as { groups: { rules: { alert: string; expr: string }[] }[] };
    const missing = rules.groups.flatMap((g) => g.rules.flatMap((r) => metricsIn(r.expr).filter((m) => !defined.has(m)).map((m) => `${r.alert}: ${m}`)));
    expect(missing).toEqual([]);
  });

  it('every dashboard panel', () => {
    const dash = JSON.parse(readFileSync(join(root, 'deploy/grafana/gpunet.json'), 'utf8')) as { panels: { title: string; targets: { expr: string }[] }[] };
    expect(dash.panels.length).toBeGreaterThan(10);
    const missing = dash.panels.flatMap((p) => p.targets.flatMap((t) => metricsIn(t.expr).filter((m) => !defined.has(m)).map((m) => `${p.title}: ${m}`)));
    expect(missing).toEqual([]);
  });
});
