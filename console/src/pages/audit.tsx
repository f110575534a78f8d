/** Audit: the chain's verification status, the audit query with every filter, and the record of audit queries (who asked what, when). */
import { useState, type FormEvent } from 'react';
import { must, type Schemas } from '../api/client';
import { ChainStatusPanel } from '../components/chain-status';
import { ErrorBox, Loading, Money, Section, Time, useLoad } from '../components/common';
import { formatDuration } from '../format/money';
import { Link, useSession } from '../session';

const OUTCOMES = ['completed', 'failed', 'timeout', 'cancelled', 'node_lost', 'deadline', 'rejected', 'staging_failed', 'open'] as const;
type AuditQuery = { team?: string; from?: string; to?: string; node?: string; gpuModel?: string; outcome?: (typeof OUTCOMES)[number]; limit: number };

const instant = (local: string) => (local === '' ? undefined : new Date(local).toISOString());

export function AuditPage() {
  const { api, can } = useSession();
  const [form, setForm] = useState({ team: '', from: '', to: '', node: '', gpuModel: '', outcome: '' });
  const [answer, setAnswer] = useState<Schemas['AuditJobsReply']>();
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const [asked, setAsked] = useState(0);
  const log = useLoad(() => (can('audit:read-all-teams') ? must(api.GET('/v1/audit/queries', { params: { query: { limit: 50 } } })) : Promise.resolve(undefined)), [api, asked]);

  const run = async (e: FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const query: AuditQuery = { limit: 200 };
      if (form.team) query.team = form.team;
      if (instant(form.from)) query.from = instant(form.from)!;
      if (instant(form.to)) query.to = instant(form.to)!;
      if (form.node) query.node = form.node;
      if (form.gpuModel) query.gpuModel = form.gpuModel;
      if (form.outcome) query.outcome = form.outcome as AuditQuery['outcome'];
      setAnswer(await must(api.GET('/v1/audit/jobs', { params: { query } })));
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
      setAsked((n) => n + 1);
    }
  };
  const field = (name: keyof typeof form) => ({ value: form[name], onChange: (e: { target: { value: string } }) => setForm((f) => ({ ...f, [name]: e.target.value })) });

  return (
    <>
      <h1>Audit</h1>
      {can('audit:chain') && <ChainStatusPanel />}
      <form className="filters" aria-label="Audit query" onSubmit={(e) => void run(e)}>
        <label>Team<input {...field('team')} placeholder={can('audit:read-all-teams') ? 'every team' : 'your team'} /></label>
        <label>From<input type="datetime-local" {...field('from')} /></label>
        <label>To<input type="datetime-local" {...field('to')} /></label>
        <label>Node<input {...field('node')} /></label>
        <label>GPU model<input {...field('gpuModel')} /></label>
        <label>Outcome
          <select {...field('outcome')}><option value="">any</option>{OUTCOMES.map((o) => <option key={o}>{o}</option>)}</select>
        </label>
        <button type="submit" disabled={busy}>Run audit query</button>
      </form>
      {busy && <Loading label="Asking the ledger" />}
      <ErrorBox error={error} />
      {answer && (
        <Section title="Answer">
          <p>{answer.total} job(s), as of store position {answer.asOfPosition}; this query is recorded as <code data-testid="recorded-as">{answer.recordedAs}</code>.</p>
          <div className="table-wrap" tabIndex={0} role="region" aria-label="Scrollable table">
            <table className="grid" aria-label="Audited jobs">
              <thead><tr><th scope="col">Job</th><th scope="col">Team</th><th scope="col">Submitted</th><th scope="col">Outcome</th><th scope="col">Attempts</th><th scope="col">Nodes</th><th scope="col">Billed</th><th scope="col">Charge</th></tr></thead>
              <tbody>
                {answer.jobs.map((j) => (
                  <tr key={j.jobId}>
                    <td><Link to={`/jobs/${j.jobId}`}><code>{j.jobId}</code></Link></td><td>{j.team}</td><td><Time iso={j.submittedAt} /></td><td>{j.outcome}</td>
                    <td className="num">{j.attempts}</td><td>{j.nodes.join(', ')}</td><td className="num">{formatDuration(j.billableMs)}</td>
                    <td>{j.totals.map((t) => <Money key={t.currency} micros={t.amountMicros} currency={t.currency} />)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </Section>
      )}
      {can('audit:read-all-teams') && (
        <Section title="Record of audit queries">
          <ErrorBox error={log.error} />
          {log.loading && <Loading label="Reading the record" />}
          {log.data && (
            <table className="grid" aria-label="Record of audit queries">
              <thead><tr><th scope="col">Asked</th><th scope="col">Who</th><th scope="col">Query</th><th scope="col">Parameters</th><th scope="col">Answer</th><th scope="col">Event</th></tr></thead>
              <tbody>
                {log.data.queries.map((q) => (
                  <tr key={q.eventId} data-event={q.eventId}>
                    <td><Time iso={q.askedAt} /></td><td><code>{q.requestedBy.keyId}</code> ({q.requestedBy.team}, {q.requestedBy.role})</td><td>{q.query}</td>
                    <td>{Object.entries(q.parameters).map(([k, v]) => `${k}=${String(v)}`).join(', ') || '—'}</td>
                    <td>{q.refused ? `refused: ${q.refused}` : 'answered'}</td><td><code>{q.eventId}</code></td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </Section>
      )}
    </>
  );
}
