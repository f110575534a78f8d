/**
 * `gpunet top`: a live terminal view of a network's figures — queue by reason, jobs by state, GPUs
 * per model, nodes, consumer lag and dead letters, relay lag, billed GPU time — scraped from every
 * process's `/metrics`, for an operator without Grafana. `--once` prints one snapshot and exits
 * (with `--json`, the view as a document). Targets: the processes in the local network's
 * state.json (each one's `metricsPort`), or `--targets name=url,…`.
 */
import type { CommandContext } from '../context.js';
import { UsageError } from '../errors.js';
import { EXIT, type ExitCode } from '../exit-codes.js';
import { parseExposition } from '../top/exposition.js';
import { renderTop, topView, type Scrape } from '../top/top-view.js';

export interface TopOptions {
  once?: boolean;
  interval?: string;
  targets?: string;
}

/** The `/metrics` URLs to scrape, by process name. */
async function targetsOf(ctx: CommandContext, opts: TopOptions): Promise<{ target: string; url: string }[]> {
  if (opts.targets) {
    return opts.targets.split(',').map((t, i) => {
      const [name, url] = t.includes('=') ? [t.slice(0, t.indexOf('=')), t.slice(t.indexOf('=') + 1)] : [`target-${i + 1}`, t];
      if (!/^https?:\/\//.test(url!)) throw new UsageError('a --targets entry is not a URL', [{ path: '--targets', message: `${JSON.stringify(t)} has no http:// URL`, fix: 'give name=http://host:port/metrics, comma-separated' }]);
      return { target: name!, url: url! };
    });
  }
  const state = await ctx.state();
  const found = (state?.processes ?? []).filter((p) => p.metricsPort !== undefined).map((p) => ({ target: p.name, url: `http://127.0.0.1:${p.metricsPort}/metrics` }));
  if (found.length === 0) {
    throw new UsageError('no processes to scrape', [{ path: '--targets', message: state ? 'the local network records no metrics ports (started by an older gpunet up?)' : 'not given, and no local network is running', fix: 'start one with `gpunet up`, or pass `--targets name=http://host:port/metrics,…`' }]);
  }
  return found;
}

async function scrape(t: { target: string; url: string }): Promise<Scrape> {
  try {
    const res = await fetch(t.url, { signal: AbortSignal.timeout(3_000) });
    if (!res.ok) return { ...t, error: `HTTP ${res.status}` };
    return { ...t, samples: parseExposition(await res.text()) };
  } catch (err) {
    return { ...t, error: (err as Error).message };
  }
}

export async function top(ctx: CommandContext, opts: TopOptions): Promise<ExitCode> {
  const intervalMs = Math.round(Number(opts.interval ?? '2') * 1000);
  if (!Number.isFinite(intervalMs) || intervalMs < 200) throw new UsageError('--interval is not a number of seconds ≥ 0.2', [{ path: '--interval', message: `got ${JSON.stringify(opts.interval)}`, fix: 'e.g. --interval 2' }]);
  const targets = await targetsOf(ctx, opts);
  const snapshot = async () => topView(await Promise.all(targets.map(scrape)), new Date());
  if (opts.once) {
    const view = await snapshot();
    ctx.out.doc(view);
    ctx.out.line(renderTop(view));
    return view.targets.some((t) => t.up) ? EXIT.ok : EXIT.unreachable;
  }
  const stdout = ctx.io.stdout;
  let stopped = false;
  const stop = () => (stopped = true);
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  try {
    while (!stopped) {
      const view = await snapshot();
      // Home, clear, draw: one write per frame, so the terminal never shows half a frame.
      stdout.write(`\x1b[H\x1b[2J${renderTop(view)}\n\n(refreshing every ${intervalMs / 1000}s; Ctrl-C to quit)\n`);
      const until = Date.now() + intervalMs;
      while (!stopped && Date.now() < until) await new Promise((r) => setTimeout(r, Math.min(100, until - Date.now())));
    }
  } finally {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
  }
  return EXIT.ok;
}
