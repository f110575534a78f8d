/**
 * Debian's Chromium driven by playwright-core, for the console's browser tests and bench.
 * No browser is downloaded: `/usr/bin/chromium` (apt-get install chromium; `npm test`'s
 * prerequisites install it when run as root). The flags keep it off the network on a closed machine.
 */
import { existsSync } from 'node:fs';
import { mkdir, readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';

export const CHROMIUM = process.env.GPUNET_CHROMIUM ?? '/usr/bin/chromium';

/** A headless Chromium (playwright gives every launch a fresh temporary profile), and how to close it. */
export async function launchChromium(): Promise<{ browser: Browser; close: () => Promise<void> }> {
  if (!existsSync(CHROMIUM)) throw new Error(`no Chromium at ${CHROMIUM}: install it with \`apt-get install -y chromium\` (as root), or set GPUNET_CHROMIUM`);
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  return {
    browser,
    close: () => browser.close(),
  };
}

/** Logs in to the console at `url` with `apiKey` in a new context of its own; resolves once the page after login shows. */
export async function loggedIn(browser: Browser, url: string, apiKey: string, viewport = { width: 1280, height: 800 }): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({ viewport, acceptDownloads: true, timezoneId: 'Europe/Berlin' });
  const page = await context.newPage();
  await page.goto(`${url}/console/`);
  await page.getByLabel('API key').fill(apiKey);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.getByRole('navigation', { name: 'Pages', exact: true }).waitFor();
  return { context, page };
}

export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: string[] }[];
}

let axeSource: string | undefined;

/** Runs axe-core in the page; returns the serious and critical violations (WCAG 2 A/AA rules). */
export async function seriousA11yViolations(page: Page): Promise<AxeViolation[]> {
  axeSource ??= await readFile(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
  await page.addScriptTag({ content: axeSource });
  const violations = await page.evaluate(async () => {
    const axe = (globalThis as unknown as { axe: { run: (ctx: unknown, opts: unknown) => Promise<{ violations: AxeViolation[] }> } }).axe;
    const result = await axe.run('html', { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] } });
    return result.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => ({ target: n.target })) }));
  });
  return violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
}

/** Where screenshots go: GPUNET_SCREENSHOT_DIR (e.g. docs/console to refresh the kept ones), else a temp dir. */
export async function screenshotDir(): Promise<string> {
  const dir = process.env.GPUNET_SCREENSHOT_DIR ?? join(tmpdir(), 'gpunet-console-screenshots');
  await mkdir(dir, { recursive: true });
  return dir;
}
