/**
 * `gpunet prices list` and `gpunet prices publish FILE`: the ledger's versioned price lists, per
 * GPU model per hour in integer micro-units. Publishing needs an API key with role `billing`.
 */
import { formatIssues, PublishPriceList, type ListPriceListsReply, type PriceListPublished } from '#contracts';
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import type { CommandContext } from '../context.js';
import { UsageError } from '../errors.js';
import { EXIT, type ExitCode } from '../exit-codes.js';
import { formatMicros, table } from '../format.js';

/** Every version, oldest first, the one in force now marked. Pure. */
export function renderPriceLists(reply: ListPriceListsReply): string {
  if (reply.versions.length === 0) return 'no price list is published';
  const rows = reply.versions.flatMap((v) => {
    const mark = v.version === reply.current ? '*' : '';
    const models: [string, number][] = [...Object.entries(v.ratesMicrosPerGpuHour).sort(([a], [b]) => (a < b ? -1 : 1))];
    if (v.defaultRateMicrosPerGpuHour !== undefined) models.push(['(default)', v.defaultRateMicrosPerGpuHour]);
    return models.map(([model, rate], i) => [
      i === 0 ? `${v.version}${mark}` : '',
      i === 0 ? v.effectiveFrom : '',
      model,
      `${formatMicros(rate)} ${v.currency}`,
      i === 0 && v.minimumChargeMicros !== undefined ? `${formatMicros(v.minimumChargeMicros)} ${v.currency}` : '',
      i === 0 ? (v.publishedBy ?? '(configuration)') : '',
    ]);
  });
  return [table(['VERSION', 'EFFECTIVE FROM (UTC)', 'GPU MODEL', 'PER GPU-HOUR', 'MINIMUM/LINE', 'PUBLISHED BY'], rows, ['l', 'l', 'l', 'r', 'r', 'l']), '* in force now'].join('\n');
}

export async function pricesList(ctx: CommandContext): Promise<ExitCode> {
  const reply = await (await ctx.client()).priceLists();
  ctx.out.doc(reply);
  ctx.out.line(renderPriceLists(reply));
  return EXIT.ok;
}

/**
 * Reads a price list file (YAML or JSON): `currency`, `ratesMicrosPerGpuHour`, and optionally
 * `effectiveFrom`, `defaultRateMicrosPerGpuHour`, `minimumChargeMicros`. Errors name the field.
 */
export async function readPriceListFile(cwd: string, file: string): Promise<PublishPriceList> {
  const path = resolve(cwd, file);
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    throw new UsageError(`cannot read the price list ${path}: ${(err as Error).message}`, [{ path: 'FILE', message: 'cannot be read', fix: 'give the path of a YAML or JSON price list' }]);
  }
  let raw: unknown;
  try {
    raw = parseYaml(text);
  } catch (err) {
    throw new UsageError(`${path} is not YAML or JSON: ${(err as Error).message}`, [{ path: 'FILE', message: 'is not YAML or JSON', fix: 'see `gpunet prices publish --help` for the format' }]);
  }
  const parsed = PublishPriceList.safeParse(normalizeTimes(raw));
  if (!parsed.success) {
    const issues = formatIssues(parsed.error);
    throw new UsageError(`invalid price list ${path}: ${issues.map((i) => i.path).join(', ')}`, issues);
  }
  return parsed.data;
}

/** YAML reads an unquoted timestamp as text already (yaml 2, core schema); keep any Date as ISO text. */
function normalizeTimes(raw: unknown): unknown {
  if (typeof raw !== 'object' || raw === null) return raw;
  const out: Record<string, unknown> = { ...(raw as Record<string, unknown>) };
  if (out.effectiveFrom instanceof Date) out.effectiveFrom = out.effectiveFrom.toISOString();
  return out;
}

/** The recorded version, in a line. Pure. */
export function renderPublished(p: PriceListPublished): string {
  return `published price list version ${p.version} (${p.currency}), in force from ${p.effectiveFrom}`;
}

export async function pricesPublish(ctx: CommandContext, file: string): Promise<ExitCode> {
  const list = await readPriceListFile(ctx.io.cwd, file);
  const published = await (await ctx.client()).publishPriceList(list);
  ctx.out.doc(published);
  ctx.out.line(renderPublished(published));
  return EXIT.ok;
}
