/**
 * What `gpunet top` shows, from the samples scraped off every process of a network: the queue by
 * reason, jobs by state, GPUs per model, each node, each consumer's lag and dead letters, each
 * relay's lag and the billed GPU time. Pure: scraping and the terminal are the command's.
 */
import { table } from '../format.js';
import type { Sample } from './exposition.js';

export interface Scrape {
  /** Process name (`placement`, `node-1`…). */
  target: string;
  url: string;
  /** Undefined when the scrape failed. */
  samples?: readonly Sample[];
  error?: string;
}

export interface TopView {
  at: string;
  targets: { target: string; up: boolean; error?: string }[];
  queue: Record<string, number>;
  jobs: Record<string, number>;
  gpus: { model: string; held: number; free: number }[];
  nodes: { node: string; held: number; free: number; heartbeatAgeSeconds?: number; attempts?: number; up: boolean }[];
  consumers: { stream: string; consumer: string; pending: number; ackPending: number; redelivered: number; deadLetters: number }[];
  relays: { target: string; lagSeconds: number }[];
  billed: { team: string; model: string; gpuMilliseconds: number }[];
}

const of = (samples: readonly Sample[] | undefined, name: string) => (samples ?? []).filter((s) => s.name === name);

/** Builds the view. When several processes report a figure, the first reporting one wins (they agree). */
export function topView(scrapes: readonly Scrape[], at: Date): TopView {
  const all = scrapes.flatMap((s) => s.samples ?? []);
  const queue: Record<string, number> = {};
  for (const s of of(all, 'gpunet_queue_pending_jobs')) queue[s.labels.reason!] = s.value;
  const jobs: Record<string, number> = {};
  for (const s of of(all, 'gpunet_jobs')) if (s.value > 0) jobs[s.labels.state!] = s.value;

  const gpuByModel = new Map<string, { held: number; free: number }>();
  const nodes = new Map<string, TopView['nodes'][number]>();
  for (const s of of(all, 'gpunet_gpus')) {
    const m = gpuByModel.get(s.labels.model!) ?? { held: 0, free: 0 };
    const n = nodes.get(s.labels.node!) ?? { node: s.labels.node!, held: 0, free: 0, up: true };
    if (s.labels.state === 'held') {
      m.held += s.value;
      n.held += s.value;
    } else {
      m.free += s.value;
      n.free += s.value;
    }
    gpuByModel.set(s.labels.model!, m);
    nodes.set(n.node, n);
  }
  for (const s of of(all, 'gpunet_node_heartbeat_age_seconds')) {
    const n = nodes.get(s.labels.node!);
    if (n) n.heartbeatAgeSeconds = s.value;
  }
  // Each agent reports its attempts under its own instance (its node id).
  for (const s of of(all, 'gpunet_agent_attempts')) {
    const n = nodes.get(s.labels.instance!);
    if (n) n.attempts = s.value;
  }
  const upByName = new Map(scrapes.map((s) => [s.target, s.samples !== undefined]));
  for (const n of nodes.values()) if (upByName.has(n.node)) n.up = upByName.get(n.node)!;

  const consumers = new Map<string, TopView['consumers'][number]>();
  const consumer = (stream: string, name: string) => {
    const key = `${stream}/${name}`;
    let c = consumers.get(key);
    if (!c) consumers.set(key, (c = { stream, consumer: name, pending: 0, ackPending: 0, redelivered: 0, deadLetters: 0 }));
    return c;
  };
  for (const s of of(all, 'gpunet_jetstream_consumer_pending_messages')) consumer(s.labels.stream!, s.labels.consumer!).pending = s.value;
  for (const s of of(all, 'gpunet_jetstream_consumer_ack_pending_messages')) consumer(s.labels.stream!, s.labels.consumer!).ackPending = s.value;
  for (const s of of(all, 'gpunet_jetstream_consumer_redelivered_messages')) consumer(s.labels.stream!, s.labels.consumer!).redelivered = s.value;
  for (const s of of(all, 'gpunet_dead_letter_messages')) {
    const c = [...consumers.values()].find((x) => x.consumer === s.labels.consumer);
    if (c) c.deadLetters = s.value;
    else consumer('?', s.labels.consumer!).deadLetters = s.value;
  }

  const relays = scrapes.flatMap((sc) => of(sc.samples, 'gpunet_outbox_relay_lag_seconds').map((s) => ({ target: sc.target, lagSeconds: s.value })));
  const billed = of(all, 'gpunet_billed_gpu_milliseconds_total').map((s) => ({ team: s.labels.team!, model: s.labels.model!, gpuMilliseconds: s.value }));

  return {
    at: at.toISOString(),
    targets: scrapes.map((s) => ({ target: s.target, up: s.samples !== undefined, ...(s.error ? { error: s.error } : {}) })),
    queue,
    jobs,
    gpus: [...gpuByModel].map(([model, c]) => ({ model, ...c })).sort((a, b) => a.model.localeCompare(b.model)),
    nodes: [...nodes.values()].sort((a, b) => a.node.localeCompare(b.node)),
    consumers: [...consumers.values()].sort((a, b) => `${a.stream}/${a.consumer}`.localeCompare(`${b.stream}/${b.consumer}`)),
    relays,
    billed: billed.sort((a, b) => `${a.team}/${a.model}`.localeCompare(`${b.team}/${b.model}`)),
  };
}

const seconds = (s: number | undefined) => (s === undefined ? '-' : s < 10 ? `${s.toFixed(1)}s` : `${Math.round(s)}s`);
/** GPU-hours from integer GPU-ms, for display only (the figure itself stays integer). */
const gpuHours = (ms: number) => (ms / 3_600_000).toFixed(3);

/** The screen: a few small tables, widest first. */
export function renderTop(view: TopView): string {
  const down = view.targets.filter((t) => !t.up);
  const lines: string[] = [];
  lines.push(`gpunet top — ${view.at} — ${view.targets.length - down.length}/${view.targets.length} processes answering${down.length ? ` (down: ${down.map((t) => t.target).join(', ')})` : ''}`);
  lines.push('');
  const reasons = Object.entries(view.queue).filter(([, n]) => n > 0);
  const waiting = reasons.reduce((a, [, n]) => a + n, 0);
  lines.push(`QUEUE  ${waiting} waiting${reasons.length ? `: ${reasons.map(([r, n]) => `${r} ${n}`).join(', ')}` : ''}`);
  lines.push(`JOBS   ${Object.entries(view.jobs).map(([s, n]) => `${s} ${n}`).join(', ') || 'none'}`);
  lines.push('');
  lines.push(table(['GPU MODEL', 'HELD', 'FREE'], view.gpus.map((g) => [g.model, String(g.held), String(g.free)]), ['l', 'r', 'r']));
  lines.push('');
  lines.push(table(['NODE', 'UP', 'HELD', 'FREE', 'ATTEMPTS', 'HEARTBEAT AGE'], view.nodes.map((n) => [n.node, n.up ? 'yes' : 'NO', String(n.held), String(n.free), n.attempts === undefined ? '-' : String(n.attempts), seconds(n.heartbeatAgeSeconds)]), ['l', 'l', 'r', 'r', 'r', 'r']));
  lines.push('');
  lines.push(table(['STREAM', 'CONSUMER', 'LAG', 'UNACKED', 'REDELIVERED', 'DEAD LETTERS'], view.consumers.map((c) => [c.stream, c.consumer, String(c.pending), String(c.ackPending), String(c.redelivered), String(c.deadLetters)]), ['l', 'l', 'r', 'r', 'r', 'r']));
  lines.push('');
  lines.push(table(['PROCESS', 'RELAY LAG'], view.relays.map((r) => [r.target, seconds(r.lagSeconds)]), ['l', 'r']));
  if (view.billed.length > 0) {
    lines.push('');
    lines.push(table(['TEAM', 'GPU MODEL', 'BILLED GPU-H'], view.billed.map((b) => [b.team, b.model, gpuHours(b.gpuMilliseconds)]), ['l', 'l', 'r']));
  }
  return lines.join('\n');
}
