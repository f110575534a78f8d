/**
 * Invoices: the team's monthly invoices and credit notes; each line with the events it comes
 * from; "Replay this invoice" (re-derived from the event store, line by line against the recorded
 * one), a what-if price list beside it, and the dispute bundle to download for
 * `gpunet verify --bundle`. Roles billing, admin and compliance; a producer is refused by the API.
 */
import { useState, type FormEvent } from 'react';
import { authedFetch, must, type Schemas } from '../api/client';
import { ErrorBox, Loading, Money, saveBlob, Section, Time, useLoad } from '../components/common';
import { formatDuration, formatMoney } from '../format/money';
import { Link, useSession } from '../session';
import { parseMicros } from './prices';

type InvoiceView = Schemas['InvoiceView'];
type Replay = Schemas['ReplayInvoiceReply'];

export function InvoicesPage() {
  const { api } = useSession();
  const list = useLoad(() => must(api.GET('/v1/invoices')), [api]);
  const [open, setOpen] = useState<string>();
  return (
    <>
      <h1>Invoices</h1>
      <ErrorBox error={list.error} />
      {list.loading && <Loading label="Loading invoices" />}
      {list.data && (
        <table className="grid" aria-label="Invoices">
          <thead><tr><th scope="col">Invoice</th><th scope="col">Team</th><th scope="col">Month</th><th scope="col">Status</th><th scope="col">Lines</th><th scope="col">Total</th></tr></thead>
          <tbody>
            {list.data.invoices.map((i) => (
              <tr key={i.invoiceId}>
                <td><button type="button" className="link" aria-expanded={open === i.invoiceId} onClick={() => setOpen(open === i.invoiceId ? undefined : i.invoiceId)}>{i.invoiceId}</button></td>
                <td>{i.team}</td><td>{i.month}</td><td>{i.status}</td><td className="num">{i.lines}</td>
                <td>{i.totals.map((t) => <Money key={t.currency} micros={t.amountMicros} currency={t.currency} />)}</td>
              </tr>
            ))}
            {list.data.invoices.length === 0 && <tr><td colSpan={6} className="muted">No invoice yet: one appears with the first billed attempt of a month.</td></tr>}
          </tbody>
        </table>
      )}
      {open && <Invoice invoiceId={open} />}
    </>
  );
}

function Invoice({ invoiceId }: { invoiceId: string }) {
  const { api } = useSession();
  const inv = useLoad(() => must(api.GET('/v1/invoices/{invoiceId}', { params: { path: { invoiceId } } })), [api, invoiceId]);
  return (
    <Section title={`Invoice ${invoiceId}`}>
      <ErrorBox error={inv.error} />
      {inv.loading && <Loading label="Loading the invoice" />}
      {inv.data && (
        <>
          <p>
            {inv.data.status}; period <Time iso={inv.data.periodStart} /> – <Time iso={inv.data.periodEnd} />; derived at store position {inv.data.derivedAtPosition}; rounding <code>{inv.data.rounding}</code>.
          </p>
          <div className="table-wrap" tabIndex={0} role="region" aria-label="Scrollable table">
            <table className="grid" aria-label={`Lines of ${invoiceId}`}>
              <thead><tr><th scope="col">Line</th><th scope="col">Job</th><th scope="col">Attempt</th><th scope="col">Node</th><th scope="col">GPUs</th><th scope="col">Billed</th><th scope="col">Rate / GPU-h</th><th scope="col">Price list</th><th scope="col">Amount</th><th scope="col">Events</th></tr></thead>
              <tbody>
                {inv.data.lines.map((l) => (
                  <tr key={l.lineId}>
                    <td><code>{l.lineId}</code></td><td><Link to={`/jobs/${l.jobId}`}><code>{l.jobId}</code></Link></td><td><code>{l.attemptId}</code></td><td>{l.nodeId}</td>
                    <td className="num">{l.gpus} × {l.gpuModel}</td><td className="num">{formatDuration(l.billableMs)}</td><td><Money micros={l.rateMicrosPerGpuHour} currency={l.currency} /></td>
                    <td className="num">v{l.priceListVersion}</td><td><Money micros={l.amountMicros} currency={l.currency} precise /></td>
                    <td><details><summary>{l.eventIds.length} events</summary><ul className="ids">{l.eventIds.map((id) => <li key={id}><code>{id}</code></li>)}</ul></details></td>
                  </tr>
                ))}
              </tbody>
              <tfoot>
                {inv.data.totals.map((t) => <tr key={t.currency}><th scope="row" colSpan={8}>Total</th><td><Money micros={t.amountMicros} currency={t.currency} /></td><td /></tr>)}
              </tfoot>
            </table>
          </div>
          {inv.data.creditNotes.length > 0 && (
            <ul>{inv.data.creditNotes.map((c) => <li key={c.creditNoteId}>Credit note <code>{c.creditNoteId}</code></li>)}</ul>
          )}
          <ReplayPanel invoice={inv.data} />
        </>
      )}
    </Section>
  );
}

/** The rate a line was billed at, as the decimal text a person edits (`3.600000`). */
function rateText(micros: number): string {
  const m = BigInt(micros);
  return `${m / 1_000_000n}.${(m % 1_000_000n).toString().padStart(6, '0')}`;
}

/** Replay, what-if and the dispute bundle of one invoice. */
function ReplayPanel({ invoice }: { invoice: InvoiceView }) {
  const { api, key } = useSession();
  const id = invoice.invoiceId;
  const currency = invoice.lines[0]?.currency ?? invoice.totals[0]?.currency ?? 'EUR';
  const models = [...new Map(invoice.lines.map((l) => [l.gpuModel, l.rateMicrosPerGpuHour])).entries()];
  const [rates, setRates] = useState<Record<string, string>>(() => Object.fromEntries(models.map(([m, r]) => [m, rateText(r)])));
  const [result, setResult] = useState<Replay>();
  const [busy, setBusy] = useState<string>();
  const [error, setError] = useState<unknown>();

  const run = async (prices?: Schemas['ReplayInvoiceRequest']['prices']) => {
    setError(undefined);
    setResult(undefined);
    setBusy(prices ? 'Pricing the invoice with the what-if list' : 'Replaying the invoice from the event store');
    try {
      setResult(await must(api.POST('/v1/invoices/{invoiceId}/replay', { params: { path: { invoiceId: id } }, body: prices ? { prices } : {} })));
    } catch (err) {
      setError(err);
    } finally {
      setBusy(undefined);
    }
  };
  const whatIf = (e: FormEvent) => {
    e.preventDefault();
    const parsed: Record<string, number> = {};
    for (const [model, text] of Object.entries(rates)) {
      const micros = parseMicros(text);
      if (micros === undefined) {
        setError(new Error(`Rate for ${model}: write a decimal amount of ${currency} per GPU-hour with at most 6 decimals, e.g. 2.50`));
        return;
      }
      parsed[model] = micros;
    }
    void run({ currency, ratesMicrosPerGpuHour: parsed });
  };
  const download = async () => {
    setError(undefined);
    setBusy('Making the dispute bundle');
    try {
      const res = await authedFetch(key, `/v1/invoices/${encodeURIComponent(id)}/dispute-bundle`);
      const name = /filename="([^"]+)"/.exec(res.headers.get('Content-Disposition') ?? '')?.[1] ?? `${id}.bundle.json`;
      saveBlob(await res.blob(), name);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(undefined);
    }
  };

  return (
    <Section title="Replay and dispute">
      <p className="muted">
        Replaying re-derives this invoice from the event store as of position {invoice.derivedAtPosition} and compares it line by line; a what-if prices the same lines with
        other rates and writes nothing. The dispute bundle checks offline with <code>gpunet verify --bundle FILE</code>.
      </p>
      <div className="filters">
        <button type="button" onClick={() => void run()} disabled={busy !== undefined}>Replay this invoice</button>
        <button type="button" onClick={() => void download()} disabled={busy !== undefined}>Download dispute bundle</button>
      </div>
      {models.length > 0 && (
        <form className="filters" aria-label="What-if price list" onSubmit={whatIf}>
          {models.map(([model]) => (
            <label key={model}>
              {`${model}: ${currency} per GPU-hour`}
              <input value={rates[model] ?? ''} onChange={(e) => setRates({ ...rates, [model]: e.target.value })} inputMode="decimal" required />
            </label>
          ))}
          <button type="submit" disabled={busy !== undefined}>Run what-if</button>
        </form>
      )}
      {busy && <Loading label={busy} />}
      <ErrorBox error={error} />
      {result && <ReplayResult replay={result} />}
    </Section>
  );
}

function ReplayResult({ replay }: { replay: Replay }) {
  const title = replay.whatIf ? 'What-if' : 'Replayed';
  return (
    <>
      <p role="status" data-testid="replay-summary" className={replay.identical ? 'ok' : 'differs'}>
        {replay.identical ? '✓ ' : replay.whatIf ? '' : '✗ '}
        {replay.summary}
      </p>
      <table className="grid" aria-label={replay.whatIf ? 'What-if totals' : 'Replay totals'}>
        <thead><tr><th scope="col">Currency</th><th scope="col">Recorded</th><th scope="col">{title}</th><th scope="col">Difference</th></tr></thead>
        <tbody>
          {replay.totals.map((t) => (
            <tr key={t.currency} className={t.identical ? 'diff-same' : 'diff-changed'}>
              <td>{t.currency}</td><td><Money micros={t.recordedMicros} currency={t.currency} precise /></td><td><Money micros={t.replayedMicros} currency={t.currency} precise /></td>
              <td>{t.identical ? 'identical' : signed(BigInt(t.replayedMicros) - BigInt(t.recordedMicros), t.currency)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <div className="table-wrap replay-lines" tabIndex={0} role="region" aria-label="Scrollable table">
        <table className="grid" aria-label={replay.whatIf ? `What-if lines of ${replay.invoiceId}` : `Replay of ${replay.invoiceId}`}>
          <thead><tr><th scope="col">Line</th><th scope="col">Job</th><th scope="col">GPUs</th><th scope="col">Billed</th><th scope="col">Recorded</th><th scope="col">{title}</th><th scope="col">Result</th><th scope="col">Events</th></tr></thead>
          <tbody>
            {replay.lines.map((l) => (
              <tr key={l.lineId} data-status={l.status} className={l.identical ? 'diff-same' : 'diff-changed'}>
                <td><code>{l.lineId}</code></td><td><Link to={`/jobs/${l.jobId}`}><code>{l.jobId}</code></Link></td>
                <td className="num">{l.gpus} × {l.gpuModel}</td><td className="num">{formatDuration(l.billableMs)}</td>
                <td>{l.recordedAmountMicros !== undefined ? <Money micros={l.recordedAmountMicros} currency={l.currency} precise /> : '—'}</td>
                <td>{l.replayedAmountMicros !== undefined ? <Money micros={l.replayedAmountMicros} currency={l.currency} precise /> : '—'}</td>
                <td>
                  {l.identical ? '✓ identical' : (
                    <>
                      <strong>{l.status}</strong>
                      {l.changes.length > 0 && <ul className="ids">{l.changes.filter((c) => c.field !== 'amountMicros').map((c) => <li key={c.field}>{changeText(c, l.currency, replay.whatIf)}</li>)}</ul>}
                    </>
                  )}
                </td>
                <td><details><summary>{l.eventIds.length} events</summary><ul className="ids">{l.eventIds.map((e) => <li key={e}><code>{e}</code></li>)}</ul></details></td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </>
  );
}

/** One differing field in words (amounts are in their own columns). */
function changeText(c: Replay['lines'][number]['changes'][number], currency: string, whatIf: boolean): string {
  if (c.field === 'eventIds') return whatIf ? 'priced by the what-if list instead of a published one' : 'contributing events differ';
  if (c.field === 'rateMicrosPerGpuHour' && /^\d+$/.test(c.recorded) && /^\d+$/.test(c.replayed)) {
    return `rate per GPU-hour ${formatMoney(c.recorded, currency, { precise: true })} → ${formatMoney(c.replayed, currency, { precise: true })}`;
  }
  if (c.field === 'priceListVersion') return whatIf ? `price list v${c.recorded} → the what-if list` : `price list v${c.recorded} → v${c.replayed}`;
  return `${c.field}: ${c.recorded} → ${c.replayed}`;
}

/** `+EUR 1.50` / `−EUR 0.25`, from micros, no floats. */
function signed(micros: bigint, currency: string): string {
  return `${micros < 0n ? '−' : '+'}${formatMoney(micros < 0n ? -micros : micros, currency, { precise: true })}`;
}
