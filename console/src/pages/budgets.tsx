/** Budgets and GPU quotas: what a team may spend and hold, and what it has used this month; billing sets them. */
import { useState, type FormEvent } from 'react';
import { must } from '../api/client';
import { ErrorBox, Loading, Money, Section, Time, useLoad } from '../components/common';
import { formatMoney } from '../format/money';
import { useSession } from '../session';
import { parseMicros } from './prices';

/** Integer ms as whole GPU-hours and minutes (display only). */
function gpuHours(ms: number): string {
  const minutes = Math.floor(ms / 60_000);
  return `${Math.floor(minutes / 60)} h ${String(minutes % 60).padStart(2, '0')} min`;
}

export function BudgetsPage() {
  const { api, can, me } = useSession();
  const manage = can('budgets:manage');
  const [team, setTeam] = useState(me.team);
  const [shown, setShown] = useState(me.team);
  const budget = useLoad(() => must(shown === me.team ? api.GET('/v1/budgets') : api.GET('/v1/budgets/{team}', { params: { path: { team: shown } } })), [api, shown]);
  const quotas = useLoad(() => must(api.GET('/v1/quotas', { params: { query: manage && shown !== me.team ? { team: shown } : {} } })), [api, shown]);
  const [form, setForm] = useState({ monthly: '', onExceed: 'refuse' as 'refuse' | 'hold', thresholds: '50,80,100' });
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const [done, setDone] = useState<string>();

  const act = async (what: string, fn: () => Promise<unknown>) => {
    setError(undefined);
    setDone(undefined);
    setBusy(true);
    try {
      await fn();
      setDone(what);
      budget.reload();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  const setBudget = (e: FormEvent) => {
    e.preventDefault();
    const monthlyMicros = parseMicros(form.monthly);
    if (monthlyMicros === undefined) {
      setError(new Error('Monthly amount: write a decimal amount with at most 6 decimals, e.g. 5000.00'));
      return;
    }
    const thresholdsPercent = form.thresholds.split(',').map((t) => Number(t.trim()));
    if (thresholdsPercent.some((t) => !Number.isInteger(t) || t < 1)) {
      setError(new Error('Thresholds: whole percents separated by commas, e.g. 50,80,100'));
      return;
    }
    void act(`Budget of ${shown} set.`, () => must(api.PUT('/v1/budgets/{team}', { params: { path: { team: shown } }, body: { monthlyMicros, onExceed: form.onExceed, thresholdsPercent } })));
  };
  const clearBudget = () => void act(`Budget of ${shown} cleared.`, () => must(api.DELETE('/v1/budgets/{team}', { params: { path: { team: shown } } })));

  const b = budget.data;
  return (
    <>
      <h1>Budgets and quotas</h1>
      {manage && (
        <form className="filters" aria-label="Choose a team" onSubmit={(e) => (e.preventDefault(), setShown(team.trim()))}>
          <label>Team<input value={team} onChange={(e) => setTeam(e.target.value)} required /></label>
          <button type="submit">Show</button>
        </form>
      )}
      <Section title={`Budget of ${shown}`}>
        <ErrorBox error={budget.error} />
        {budget.loading && <Loading label="Loading the budget" />}
        {b && !b.budget && <p>No budget: this team's jobs are not checked against one.</p>}
        {b?.budget && (
          <table className="grid" aria-label={`Budget of ${shown} in ${b.month}`}>
            <tbody>
              <tr><th scope="row">Monthly ({b.month}, UTC)</th><td className="num"><Money micros={b.budget.monthlyMicros} currency={b.budget.currency} /></td></tr>
              <tr><th scope="row">Spent (jobs that ended)</th><td className="num"><Money micros={b.spentMicros} currency={b.budget.currency} /></td></tr>
              <tr><th scope="row">Reserved (worst cases of jobs not ended)</th><td className="num"><Money micros={b.reservedMicros} currency={b.budget.currency} /></td></tr>
              <tr><th scope="row">Remaining</th><td className="num"><Money micros={b.remainingMicros} currency={b.budget.currency} /></td></tr>
              <tr><th scope="row">Past the budget</th><td>{b.budget.onExceed === 'hold' ? 'held in the queue (BudgetExceeded)' : 'refused at submit'}</td></tr>
              <tr><th scope="row">Thresholds</th><td>{b.budget.thresholdsPercent.map((t) => `${t} %${b.thresholdsCrossed.includes(t) ? ' (crossed)' : ''}`).join(', ')}</td></tr>
              <tr><th scope="row">Held jobs</th><td>{b.heldJobs.length === 0 ? 'none' : b.heldJobs.join(', ')}</td></tr>
              <tr><th scope="row">Set by</th><td>{b.budget.setBy.team}/{b.budget.setBy.keyId}, <Time iso={b.budget.setAt} /></td></tr>
            </tbody>
          </table>
        )}
      </Section>
      <Section title="Set the budget">
        {!manage && <p className="muted">Your key's role ({me.role}) may not set budgets: the API will refuse it.</p>}
        <form className="filters" aria-label="Set a budget" onSubmit={setBudget}>
          <label>Monthly amount{b?.budget && ` (${b.budget.currency})`}<input value={form.monthly} onChange={(e) => setForm({ ...form, monthly: e.target.value })} inputMode="decimal" placeholder="5000.00" required /></label>
          <label>Past the budget
            <select value={form.onExceed} onChange={(e) => setForm({ ...form, onExceed: e.target.value as 'refuse' | 'hold' })}>
              <option value="refuse">refuse the submit</option>
              <option value="hold">hold the job in the queue</option>
            </select>
          </label>
          <label>Thresholds (%)<input value={form.thresholds} onChange={(e) => setForm({ ...form, thresholds: e.target.value })} /></label>
          <button type="submit" disabled={busy}>Set</button>
          <button type="button" disabled={busy || !b?.budget} onClick={clearBudget}>Clear</button>
        </form>
        {form.monthly && parseMicros(form.monthly) !== undefined && b?.budget && <p className="muted">That is {formatMoney(parseMicros(form.monthly)!, b.budget.currency)} per month.</p>}
        {busy && <Loading label="Saving" />}
        {done && <p role="status">{done}</p>}
        <ErrorBox error={error} />
      </Section>
      <Section title="GPU quotas">
        <ErrorBox error={quotas.error} />
        {quotas.loading && <Loading label="Loading quotas" />}
        {quotas.data && quotas.data.quotas.length === 0 && <p>No GPU quota: placement holds this team to fair share only.</p>}
        {quotas.data && quotas.data.quotas.length > 0 && (
          <table className="grid" aria-label={`GPU quotas in ${quotas.data.month}`}>
            <thead><tr><th scope="col">Team</th><th scope="col">Model</th><th scope="col">GPUs at once</th><th scope="col">In use</th><th scope="col">Borrowed</th><th scope="col">GPU-hours this month</th><th scope="col">Borrowing</th></tr></thead>
            <tbody>
              {quotas.data.quotas.map((q) => (
                <tr key={`${q.team}/${q.gpuModel}`}>
                  <td>{q.team}</td><td>{q.gpuModel}</td><td className="num">{q.gpus ?? 'no limit'}</td><td className="num">{q.inUse}</td><td className="num">{q.borrowed}</td>
                  <td className="num">{gpuHours(q.heldMs)}{q.gpuHours !== null && q.gpuHours !== undefined ? ` of ${q.gpuHours} h` : ''}</td><td>{q.borrow ? 'on' : 'off'}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
        <p className="muted">Quotas are set by billing with <code>gpunet quota set</code> or <code>POST /v1/quotas</code>.</p>
      </Section>
    </>
  );
}
