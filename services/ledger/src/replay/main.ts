/**
 * The ledger's replay tool as a process, for `gpunet replay`, `gpunet verify` and
 * `gpunet dispute-bundle` (libs/ may not import a service; docs/decisions/0006):
 *
 *   node dist/services/ledger/src/replay/main.js '{"command":"replay-invoice","storeUrl":"sqlite:…","invoiceId":"inv-…"}'
 *
 * Commands: `replay-invoice` (`invoiceId`, optional `pricesFile`, `invoiceFile`), `replay-job`
 * (`jobId`), `dispute-bundle` (`invoiceId`, `out`, optional `invoiceFile`), `verify` (the store's
 * hash chain), `verify-bundle` (`file`; opens no store and no connection). It reads the store and
 * never writes it; `dispute-bundle` writes only its file. The chain key comes from
 * `GPUNET_CHAIN_KEY`. Stdout gets exactly one JSON document: `{ exitCode, result, text }`, or
 * `{ error: { code, message, issues } }` with exit 2 (bad request, unknown invoice) or 1.
 */
import { InvoiceBody, type InvoiceFinalized } from '#contracts';
import { GpunetError, IssuesError } from '#errors';
import { openEventStore, type EventStore, type ReadAllFilter, type RecordedEvent } from '#event-store';
import { readFile, writeFile } from 'node:fs/promises';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { BILLING_EVENT_TYPES, deriveInvoice, parseInvoiceId } from '../domain/index.js';
import { buildBundle, verifyBundle } from './bundle.js';
import { renderInvoiceReplay, replayInvoice, whatIfPrices } from './invoice-replay.js';
import { renderJobReplay, replayJob } from './job-replay.js';

const Request = z.discriminatedUnion('command', [
  z.object({ command: z.literal('replay-invoice'), storeUrl: z.string().min(1), invoiceId: z.string().min(1), pricesFile: z.string().optional(), invoiceFile: z.string().optional() }),
  z.object({ command: z.literal('replay-job'), storeUrl: z.string().min(1), jobId: z.string().min(1) }),
  z.object({ command: z.literal('dispute-bundle'), storeUrl: z.string().min(1), invoiceId: z.string().min(1), out: z.string().min(1), invoiceFile: z.string().optional() }),
  z.object({ command: z.literal('verify'), storeUrl: z.string().min(1) }),
  z.object({ command: z.literal('verify-bundle'), file: z.string().min(1) }),
]);
type Request = z.output<typeof Request>;

interface Output {
  exitCode: number;
  result: unknown;
  text: string[];
}

/** A request the tool cannot do as asked (unknown invoice, unreadable file). Exit 2. */
class ToolUsageError extends IssuesError {
  readonly code = 'usage';
}

const PAGE = 5_000;

/** Every event matching `filter` up to `toPosition`, in position order. */
async function readUpTo(store: EventStore, toPosition: bigint, filter: ReadAllFilter = {}): Promise<RecordedEvent[]> {
  const all: RecordedEvent[] = [];
  let from = 0n;
  for (;;) {
    const page = await store.readAll({ fromPosition: from, toPosition, maxCount: PAGE, filter });
    all.push(...page);
    if (page.length < PAGE) return all;
    from = page[page.length - 1]!.position;
  }
}

async function readDoc(path: string, flag: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    throw new ToolUsageError(`cannot read ${path}`, [{ path: flag, message: (err as Error).message, fix: 'give the path of a readable file' }]);
  }
  try {
    return parseYaml(text) as unknown;
  } catch (err) {
    throw new ToolUsageError(`${path} is neither JSON nor YAML`, [{ path: flag, message: (err as Error).message, fix: 'give a JSON or YAML document' }]);
  }
}

/** The invoice to replay: the one its InvoiceFinalized recorded, else the one in `invoiceFile`. */
async function recordedInvoice(store: EventStore, head: bigint, invoiceId: string, invoiceFile?: string): Promise<{ invoice: InvoiceBody; finalized?: RecordedEvent } | undefined> {
  const finalized = (await readUpTo(store, head, { types: ['InvoiceFinalized'] })).find((e) => (e.data as InvoiceFinalized).invoice.invoiceId === invoiceId);
  if (finalized) return { invoice: (finalized.data as InvoiceFinalized).invoice, finalized };
  if (!invoiceFile) return undefined;
  const parsed = InvoiceBody.safeParse(await readDoc(invoiceFile, '--invoice'));
  if (!parsed.success) {
    throw new ToolUsageError(`${invoiceFile} is not an invoice`, parsed.error.issues.map((i) => ({ path: `--invoice ${i.path.join('.')}`, message: i.message, fix: 'pass the invoice as `gpunet invoices show <id> --json` prints it' })));
  }
  if (parsed.data.invoiceId !== invoiceId) throw new ToolUsageError(`${invoiceFile} holds invoice ${parsed.data.invoiceId}, not ${invoiceId}`, [{ path: '--invoice', message: 'another invoice', fix: `pass the file of ${invoiceId}` }]);
  return { invoice: parsed.data };
}

function invoiceIdChecked(invoiceId: string): void {
  if (!/^inv-[A-Za-z0-9][A-Za-z0-9_-]{0,63}-\d{4}-(0[1-9]|1[0-2])$/.test(invoiceId)) {
    throw new ToolUsageError(`\`${invoiceId}\` is not an invoice id`, [{ path: 'invoice-id', message: 'must be `inv-<team>-<YYYY-MM>`', fix: 'copy it from `gpunet invoices list`, e.g. `inv-team-ml-2025-06`' }]);
  }
}

async function replayInvoiceCommand(store: EventStore, r: Extract<Request, { command: 'replay-invoice' }>): Promise<Output> {
  invoiceIdChecked(r.invoiceId);
  const head = await store.headPosition();
  const recorded = await recordedInvoice(store, head, r.invoiceId, r.invoiceFile);
  if (!recorded) {
    throw new ToolUsageError(`invoice ${r.invoiceId} is not finalized, so the store records no copy of it to replay against`, [
      { path: '--invoice', message: 'a draft is derived afresh on every read', fix: `pass the copy you hold, e.g. from \`gpunet invoice show ${r.invoiceId} --json > FILE\`: \`gpunet replay invoice ${r.invoiceId} --invoice FILE\`` },
    ]);
  }
  const asOf = BigInt(recorded.invoice.derivedAtPosition);
  if (asOf > head) throw new ToolUsageError(`invoice ${r.invoiceId} was derived at position ${asOf}, beyond this store's head ${head}`, [{ path: '--store', message: 'another or an older store', fix: 'point --store at the store the invoice came from' }]);
  const prices = r.pricesFile ? whatIfPrices(await readDoc(r.pricesFile, '--prices')) : undefined;
  const events = await readUpTo(store, asOf, { types: BILLING_EVENT_TYPES });
  const replay = replayInvoice(events, recorded.invoice, prices ? { prices } : {});
  return { exitCode: replay.identical ? 0 : 1, result: replay, text: renderInvoiceReplay(replay) };
}

async function replayJobCommand(store: EventStore, r: Extract<Request, { command: 'replay-job' }>): Promise<Output> {
  const head = await store.headPosition();
  const events = await readUpTo(store, head, { types: [...BILLING_EVENT_TYPES, 'UsageRecorded'] });
  if (!events.some((e) => e.type === 'JobSubmitted' && (e.data as { jobId: string }).jobId === r.jobId)) {
    throw new ToolUsageError(`no job ${r.jobId} in the store (as of position ${head})`, [{ path: 'job-id', message: 'unknown job', fix: 'check the id with `gpunet audit jobs`' }]);
  }
  const replay = replayJob(events, r.jobId, head);
  return { exitCode: replay.identical ? 0 : 1, result: replay, text: renderJobReplay(replay) };
}

async function disputeBundleCommand(store: EventStore, r: Extract<Request, { command: 'dispute-bundle' }>, chainKeyed: boolean): Promise<Output> {
  invoiceIdChecked(r.invoiceId);
  const head = await store.headPosition();
  const recorded = await recordedInvoice(store, head, r.invoiceId, r.invoiceFile);
  const { team, month } = parseInvoiceId(r.invoiceId);
  const billing = await readUpTo(store, head, { types: BILLING_EVENT_TYPES });
  const invoice = recorded?.invoice ?? deriveInvoice(billing, { team, month, asOf: head });
  if (invoice.lines.length === 0 && !recorded) {
    throw new ToolUsageError(`invoice ${r.invoiceId} has no lines (as of position ${head}): nothing to dispute`, [{ path: 'invoice-id', message: 'no billed attempt of that team in that month', fix: 'check the id with `gpunet invoices list`' }]);
  }
  // Streams to carry whole: those of every event a line names, the price lists, and the team's
  // finalized invoices and credit notes (they decide where late lines go).
  const streamOf = new Map(billing.map((e) => [e.eventId, e.streamId]));
  const streams = new Set<string>();
  for (const id of invoice.lines.flatMap((l) => l.eventIds)) {
    const s = streamOf.get(id);
    if (!s) throw new Error(`event ${id} named by invoice ${r.invoiceId} is not in the store up to position ${head}`);
    streams.add(s);
  }
  for (const e of billing) {
    if (e.type === 'PriceListPublished') streams.add(e.streamId);
    if (e.type === 'InvoiceFinalized' && (e.data as InvoiceFinalized).invoice.team === team) streams.add(e.streamId);
    if (e.type === 'CreditNoteIssued' && (e.data as { team: string }).team === team) streams.add(e.streamId);
  }
  if (recorded?.finalized) streams.add(recorded.finalized.streamId);
  const whole = await Promise.all([...streams].map((s) => store.readStream(s)));
  const bundle = buildBundle({
    invoice,
    invoiceStatus: recorded?.finalized ? 'finalized' : 'draft',
    ...(recorded?.finalized ? { finalizedEventId: recorded.finalized.eventId } : {}),
    streams: whole,
    chainKeyed,
    createdAt: new Date().toISOString(),
  });
  await writeFile(r.out, `${JSON.stringify(bundle, null, 2)}\n`);
  const events = bundle.streams.reduce((n, s) => n + s.events.length, 0);
  return {
    exitCode: 0,
    result: { file: r.out, invoiceId: invoice.invoiceId, invoiceStatus: bundle.invoiceStatus, lines: invoice.lines.length, streams: bundle.streams.length, events, contributing: bundle.contributingEventIds.length },
    text: [
      `wrote ${r.out}: invoice ${invoice.invoiceId} (${bundle.invoiceStatus}, ${invoice.lines.length} line(s), derived at position ${invoice.derivedAtPosition}), ` +
        `${bundle.contributingEventIds.length} contributing event(s) in ${bundle.streams.length} whole stream(s) of ${events} event(s) with their heads`,
      `check it anywhere, offline: gpunet verify --bundle ${r.out}`,
    ],
  };
}

async function verifyCommand(store: EventStore): Promise<Output> {
  const v = await store.verify();
  if (v.ok) return { exitCode: 0, result: { ...v, headPosition: v.headPosition.toString() }, text: [`the hash chain holds: ${v.events} event(s) in ${v.streams} stream(s), head position ${v.headPosition}`] };
  return {
    exitCode: 1,
    result: { ...v, firstBadPosition: v.firstBadPosition.toString() },
    text: [`the hash chain is broken at position ${v.firstBadPosition} in stream ${v.streamId}: ${v.reason}`, `(${v.events} event(s) checked before it)`],
  };
}

async function verifyBundleCommand(r: Extract<Request, { command: 'verify-bundle' }>, chainKey: string | undefined): Promise<Output> {
  const v = verifyBundle(await readDoc(r.file, '--bundle'), chainKey);
  const text = v.ok
    ? [`bundle ${r.file} holds: invoice ${v.invoiceId}, ${v.events} event(s) in ${v.streams} stream(s), every chain recomputed to its head, the invoice re-derived byte for byte`, `proves: ${v.proves}`]
    : [`bundle ${r.file} does NOT hold:`, ...v.problems.map((p) => `  ${p.check}: ${p.message}`)];
  return { exitCode: v.ok ? 0 : 1, result: { ...v, replay: undefined }, text };
}

async function run(argv: readonly string[]): Promise<{ doc: unknown; exit: number }> {
  let request: Request;
  try {
    request = Request.parse(JSON.parse(argv[0] ?? ''));
  } catch (err) {
    return { doc: { error: { code: 'usage', message: `the argument must be a JSON request: ${(err as Error).message}`, issues: [] } }, exit: 2 };
  }
  const chainKey = process.env.GPUNET_CHAIN_KEY || undefined;
  try {
    if (request.command === 'verify-bundle') return done(await verifyBundleCommand(request, chainKey));
    const store = await openEventStore(request.storeUrl, chainKey ? { chainKey } : {});
    try {
      switch (request.command) {
        case 'replay-invoice':
          return done(await replayInvoiceCommand(store, request));
        case 'replay-job':
          return done(await replayJobCommand(store, request));
        case 'dispute-bundle':
          return done(await disputeBundleCommand(store, request, chainKey !== undefined));
        case 'verify':
          return done(await verifyCommand(store));
      }
    } finally {
      await store.close();
    }
  } catch (err) {
    const issues = err instanceof IssuesError ? err.issues.map((i) => ({ ...i })) : [];
    const code = err instanceof GpunetError ? err.code : 'internal';
    const usage = err instanceof ToolUsageError || (err instanceof IssuesError && code === 'validation_failed');
    return { doc: { error: { code, message: (err as Error).message, issues } }, exit: usage ? 2 : 1 };
  }
}

function done(o: Output): { doc: unknown; exit: number } {
  return { doc: o, exit: o.exitCode };
}

const { doc, exit } = await run(process.argv.slice(2));
process.stdout.write(`${JSON.stringify(doc, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v))}\n`);
process.exitCode = exit;
