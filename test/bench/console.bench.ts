/**
 * `npm run bench:console`: the web console in Debian's Chromium against a local network holding
 * many jobs (default 10,000, submitted over HTTP; no agents, so they stay queued and the machine
 * stays free for the measurement). Measures, each several times, with the browser:
 *
 * - jobs page: from navigation to its first rows drawn (server-side paging: one page of 50);
 * - a job's page: from the click on a row to its timeline drawn.
 *
 * Goals (issue 13): first rows < 1 s with 10,000 jobs; a job's page < 300 ms.
 */
import { Command, InvalidArgumentError } from 'commander';
import { launchChromium, loggedIn } from '../support/browser.js';
import { TestNetwork } from '../support/network.js';

const positive = (v: string) => {
  const n = Number(v);
  if (!/^\d+$/.test(v) || n < 1) throw new InvalidArgumentError('a whole number ≥ 1');
  return n;
};

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

    const list: number[] = [];
    const job: number[] = [];
    // Timed inside the page (performance.now(), from the navigation's start), so the driver's own round trips do not count.
    const drawn = (selector: string) =>
      page.waitForFunction((sel) => ((globalThis as unknown as { document: { querySelector(s: string): unknown } }).document.querySelector(sel) ? performance.now() : false), selector, { polling: 'raf', timeout: 30_000 }).then((h) => h.jsonValue() as Promise<number>);
    for (let i = 0; i < opts.runs; i++) {
      await page.goto(`${net.url}/console/`, { waitUntil: 'commit' });
      list.push(Math.round(await drawn('tr[data-job]')));

      const row = page.locator('tr[data-job]').nth(i);
      const jobId = await row.getAttribute('data-job');
      const before = await page.evaluate(() => performance.now());
      await row.getByRole('link').click();
      const after = await drawn('figure.timeline svg [data-phase]');
      await page.getByRole('heading', { name: new RegExp(`Job ${jobId}`) }).waitFor();
      job.push(Math.round(after - before));
    }
    process.stdout.write(
      `console bench: ${opts.jobs} jobs in the network\n` +
        `  jobs page, navigation → first rows: median ${median(list)} ms, max ${Math.max(...list)} ms (goal < 1000 ms) over ${list.length} runs\n` +
        `  job page, click → timeline drawn:  median ${median(job)} ms, max ${Math.max(...job)} ms (goal < 300 ms) over ${job.length} runs\n`,
    );
    if (median(list) >= 1000 || median(job) >= 300) process.exitCode = 1;
  } finally {
    await close();
    await net.stop();
  }
}

await main();
