/** Prices: versions in force and scheduled; publishing a new one (role billing). */
import { useState, type FormEvent } from 'react';
import { must } from '../api/client';
import { ErrorBox, Loading, Money, Section, Time, useLoad } from '../components/common';
import { useSession } from '../session';

/** `2.50` → 2500000 micros, by string arithmetic (never a float); undefined when not a decimal with at most 6 places. */
export function parseMicros(text: string): number | undefined {
  const m = /^(\d{1,9})(?:\.(\d{1,6}))?$/.exec(text.trim());
  if (!m) return undefined;
  return Number(BigInt(m[1]!) * 1_000_000n + BigInt((m[2] ?? '').padEnd(6, '0')));
}

export function PricesPage() {
  const { api, can } = useSession();
  const list = useLoad(() => must(api.GET('/v1/prices')), [api]);
  const [form, setForm] = useState({ currency: 'EUR', model: '', rate: '', effectiveFrom: '' });
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const [done, setDone] = useState<string>();

  const publish = async (e: FormEvent) => {
    e.preventDefault();
    setError(undefined);
    setDone(undefined);
    const rate = parseMicros(form.rate);
    if (rate === undefined) {
      setError(new Error('Rate: write a decimal amount per GPU-hour with at most 6 decimals, e.g. 2.50'));
      return;
    }
    setBusy(true);
    try {
      const body = { currency: form.currency, ratesMicrosPerGpuHour: { [form.model]: rate }, ...(form.effectiveFrom ? { effectiveFrom: new Date(form.effectiveFrom).toISOString() } : {}) };
      const r = await must(api.POST('/v1/prices', { body }));
      setDone(`Published version ${r.version}.`);
      list.reload();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  const current = list.data?.current;
  return (
    <>
      <h1>Prices</h1>
      <ErrorBox error={list.error} />
      {list.loading && <Loading label="Loading price lists" />}
      {list.data && (
        <table className="grid" aria-label="Price list versions">
          <thead><tr><th scope="col">Version</th><th scope="col">From</th><th scope="col">Status</th><th scope="col">Rates per GPU-hour</th><th scope="col">Default</th><th scope="col">Published</th></tr></thead>
          <tbody>
            {[...list.data.versions].reverse().map((v) => (
              <tr key={v.version}>
                <td className="num">v{v.version}</td><td><Time iso={v.effectiveFrom} /></td>
                <td>{v.version === current ? 'in force' : Date.parse(v.effectiveFrom) > Date.parse(list.data!.at) ? 'scheduled' : 'superseded'}</td>
                <td>{Object.entries(v.ratesMicrosPerGpuHour).map(([m, r]) => <div key={m}>{m}: <Money micros={r} currency={v.currency} precise /></div>)}</td>
                <td>{v.defaultRateMicrosPerGpuHour !== undefined ? <Money micros={v.defaultRateMicrosPerGpuHour} currency={v.currency} precise /> : '—'}</td>
                <td><Time iso={v.publishedAt} /></td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <Section title="Publish a new price list">
        {!can('prices:publish') && <p className="muted">Your key's role ({useSession().me.role}) may not publish: the API will refuse it.</p>}
        <form className="filters" aria-label="Publish a price list" onSubmit={(e) => void publish(e)}>
          <label>Currency<input value={form.currency} onChange={(e) => setForm({ ...form, currency: e.target.value })} required /></label>
          <label>GPU model<input value={form.model} onChange={(e) => setForm({ ...form, model: e.target.value })} required /></label>
          <label>Rate per GPU-hour<input value={form.rate} onChange={(e) => setForm({ ...form, rate: e.target.value })} inputMode="decimal" placeholder="2.50" required /></label>
          <label>Effective from<input type="datetime-local" value={form.effectiveFrom} onChange={(e) => setForm({ ...form, effectiveFrom: e.target.value })} /></label>
          <button type="submit" disabled={busy}>Publish</button>
        </form>
        {busy && <Loading label="Publishing" />}
        {done && <p role="status">{done}</p>}
        <ErrorBox error={error} />
      </Section>
    </>
  );
}
