/**
 * The web console in a real browser (Debian's Chromium via playwright-core) against a real local
 * network (`gpunet up` in a temp dir): log in, submit from the CLI and watch the job go through
 * its timeline live, its logs and outputs; a producer key refused what is not its role's; a
 * compliance key's audit query found in the record of audit queries; a billing key's invoice,
 * replayed identical, priced by a what-if list, and its dispute bundle downloaded and verified;
 * a producer key refused the invoices page.
 * Every page is checked by axe-core (no serious or critical violation) and screenshotted.
 */
import { execFile, execFileSync } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { launchChromium, loggedIn, screenshotDir, seriousA11yViolations } from '../support/browser.js';
import { TestNetwork } from '../support/network.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

function gpunet(args: string[], cwd: string): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [join(ROOT, 'bin', 'gpunet.js'), ...args], { cwd, env: { ...process.env, GPUNET_URL: '', GPUNET_API_KEY: '' } }, (err, stdout, stderr) =>
      err ? reject(new Error(`gpunet ${args.join(' ')}: ${stderr}`)) : resolve(stdout),
    );
  });
}

describe('web console', () => {
  let net: TestNetwork;
  let browser: Browser;
  let closeBrowser: () => Promise<void>;
  let dir: string;
  let shots: string;
  const keys: Record<'compliance' | 'billing', string> = { compliance: '', billing: '' };
  let jobId = '';

  async function issueKey(role: string, team = net.team): Promise<string> {
    const res = await fetch(`${net.url}/v1/keys`, { method: 'POST', headers: { Authorization: `Bearer ${net.adminApiKey}`, 'Content-Type': 'application/json' }, body: JSON.stringify({ team, role }) });
    expect(res.status).toBe(201);
    return ((await res.json()) as { apiKey: string }).apiKey;
  }

  async function check(page: Page, name: string): Promise<void> {
    expect(await seriousA11yViolations(page)).toEqual([]);
    await page.screenshot({ path: join(shots, `${name}.png`), fullPage: true });
  }

  beforeAll(async () => {
    // The console as intake serves it: built from console/ now, so the test never sees a stale build.
    // In production mode, as `npm run build:console` builds it: under jest NODE_ENV is `test`, and Vite then builds React's development bundle (StrictMode running every effect twice).
    execFileSync(process.execPath, [join(ROOT, 'node_modules', 'vite', 'bin', 'vite.js'), 'build', '--config', 'console/vite.config.ts'], { cwd: ROOT, stdio: 'pipe', env: { ...process.env, NODE_ENV: 'production' } });
    dir = await mkdtemp(join(tmpdir(), 'gpunet-console-'));
    shots = await screenshotDir();
    net = await TestNetwork.start({ agents: 1, gpus: 2, dirPrefix: 'gpunet-console-' });
    keys.compliance = await issueKey('compliance');
    keys.billing = await issueKey('billing');
    ({ browser, close: closeBrowser } = await launchChromium());
  }, 180_000);

  afterAll(async () => {
    await closeBrowser?.();
    await net?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  }, 60_000);

  it('a producer logs in, submits from the CLI and watches the job live: new row, timeline phases, billed span, logs, outputs, charge', async () => {
    const { context, page } = await loggedIn(browser, net.url, net.apiKey);
    await page.getByRole('heading', { name: 'Jobs' }).waitFor();
    await page.getByText('● live').waitFor();
    await check(page, 'jobs-empty');

    await writeFile(
      join(dir, 'job.yaml'),
      [
        'name: console-watch',
        'work:',
        '  kind: script',
        '  interpreter: bash',
        '  script:',
        '    inline: |',
        '      echo "training on GPUs $CUDA_VISIBLE_DEVICES"',
        '      for i in 1 2 3; do echo "step $i"; sleep 1; done',
        '      echo \'{"loss": 0.125}\' > "$GPUNET_OUTPUT_DIR/metrics.json"',
        'request: { gpus: 1, timeLimit: 1m }',
        'outputs: { globs: ["*.json"] }',
        '',
      ].join('\n'),
    );
    jobId = (JSON.parse(await gpunet(['submit', 'job.yaml', '--data-dir', net.dataDir, '--json'], dir)) as { jobId: string }).jobId;

    // Live: the row appears without a reload, from the team feed.
    const row = page.locator(`tr[data-job="${jobId}"]`);
    await row.waitFor({ timeout: 20_000 });
    await row.getByRole('link').click();
    await page.getByRole('heading', { name: new RegExp(`Job ${jobId}`) }).waitFor();

    // The timeline grows while the page stays open: running (with its billed span), then output and released.
    await page.locator('[data-phase="running"]').first().waitFor({ timeout: 30_000 });
    await page.locator('[data-billed="1"]').waitFor();
    await page.locator('.log-stdout', { hasText: 'step 1' }).waitFor({ timeout: 20_000 });
    await page.screenshot({ path: join(shots, 'job-running.png'), fullPage: true });
    await page.locator('.badge.state-completed').first().waitFor({ timeout: 40_000 });
    await page.locator('[data-phase="released"]').first().waitFor({ timeout: 20_000 });
    for (const phase of ['staging', 'queued', 'held', 'running', 'output']) expect(await page.locator(`[data-phase="${phase}"]`).count()).toBeGreaterThan(0);
    await page.locator('.log-stdout', { hasText: 'step 3' }).waitFor();

    // Outputs: size and sha256 listed, and the download is the file's bytes.
    const outputs = page.getByRole('table', { name: 'Outputs' });
    await outputs.getByText('metrics.json').waitFor({ timeout: 20_000 });
    const [download] = await Promise.all([page.waitForEvent('download'), outputs.getByRole('button', { name: 'Download metrics.json' }).click()]);
    expect(await readFile((await download.path())!, 'utf8')).toBe('{"loss": 0.125}\n');

    // The charge, line by line, once the ledger billed it.
    await page.getByRole('table', { name: 'Charge lines' }).waitFor({ timeout: 30_000 });
    expect(await page.getByRole('table', { name: 'Charge lines' }).locator('tfoot').innerText()).toMatch(/Total/);
    await check(page, 'job');

    // Times are the viewer's, UTC on hover.
    expect(await page.locator('time').first().getAttribute('title')).toMatch(/UTC$/);

    // Readable on a narrow screen too.
    await page.setViewportSize({ width: 390, height: 844 });
    await check(page, 'job-narrow');
    await context.close();
  }, 180_000);

  it('filters, groups and pages the jobs on the server, exports CSV, and opens a job with the keyboard alone', async () => {
    const { context, page } = await loggedIn(browser, net.url, net.apiKey);
    await page.locator(`tr[data-job="${jobId}"]`).waitFor();
    await page.getByRole('list', { name: 'Jobs per state' }).getByRole('button', { name: /completed/ }).click();
    await page.locator(`tr[data-job="${jobId}"]`).waitFor();
    await page.getByRole('textbox', { name: 'Node' }).fill('node-nowhere');
    await page.getByText('No job matches.').waitFor();
    await page.getByRole('button', { name: 'Clear' }).click();
    const [csv] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Export CSV' }).click()]);
    const text = await readFile((await csv.path())!, 'utf8');
    expect(text.split('\n')[0]).toBe('jobId,team,name,state,outcome,gpus,gpuModel,nodeId,submittedAt,updatedAt');
    expect(text).toContain(`${jobId},${net.team},console-watch,completed,completed,1,,node-1,`);
    await check(page, 'jobs');
    // Keyboard only: Tab reaches the job's link (every stop on the way visible; axe checks their names), Enter opens it.
    await page.locator('body').click({ position: { x: 1, y: 1 } });
    const stops: string[] = [];
    for (let i = 0; i < 80; i++) {
      await page.keyboard.press('Tab');
      const el = page.locator(':focus');
      if ((await el.count()) === 0) continue;
      const box = await el.boundingBox();
      const focused = { text: (await el.textContent()) ?? '', visible: box !== null && box.width > 0 && box.height > 0, href: (await el.getAttribute('href')) ?? '' };
      expect(focused.visible).toBe(true);
      stops.push(focused.text);
      if (focused.href.endsWith(`/jobs/${jobId}`)) break;
    }
    expect(stops.at(-1)).toContain(jobId);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: new RegExp(jobId) }).waitFor();
    await context.close();
  }, 60_000);

  it('a tab that holds its key asks for the first page of jobs before the console\'s script has run, once, and shows it', async () => {
    const { context, page } = await loggedIn(browser, net.url, net.apiKey);
    await page.locator(`tr[data-job="${jobId}"]`).waitFor();
    await page.reload();
    await page.locator(`tr[data-job="${jobId}"]`).waitFor();
    const seen = await page.evaluate(() => ({
      asked: performance.getEntriesByType('resource').filter((e) => e.name.includes('/v1/jobs?')).map((e) => ({ name: new URL(e.name).pathname + new URL(e.name).search, start: e.startTime })),
      boot: performance.getEntriesByName('gpunet:boot')[0]?.startTime,
    }));
    expect(seen.asked).toEqual([{ name: '/v1/jobs?limit=50', start: expect.any(Number) }]);
    expect(seen.asked[0]!.start).toBeLessThan(seen.boot!);
    // Elsewhere in the console nothing is asked early: the page asks for what it shows.
    await page.goto(`${net.url}/console/queue`);
    await page.getByRole('table', { name: 'Nodes' }).waitFor();
    expect(await page.evaluate(() => performance.getEntriesByName('gpunet:early').length)).toBe(0);
    await context.close();
  }, 60_000);

  it('shows the queue, the free GPUs per model for 24 h as a chart, and the nodes', async () => {
    const { context, page } = await loggedIn(browser, net.url, net.apiKey);
    await page.getByRole('link', { name: 'Queue & capacity' }).click();
    await page.locator('.chart canvas').waitFor({ timeout: 20_000 });
    await page.getByRole('table', { name: 'Nodes' }).getByText('node-1').waitFor();
    // The network's recent quote accuracy, as `gpunet capacity` prints it.
    const quotes = page.getByRole('table', { name: 'Quote accuracy' });
    await quotes.getByRole('rowheader', { name: /Starts/ }).waitFor();
    expect(await quotes.getByRole('row', { name: /Deadlines met/ }).innerText()).toMatch(/Deadlines met\s+(no job with a deadline ended|\d+ of \d+)/);
    await check(page, 'queue');
    await context.close();
  }, 60_000);

  it('refuses a producer key what its role may not do, and shows the API\'s error with its fix', async () => {
    const { context, page } = await loggedIn(browser, net.url, net.apiKey);
    // The nav shows only what the role may do: no audit record for a producer, and the API refuses it.
    const refused = await page.evaluate(async (key) => (await fetch('/v1/audit/queries', { headers: { Authorization: `Bearer ${key}` } })).status, net.apiKey);
    expect(refused).toBe(403);
    await page.getByRole('link', { name: 'Prices' }).click();
    await page.getByLabel('GPU model').fill('sim-gpu');
    await page.getByLabel('Rate per GPU-hour').fill('2.50');
    await page.getByRole('button', { name: 'Publish' }).click();
    const alert = page.getByRole('alert');
    await alert.waitFor();
    expect(await alert.innerText()).toMatch(/403 forbidden.*needs a key with role billing/s);
    await check(page, 'prices-refused');
    // Invoices are billing's (and a team's admin and compliance): not in a producer's nav, and refused when opened directly.
    expect(await page.getByRole('link', { name: 'Invoices' }).count()).toBe(0);
    await page.goto(`${net.url}/console/invoices`);
    const invoicesRefused = page.getByRole('alert');
    await invoicesRefused.waitFor();
    expect(await invoicesRefused.innerText()).toMatch(/403 forbidden.*may not do invoices:read.*role compliance or billing or admin/s);
    await context.close();
  }, 60_000);

  it('a compliance key sees the chain verified, runs an audit query and finds it in the record of audit queries, and lists jobs by team', async () => {
    const { context, page } = await loggedIn(browser, net.url, keys.compliance);
    await page.getByRole('link', { name: 'Audit' }).click();
    // The chain's status: verified up to the head on opening; "Verify now" walks the whole store again.
    const chain = page.getByTestId('chain-status');
    await chain.and(page.locator('[data-verified="true"]')).waitFor({ timeout: 20_000 });
    expect(await chain.innerText()).toMatch(/Verified up to position \d+[\s\S]*latest digest #\d+ covers position \d+/);
    await page.getByRole('button', { name: 'Verify now' }).click();
    await page.getByRole('button', { name: 'Verify now' }).and(page.locator(':enabled')).waitFor();
    expect(await chain.getAttribute('data-verified')).toBe('true');
    expect(await chain.innerText()).toMatch(/walked the whole store/);
    await page.getByLabel('Outcome').selectOption('completed');
    await page.getByRole('button', { name: 'Run audit query' }).click();
    const recordedAs = await page.getByTestId('recorded-as').innerText();
    await page.getByRole('table', { name: 'Audited jobs' }).getByText(jobId).waitFor();
    const record = page.locator(`tr[data-event="${recordedAs}"]`);
    await record.waitFor({ timeout: 20_000 });
    expect(await record.innerText()).toMatch(/compliance[\s\S]*AuditJobs[\s\S]*outcome=completed[\s\S]*answered/);
    await check(page, 'audit');
    // Jobs of every team, grouped by team with counts, then filtered to one team.
    await page.getByRole('link', { name: 'Jobs' }).click();
    await page.getByRole('group', { name: 'Group by' }).getByRole('button', { name: 'team' }).click();
    const teamButton = page.getByRole('list', { name: 'Jobs per team' }).locator(`button[data-team="${net.team}"]`);
    await teamButton.waitFor();
    expect(Number((await teamButton.innerText()).replace(net.team, '').trim())).toBeGreaterThanOrEqual(1);
    await teamButton.click();
    await page.getByRole('textbox', { name: 'Team' }).and(page.locator(`[value="${net.team}"]`)).waitFor();
    await page.locator(`tr[data-job="${jobId}"]`).getByText(net.team).waitFor();
    await page.getByRole('textbox', { name: 'Team' }).fill('team-nobody');
    await page.getByText('No job matches.').waitFor();
    await page.getByRole('textbox', { name: 'Team' }).fill(net.team);
    await page.locator(`tr[data-job="${jobId}"]`).waitFor();
    await check(page, 'jobs-by-team');
    await context.close();
    // A compliance officer of another team opens the job from the table: its facts show, and the read is in the record of audit queries.
    const created = await fetch(`${net.url}/v1/teams`, { method: 'POST', headers: { Authorization: `Bearer ${net.adminApiKey}`, 'Content-Type': 'application/json' }, body: JSON.stringify({ team: 'team-audit' }) });
    expect([201, 409]).toContain(created.status);
    const outside = await loggedIn(browser, net.url, await issueKey('compliance', 'team-audit'));
    await outside.page.getByRole('textbox', { name: 'Team' }).fill(net.team);
    await outside.page.locator(`tr[data-job="${jobId}"]`).getByRole('link').first().click();
    await outside.page.getByRole('heading', { name: new RegExp(jobId) }).waitFor();
    const asked = await outside.page.evaluate(async (key) => (await (await fetch('/v1/audit/queries?limit=20', { headers: { Authorization: `Bearer ${key}` } })).json()) as { queries: { query: string; parameters: { jobId?: string } }[] }, keys.compliance);
    expect(asked.queries.filter((q) => q.query === 'AuditJob' && q.parameters.jobId === jobId).length).toBeGreaterThanOrEqual(1);
    await outside.context.close();
  }, 60_000);

  it('a billing key reads the month\'s invoice with its lines and their events, replays it, runs a what-if, downloads its dispute bundle, and publishes a price list', async () => {
    const { context, page } = await loggedIn(browser, net.url, keys.billing);
    await page.getByRole('link', { name: 'Invoices' }).click();
    const invoices = page.getByRole('table', { name: 'Invoices' });
    await invoices.getByRole('button').first().click();
    const lines = page.getByRole('table', { name: /^Lines of / });
    await lines.getByRole('link', { name: jobId }).waitFor({ timeout: 20_000 });
    await check(page, 'invoices');

    // Replayed from the event store: identical, line by line.
    const invoiceId = (await invoices.getByRole('button').first().innerText()).trim();
    await page.getByRole('button', { name: 'Replay this invoice' }).click();
    const summary = page.getByTestId('replay-summary');
    await summary.waitFor({ timeout: 20_000 });
    expect(await summary.innerText()).toMatch(/identical: \d+ line\(s\)/);
    const replayed = page.getByRole('table', { name: `Replay of ${invoiceId}` });
    expect(await replayed.locator('tbody tr').count()).toBeGreaterThan(0);
    expect(await replayed.locator('tbody tr:not([data-status="same"])').count()).toBe(0);
    // A what-if price list: other totals beside the recorded ones, the lines highlighted.
    await page.getByLabel('sim-gpu: EUR per GPU-hour').fill('900.00');
    await page.getByRole('button', { name: 'Run what-if' }).click();
    await page.getByRole('table', { name: 'What-if totals' }).waitFor({ timeout: 20_000 });
    expect(await summary.innerText()).toMatch(/^what-if \(nothing written\)/);
    const [, recorded, whatIf] = await page.getByRole('table', { name: 'What-if totals' }).locator('tbody tr').first().locator('td').allInnerTexts();
    expect(whatIf).not.toBe(recorded);
    expect(await page.getByRole('table', { name: `What-if lines of ${invoiceId}` }).locator('tbody tr[data-status="changed"]').count()).toBeGreaterThan(0);
    await check(page, 'invoices-replay');
    // The dispute bundle downloads as the file `gpunet verify --bundle` checks offline.
    const [bundle] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download dispute bundle' }).click()]);
    expect(bundle.suggestedFilename()).toBe(`${invoiceId}.bundle.json`);
    const saved = join(dir, bundle.suggestedFilename());
    await bundle.saveAs(saved);
    expect(await gpunet(['verify', '--bundle', saved], dir)).toMatch(new RegExp(`holds: invoice ${invoiceId}`));

    await page.getByRole('link', { name: 'Prices' }).click();
    await page.getByLabel('GPU model').fill('sim-gpu');
    await page.getByLabel('Rate per GPU-hour').fill('2.50');
    await page.getByRole('button', { name: 'Publish' }).click();
    await page.getByText(/Published version \d+/).waitFor();
    await page.getByText('EUR 2.500000').first().waitFor();
    await check(page, 'prices');
    await context.close();
  }, 60_000);

  it('a billing key sets the team\'s monthly budget; a producer of the team sees it with the month\'s figures and is refused changing it', async () => {
    const billing = await loggedIn(browser, net.url, keys.billing);
    await billing.page.getByRole('link', { name: 'Budgets & quotas' }).click();
    await billing.page.getByText('No budget').waitFor();
    await billing.page.getByLabel('Monthly amount').fill('5000.00');
    await billing.page.getByLabel('Past the budget').selectOption('hold');
    await billing.page.getByRole('button', { name: 'Set', exact: true }).click();
    await billing.page.getByText(`Budget of ${net.team} set.`).waitFor();
    const table = billing.page.getByRole('table', { name: new RegExp(`^Budget of ${net.team}`) });
    await table.waitFor();
    expect(await table.innerText()).toMatch(/Monthly[\s\S]*5,000\.00[\s\S]*held in the queue/);
    await check(billing.page, 'budgets');
    await billing.context.close();

    const producer = await loggedIn(browser, net.url, net.apiKey);
    await producer.page.getByRole('link', { name: 'Budgets & quotas' }).click();
    const seen = producer.page.getByRole('table', { name: new RegExp(`^Budget of ${net.team}`) });
    await seen.waitFor();
    expect(await seen.innerText()).toMatch(/5,000\.00/);
    await producer.page.getByLabel('Monthly amount').fill('999999.00');
    await producer.page.getByRole('button', { name: 'Set', exact: true }).click();
    const alert = producer.page.getByRole('alert');
    await alert.waitFor();
    expect(await alert.innerText()).toMatch(/403/);
    // Nothing changed: the budget the API reports is still billing's.
    const after = await producer.page.evaluate(async (key) => (await (await fetch('/v1/budgets', { headers: { Authorization: `Bearer ${key}` } })).json()) as { budget?: { monthlyMicros: number } }, net.apiKey);
    expect(after.budget?.monthlyMicros).toBe(5_000_000_000);
    await producer.context.close();
  }, 90_000);
});
