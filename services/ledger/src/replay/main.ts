/**
 * The ledger's replay tool as a process, for `gpunet replay`, `gpunet verify` and
 * `gpunet dispute-bundle` (libs/ may not import a service; docs/decisions/0006):
 *
 *   node dist/services/ledger/src/replay/main.js '{"command":"replay-invoice","storeUrl":"sqlite:…","invoiceId":"inv-…"}'
 *
 * Commands: `replay-invoice` (`invoiceId`, optional `pricesFile`, `invoiceFile`), `replay-job`
 * (`jobId`), `dispute-bundle` (`invoiceId`, `out`, optional `invoiceFile`), `verify` (the store's
 * hash chain and its signed heads), `verify-bundle` (`file`; opens no store and no connection),
 * `export-digests` (`dir`: one JSON file per signed digest). Every command that reads a store
 * first verifies it: the hash chain, and with `publicKey` every signed digest the store records
 * and every one in `digestsDir` (exported earlier); a store that does not verify is named at its
 * first bad position and not replayed. It reads the store and never writes it; `dispute-bundle`
 * and `export-digests` write only their files. The chain key comes from `GPUNET_CHAIN_KEY`. Stdout gets exactly one JSON document: `{ exitCode, result, text }`, or
 * `{ error: { code, message, issues } }` with exit 2 (bad request, unknown invoice) or 1.
 */
import { ChainHeadsSigned, InvoiceBody, type EventData, type InvoiceFinalized } from '#contracts';
import { GpunetError, IssuesError, NotFoundError } from '#errors';
import { openEventStore, type EventStore, type RecordedEvent } from '#event-store';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { BILLING_EVENT_TYPES, nodesOfAttempts, placementNodeStreamId } from '../domain/index.js';
import { linkProblem, signatureProblem } from '../digests/digest.js';
import { readDigests, verifyStoreDigests, type DigestCheck } from '../digests/store-digests.js';
import { verifyBundle } from './bundle.js';
import { disputeBundleOf, readUpTo } from './store-replay.js';
import { renderInvoiceReplay, replayInvoice, whatIfPrices } from './invoice-replay.js';
import { renderJobReplay, replayJob, replayJobEnd } from './job-replay.js';

/** What a command that reads a store checks it against first. */
const Trust = { publicKey: z.string().min(1).optional(), digestsDir: z.string().min(1).optional() };

const Request = z.discriminatedUnion('command', [
  z.object({ command: z.literal('replay-invoice'), storeUrl: z.string().min(1), invoiceId: z.string().min(1), pricesFile: z.string().optional(), invoiceFile: z.string().optional(), ...Trust }),
  z.object({ command: z.literal('replay-job'), storeUrl: z.string().min(1), jobId: z.string().min(1), ...Trust }),
  z.object({ command: z.literal('dispute-bundle'), storeUrl: z.string().min(1), invoiceId: z.string().min(1), out: z.string().min(1), invoiceFile: z.string().optional(), ...Trust }),
  z.object({ command: z.literal('verify'), storeUrl: z.string().min(1), ...Trust }),
  z.object({ command: z.literal('verify-bundle'), file: z.string().min(1), publicKey: z.string().min(1).optional() }),
  z.object({ command: z.literal('export-digests'), storeUrl: z.string().min(1), dir: z.string().min(1), publicKey: z.string().min(1).optional() }),
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

/** Digests exported earlier: every `*.json` file of `dir`, each one ChainHeadsSigned. */
async function readDigestDir(dir: string): Promise<ChainHeadsSigned[]> {
  let names: string[];
  try {
    names = (await readdir(dir)).filter((n) => n.endsWith('.json')).sort();
  } catch (err) {
    throw new ToolUsageError(`cannot read the digest directory ${dir}`, [{ path: '--digests', message: (err as Error).message, fix: 'give the directory `gpunet digests export DIR` wrote' }]);
  }
  if (names.length === 0) throw new ToolUsageError(`${dir} holds no digest (*.json)`, [{ path: '--digests', message: 'empty', fix: 'export digests first: `gpunet digests export DIR`' }]);
  const out: ChainHeadsSigned[] = [];
  for (const name of names) {
    const parsed = ChainHeadsSigned.safeParse(await readDoc(join(dir, name), '--digests'));
    if (!parsed.success) throw new ToolUsageError(`${join(dir, name)} is not a signed digest`, parsed.error.issues.map((i) => ({ path: `--digests ${name} ${i.path.join('.')}`, message: i.message, fix: 'keep only files written by `gpunet digests export` there' })));
    out.push(parsed.data);
  }
  return out;
}

/** The store verified before anything is derived from it: the chain, then (with a key) the signed heads. */
interface StoreCheck {
  ok: boolean;
  result: Record<string, unknown>;
  text: string[];
}

async function checkStore(store: EventStore, trust: { publicKey?: string; digestsDir?: string }): Promise<StoreCheck> {
  if (trust.digestsDir && !trust.publicKey) {
    throw new ToolUsageError('--digests needs the network public key to check the digests with', [{ path: '--public-key', message: 'missing', fix: 'pass `--public-key U…` (or a file holding it); `gpunet up` records it in state.json' }]);
  }
  const v = await store.verify();
  if (!v.ok) {
    return {
      ok: false,
      result: { verified: false, firstBadPosition: v.firstBadPosition.toString(), streamId: v.streamId, reason: v.reason, events: v.events },
      text: [`the hash chain is broken at position ${v.firstBadPosition} in stream ${v.streamId}: ${v.reason}`, `(${v.events} event(s) checked before it)`],
    };
  }
  const chain = `the hash chain holds: ${v.events} event(s) in ${v.streams} stream(s), head position ${v.headPosition}`;
  if (!trust.publicKey) {
    const digests = (await readDigests(store).catch(() => [])).length;
    return {
      ok: true,
      result: { verified: true, events: v.events, streams: v.streams, headPosition: v.headPosition.toString(), signatures: 'unchecked' },
      text: [chain, `signed heads not checked: no public key${digests > 0 ? ` (the store records ${digests} signed digest(s))` : ''}; pass --public-key, which \`gpunet up\` records for its network`],
    };
  }
  const exported = trust.digestsDir ? await readDigestDir(trust.digestsDir) : [];
  const d: DigestCheck = await verifyStoreDigests(store, { publicKey: trust.publicKey, exported });
  if (!d.ok) {
    return {
      ok: false,
      result: { verified: false, firstBadPosition: d.firstBadPosition.toString(), streamId: d.streamId, ...(d.revision !== undefined ? { revision: d.revision } : {}), reason: d.reason, events: v.events },
      text: [`the store does not match its signed heads at position ${d.firstBadPosition} in stream ${d.streamId}${d.revision !== undefined ? ` (revision ${d.revision})` : ''}: ${d.reason}`],
    };
  }
  const signed = d.latest
    ? `signed heads hold: ${d.digests} digest(s) checked${d.exported ? ` (${d.exported} exported earlier, every one still in the store)` : ''}, the latest #${d.latest.sequence} covering position ${d.latest.position} (signed ${d.latest.signedAt})`
    : 'signed heads: the store records no signed digest yet (`gpunet digests sign`)';
  return {
    ok: true,
    result: { verified: true, events: v.events, streams: v.streams, headPosition: v.headPosition.toString(), signatures: 'checked', digests: d.digests, exported: d.exported, ...(d.latest ? { latestDigest: d.latest } : {}), ...(d.unsignedAfter ? { unsignedAfter: d.unsignedAfter } : {}) },
    text: [chain, signed, ...(d.unsignedAfter ? [`events after position ${d.unsignedAfter} are not covered by a signature yet`] : [])],
  };
}

/** The output of a command refused because its store does not verify: exit 1, the first bad position named. */
function refused(what: string, c: StoreCheck): Output {
  return { exitCode: 1, result: { ...c.result, identical: false }, text: [`${what} refused: the store does not verify`, ...c.text] };
}

async function replayInvoiceCommand(store: EventStore, r: Extract<Request, { command: 'replay-invoice' }>): Promise<Output> {
  invoiceIdChecked(r.invoiceId);
  const checked = await checkStore(store, r);
  if (!checked.ok) return refused(`replay of invoice ${r.invoiceId}`, checked);
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
  return { exitCode: replay.identical ? 0 : 1, result: { ...replay, store: checked.result }, text: [...renderInvoiceReplay(replay), ...checked.text] };
}

async function replayJobCommand(store: EventStore, r: Extract<Request, { command: 'replay-job' }>): Promise<Output> {
  const checked = await checkStore(store, r);
  if (!checked.ok) return refused(`replay of job ${r.jobId}`, checked);
  const head = await store.headPosition();
  const events = await readUpTo(store, head, { types: [...BILLING_EVENT_TYPES, 'UsageRecorded'] });
  if (!events.some((e) => e.type === 'JobSubmitted' && (e.data as { jobId: string }).jobId === r.jobId)) {
    throw new ToolUsageError(`no job ${r.jobId} in the store (as of position ${head})`, [{ path: 'job-id', message: 'unknown job', fix: 'check the id with `gpunet audit jobs`' }]);
  }
  const billing = replayJob(events, r.jobId, head);
  // The job's end: every event naming it, and the NodeLost events of its nodes, up to the same head.
  const jobFacts = await readUpTo(store, head, { jobId: r.jobId });
  const losses: EventData<'NodeLost'>[] = [];
  for (const nodeId of nodesOfAttempts(jobFacts)) {
    for (const e of await store.readStream(placementNodeStreamId(nodeId))) if (e.type === 'NodeLost' && e.position <= head) losses.push(e.data as EventData<'NodeLost'>);
  }
  const ended = replayJobEnd(jobFacts, losses);
  const replay = { ...billing, ended, identical: billing.identical && ended.status !== 'changed' && ended.status !== 'not_derivable' };
  return { exitCode: replay.identical ? 0 : 1, result: { ...replay, store: checked.result }, text: [...renderJobReplay(replay), ...checked.text] };
}

async function disputeBundleCommand(store: EventStore, r: Extract<Request, { command: 'dispute-bundle' }>, chainKeyed: boolean): Promise<Output> {
  invoiceIdChecked(r.invoiceId);
  const checked = await checkStore(store, r);
  if (!checked.ok) return refused(`dispute bundle of invoice ${r.invoiceId}`, checked);
  const head = await store.headPosition();
  const recorded = await recordedInvoice(store, head, r.invoiceId, r.invoiceFile);
  const bundle = await disputeBundleOf(store, {
    invoiceId: r.invoiceId,
    head,
    ...(recorded ? { recorded: { invoice: recorded.invoice, ...(recorded.finalized ? { finalizedEventId: recorded.finalized.eventId, finalizedStreamId: recorded.finalized.streamId } : {}) } } : {}),
    chainKeyed,
    createdAt: new Date().toISOString(),
  }).catch((err: unknown) => {
    // A draft without lines: nothing to dispute, a usage error here.
    if (err instanceof NotFoundError) throw new ToolUsageError(err.message, [{ path: 'invoice-id', message: 'no billed attempt of that team in that month', fix: 'check the id with `gpunet invoices list`' }]);
    throw err;
  });
  const invoice = bundle.invoice;
  const signed = bundle.signedHeads;
  await writeFile(r.out, `${JSON.stringify(bundle, null, 2)}\n`);
  const events = bundle.streams.reduce((n, s) => n + s.events.length, 0);
  return {
    exitCode: 0,
    result: {
      file: r.out,
      invoiceId: invoice.invoiceId,
      invoiceStatus: bundle.invoiceStatus,
      lines: invoice.lines.length,
      streams: bundle.streams.length,
      events,
      contributing: bundle.contributingEventIds.length,
      ...(signed ? { signedHeads: { sequence: signed.digest.sequence, position: signed.digest.position, signedAt: signed.digest.signedAt, publicKey: signed.digest.publicKey } } : {}),
      reports: bundle.reports?.length ?? 0,
    },
    text: [
      `wrote ${r.out}: invoice ${invoice.invoiceId} (${bundle.invoiceStatus}, ${invoice.lines.length} line(s), derived at position ${invoice.derivedAtPosition}), ` +
        `${bundle.contributingEventIds.length} contributing event(s) in ${bundle.streams.length} whole stream(s) of ${events} event(s) with their heads`,
      signed
        ? `signed heads: digest #${signed.digest.sequence} covering position ${signed.digest.position} (signed ${signed.digest.signedAt}), a proof per stream; ${bundle.reports?.length ?? 0} node report signature(s)`
        : 'no signed heads: the store records no digest yet (`gpunet digests sign`), so the bundle proves only its own consistency',
      `check it anywhere, offline: gpunet verify --bundle ${r.out}${signed ? ` --public-key ${signed.digest.publicKey}` : ''}`,
    ],
  };
}

async function verifyCommand(store: EventStore, r: Extract<Request, { command: 'verify' }>): Promise<Output> {
  const c = await checkStore(store, r);
  const { verified, ...rest } = c.result;
  return { exitCode: c.ok ? 0 : 1, result: { ok: verified, ...rest }, text: c.text };
}

async function verifyBundleCommand(r: Extract<Request, { command: 'verify-bundle' }>, chainKey: string | undefined): Promise<Output> {
  const v = verifyBundle(await readDoc(r.file, '--bundle'), chainKey, r.publicKey);
  const text = v.ok
    ? [
        `bundle ${r.file} holds: invoice ${v.invoiceId}, ${v.events} event(s) in ${v.streams} stream(s), every chain recomputed to its head, the invoice re-derived byte for byte`,
        v.signedBy
          ? `signed heads hold: every stream reaches the heads digest #${v.signedBy.sequence} signed (position ${v.signedBy.position}, ${v.signedBy.signedAt}) with key ${v.signedBy.publicKey}; ${v.reports ?? 0} node report signature(s) checked`
          : 'signed heads NOT checked: pass --public-key (the network public key) to check them',
        `proves: ${v.proves}`,
      ]
    : [`bundle ${r.file} does NOT hold:`, ...v.problems.map((p) => `  ${p.check}: ${p.message}`)];
  return { exitCode: v.ok ? 0 : 1, result: { ...v, replay: undefined }, text };
}

/** Writes `digest-<sequence>.json` per digest; a file already there with other content is evidence, never overwritten. */
async function exportDigestsCommand(store: EventStore, r: Extract<Request, { command: 'export-digests' }>): Promise<Output> {
  const digests = await readDigests(store);
  await mkdir(r.dir, { recursive: true });
  let previous: ChainHeadsSigned | undefined;
  let written = 0;
  const newest = digests[digests.length - 1]?.digest;
  const unsigned = newest && r.publicKey ? signatureProblem(newest, r.publicKey) : undefined;
  if (unsigned) return { exitCode: 1, result: { dir: r.dir, written, problem: unsigned }, text: [`export refused: ${unsigned}`] };
  for (const { digest } of digests) {
    const problem = linkProblem(previous, digest);
    if (problem) return { exitCode: 1, result: { dir: r.dir, written, problem }, text: [`export stopped: ${problem}`] };
    previous = digest;
    const file = join(r.dir, `digest-${String(digest.sequence).padStart(6, '0')}.json`);
    const text = `${JSON.stringify(digest, null, 2)}\n`;
    const existing = await readFile(file, 'utf8').catch(() => undefined);
    if (existing !== undefined && existing !== text) {
      return { exitCode: 1, result: { dir: r.dir, written, conflict: file }, text: [`${file} already holds another digest #${digest.sequence}: the store's digests are not the ones exported earlier (check with \`gpunet verify --digests ${r.dir}\`)`] };
    }
    if (existing === undefined) {
      await writeFile(file, text, { flag: 'wx' });
      written += 1;
    }
  }
  const last = digests[digests.length - 1]?.digest;
  return {
    exitCode: 0,
    result: { dir: r.dir, digests: digests.length, written, ...(last ? { latest: { sequence: last.sequence, position: last.position, signedAt: last.signedAt, publicKey: last.publicKey } } : {}) },
    text: [
      last ? `${digests.length} digest(s) in ${r.dir} (${written} new), the latest #${last.sequence} covering position ${last.position}, signed ${last.signedAt} by ${last.publicKey}` : 'the store records no signed digest yet: nothing exported (`gpunet digests sign` first)',
      ...(last ? [`keep them away from the store; check the store against them later: gpunet verify --digests ${r.dir} --public-key ${last.publicKey}`] : []),
    ],
  };
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
          return done(await verifyCommand(store, request));
        case 'export-digests':
          return done(await exportDigestsCommand(store, request));
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
