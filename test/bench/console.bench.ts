/**
 * `npm run bench:console`: the web console in Debian's Chromium against a local network holding
 * many jobs (default 10,000, submitted over HTTP; no agents, so they stay queued and the machine
 * stays free for the measurement). Measures, each several times, with the browser:
 *
 * - jobs page: from navigation to its first rows drawn (server-side paging: one page of 50);
 * - a job's page: from the click on a row to its timeline drawn.
 *
 * Beside each figure, a raw limit measured in the same run: for the jobs page, a tiny document
 * from the same intake loaded in the same Chromium plus a plain `fetch` of the same first page;
 * for a job's page, a plain `fetch` of the same job's view. The jobs page's time is also split
 * (document, script running, first page asked, answered, rows drawn), and the load average shown.
 * Ends with one JSON line per figure: {"bench","value","unit","raw","ratio","jobs","load"}.
 *
 * Goals (issue 13): first rows < 1 s with 10,000 jobs; a job's page < 300 ms.
 */
import { Command } from 'commander';
import os from 'node:os';
import { launchChromium, loggedIn } from '../support/browser.js';
import { TestNetwork } from '../support/network.js';
import { positive } from './args.js';


const opts = new Command('console.bench')
  .option('--jobs <k>', 'jobs in the network', positive, 10_000)
  .option('--concurrency <n>', 'submits in flight at once', positive, 16)
  .option('--runs <n>', 'measurements of each page', positive, 7)
  .parse()
  .opts<{ jobs: number; concurrency: number; runs: number }>();

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function submitMany(url: string, key: string, count: number, concurrency: number): Promise<void> {
  let next = 0;
  const spec = { name: 'bench', work: { kind: 'script', script: { inline: 'true' } }, request: { gpus: 1, timeLimit: '1m' }, outputs: { globs: ['*.json'] } };
  const worker = async () => {
    for (let i = next++; i < count; i = next++) {
      const res = await fetch(`${url}/v1/jobs`, { method: 'POST', headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' }, body: JSON.stringify(spec) });
      if (res.status !== 201) throw new Error(`submit ${i}: HTTP ${res.status} ${await res.text()}`);
      if ((i + 1) % 1000 === 0) process.stdout.write(`  submitted ${i + 1}\n`);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
}

type Perf = { getEntriesByType(t: string): { name: string; startTime: number; responseStart: number; responseEnd: number }[]; getEntriesByName(n: string): { startTime: number }[] };

/** Where a jobs page load spent its time, from the page's own performance entries (ms from navigation start). */
interface JobsLoad {
  drawn: number;
  document: number;
  /** index.html's inline script asked for the first page (NaN when it did not). */
  early: number;
  boot: number;
  dataStart: number;
  dataEnd: number;
}

const load1 = () => os.loadavg()[0]!.toFixed(1);

async function main(): Promise<void> {
  const net = await TestNetwork.start({ agents: 0, dirPrefix: 'gpunet-console-bench-', logLevel: 'warn' });
  const { browser, close } = await launchChromium();
  try {
    const t0 = Date.now();
    await submitMany(net.url, net.apiKey, opts.jobs, opts.concurrency);
    process.stdout.write(`console bench: ${opts.jobs} jobs submitted in ${((Date.now() - t0) / 1000).toFixed(1)} s\n`);
    const { page } = await loggedIn(browser, net.url, net.apiKey);
    await page.locator('tr[data-job]').first().waitFor();
    if (process.env.GPUNET_BENCH_TRACE) {
      page.on('requestfinished', (r) => {
        const t = r.timing();
        process.stdout.write(`  ${r.method()} ${r.url().replace(net.url, '')} ${Math.round(t.responseEnd)} ms (waited ${Math.round(t.responseStart - t.requestStart)} ms)\n`);
      });
    }
    const auth = { Authorization: `Bearer ${net.apiKey}` };
    const firstPage = '/v1/jobs?limit=50';
    const loadBefore = load1();

    const list: JobsLoad[] = [];
    const job: number[] = [];
    const rawList: number[] = [];
    const rawListNode: number[] = [];
    const rawJob: number[] = [];
    // Timed by the page itself (performance.now(), from the navigation's start): a script in every
    // document tells the bench the frame in which the first job row, or a job's timeline, is drawn,
    // and when a job's link is clicked. Nothing of the driver runs in the page while it loads, so
    // neither the driver's round trips nor its injected scripts count.
    const waiting = new Map<string, (t: number) => void>();
    await page.exposeFunction('__gpunetBenchSaw', (name: string, t: number) => waiting.get(name)?.(t));
    const next = (name: 'rows' | 'timeline' | 'click') => new Promise<number>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the page did not report ${name} within 30 s`)), 30_000);
      waiting.set(name, (t) => {
        clearTimeout(timer);
        waiting.delete(name);
        resolve(t);
      });
    });
    await page.addInitScript(() => {
      type W = { __gpunetBenchSaw(name: string, t: number): void; document: Document2; requestAnimationFrame(f: () => void): void };
      type Document2 = { querySelector(s: string): unknown; addEventListener(t: string, f: (e: { target: { closest?(s: string): unknown } | null }) => void, capture: boolean): void };
      const w = globalThis as unknown as W;
      const watch: [string, string][] = [['rows', 'tr[data-job]'], ['timeline', 'figure.timeline svg [data-phase]']];
      const shown = new Set<string>();
      const check = () => {
        for (const [name, selector] of watch) {
          const present = w.document.querySelector(selector) !== null;
          if (present && !shown.has(name)) {
            shown.add(name);
            w.requestAnimationFrame(() => w.__gpunetBenchSaw(name, performance.now()));
          } else if (!present) shown.delete(name);
        }
      };
      new (globalThis as unknown as { MutationObserver: new (f: () => void) => { observe(n: unknown, o: unknown): void } }).MutationObserver(check).observe(w.document, { childList: true, subtree: true });
      w.document.addEventListener('click', (e) => {
        if (e.target?.closest?.('tr[data-job] a')) w.__gpunetBenchSaw('click', performance.now());
      }, true);
    });
    /** In the page: a plain `fetch` of `path` with the key, from request to the whole body read (ms). */
    const plainFetch = (path: string) =>
      page.evaluate(
        async ([p, a]) => {
          const t = performance.now();
          const res = await fetch(p, { headers: a });
          await res.text();
          return performance.now() - t;
        },
        [path, auth] as const,
      );
    for (let i = 0; i < opts.runs; i++) {
      const rows = next('rows');
      await page.goto(`${net.url}/console/`, { waitUntil: 'commit' });
      const at = await rows;
      list.push({
        drawn: at,
        ...(await page.evaluate(() => {
          const perf = performance as unknown as Perf;
          const doc = perf.getEntriesByType('navigation')[0]!;
          const data = perf.getEntriesByType('resource').find((e) => e.name.includes('/v1/jobs?'));
          return { document: doc.responseEnd, early: perf.getEntriesByName('gpunet:early')[0]?.startTime ?? NaN, boot: perf.getEntriesByName('gpunet:boot')[0]?.startTime ?? NaN, dataStart: data?.startTime ?? NaN, dataEnd: data?.responseEnd ?? NaN };
        })),
      });

      const row = page.locator('tr[data-job]').nth(i);
      const jobId = (await row.getAttribute('data-job'))!;
      const clicked = next('click');
      const timeline = next('timeline');
      await row.getByRole('link').click();
      const after = await timeline;
      const before = await clicked;
      await page.getByRole('heading', { name: new RegExp(`Job ${jobId}`) }).waitFor();
      job.push(Math.round(after - before));
      rawJob.push(await plainFetch(`/v1/jobs/${jobId}`));

      // The raw limits, in the same run: a tiny document from the same server loaded in the same
      // Chromium, then the same first page fetched plainly; and that page over plain HTTP from Node.
      await page.goto(`${net.url}/healthz`, { waitUntil: 'load' });
      const doc = await page.evaluate(() => {
        const nav = (performance as unknown as { getEntriesByType(t: string): { responseEnd: number; loadEventEnd: number }[] }).getEntriesByType('navigation')[0]!;
        return nav.loadEventEnd || nav.responseEnd;
      });
      rawList.push(doc + (await plainFetch(firstPage)));
      const n0 = performance.now();
      const res = await fetch(`${net.url}${firstPage}`, { headers: auth });
      await res.text();
      rawListNode.push(performance.now() - n0);
    }
    const loadAfter = load1();
    const m = (f: (l: JobsLoad) => number) => Math.round(median(list.map(f)));
    const first = m((l) => l.drawn);
    const jobMs = median(job);
    const rawFirst = Math.round(median(rawList));
    const rawJobMs = Math.round(median(rawJob));
    process.stdout.write(
      `console bench: ${opts.jobs} jobs in the network; load average ${loadBefore} → ${loadAfter} (${os.cpus().length} cores)\n` +
        `  jobs page, navigation → first rows: median ${first} ms, max ${Math.round(Math.max(...list.map((l) => l.drawn)))} ms (goal < 1000 ms) over ${list.length} runs\n` +
        `    document ${m((l) => l.document)} ms, early ask ${m((l) => l.early)} ms, script running ${m((l) => l.boot)} ms, first page asked ${m((l) => l.dataStart)} ms, answered ${m((l) => l.dataEnd)} ms, rows drawn ${first} ms\n` +
        `    raw: a tiny document loaded + the same first page by fetch in this Chromium ${rawFirst} ms; that page over plain HTTP from Node ${Math.round(median(rawListNode))} ms\n` +
        `  job page, click → timeline drawn:  median ${jobMs} ms, max ${Math.max(...job)} ms (goal < 300 ms) over ${job.length} runs\n` +
        `    raw: the same job's view by fetch in this Chromium ${rawJobMs} ms\n`,
    );
    const line = (bench: string, value: number, raw: number) =>
      JSON.stringify({ bench, value, unit: 'ms', raw, ratio: raw > 0 ? Math.round((value / raw) * 10) / 10 : null, jobs: opts.jobs, load: Number(loadAfter) });
    process.stdout.write(`${line('console.jobs.first_rows', first, rawFirst)}\n${line('console.job.open', jobMs, rawJobMs)}\n`);
    if (first >= 1000 || jobMs >= 300) process.exitCode = 1;
  } finally {
    await close();
    await net.stop();
  }
}

await main();
