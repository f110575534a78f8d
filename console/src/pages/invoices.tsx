/** Invoices: the team's monthly invoices and credit notes; each line with the events it comes from. */
import { useState } from 'react';
import { must } from '../api/client';
import { ErrorBox, Loading, Money, Section, Time, useLoad } from '../components/common';
import { formatDuration } from '../format/money';
import { Link, useSession } from '../session';

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
        </>
      )}
    </Section>
  );
}
