/** Small pieces every page uses: times, money, errors with their fixes, progress. */
import { useEffect, useState, type ReactNode } from 'react';
import { ApiError } from '../api/client';
import { formatMoney } from '../format/money';
import { formatLocal, utcTitle } from '../format/time';

/** A time in the viewer's zone; the UTC instant on hover and for assistive technology. */
export function Time({ iso, timeOnly }: { iso: string | undefined; timeOnly?: boolean }) {
  if (!iso) return <span className="muted">—</span>;
  return (
    <time dateTime={iso} title={utcTitle(iso)}>
      {formatLocal(iso, { timeOnly: timeOnly ?? false })}
    </time>
  );
}

export function Money({ micros, currency, precise }: { micros: number | string; currency: string; precise?: boolean }) {
  return <span className="num">{formatMoney(micros, currency, { precise: precise ?? false })}</span>;
}

/** An API error as the API said it: its message, each field at fault and its fix. */
export function ErrorBox({ error }: { error: unknown }) {
  if (error === undefined || error === null) return null;
  const e = error instanceof ApiError ? error : undefined;
  const message = e ? e.message : error instanceof Error ? error.message : String(error);
  return (
    <div role="alert" className="error">
      <strong>{e ? `${e.status} ${e.code}` : 'error'}:</strong> {message}
      {e && e.issues.length > 0 && (
        <ul>
          {e.issues.map((i) => (
            <li key={i.path + i.message}>
              <code>{i.path || '(request)'}</code> {i.message}
              {i.fix && <> — fix: {i.fix}</>}
            </li>
          ))}
        </ul>
      )}
      {e?.retryable && <p>This may succeed if you try again.</p>}
    </div>
  );
}

/** Shown after a short delay, so quick answers do not flicker. */
export function Loading({ label = 'Loading' }: { label?: string }) {
  const [shown, setShown] = useState(false);
  useEffect(() => {
    const t = setTimeout(() => setShown(true), 150);
    return () => clearTimeout(t);
  }, []);
  return (
    <div role="status" aria-live="polite" className="loading">
      {shown && (
        <>
          <span className="spinner" aria-hidden="true" /> {label}…
        </>
      )}
    </div>
  );
}

/** Loads `load()` when `deps` change: `{ data, error, loading, reload }`. */
export function useLoad<T>(load: () => Promise<T>, deps: readonly unknown[]): { data: T | undefined; error: unknown; loading: boolean; reload: () => void } {
  const [state, setState] = useState<{ data: T | undefined; error: unknown; loading: boolean }>({ data: undefined, error: undefined, loading: true });
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    setState((s) => ({ ...s, loading: true }));
    load().then(
      (data) => live && setState({ data, error: undefined, loading: false }),
      (error: unknown) => live && setState({ data: undefined, error, loading: false }),
    );
    return () => {
      live = false;
    };
  }, [...deps, tick]);
  return { ...state, reload: () => setTick((t) => t + 1) };
}

export function Section({ title, children, actions }: { title: string; children: ReactNode; actions?: ReactNode }) {
  const id = `s-${title.toLowerCase().replace(/[^a-z0-9]+/g, '-')}`;
  return (
    <section aria-labelledby={id}>
      <div className="section-head">
        <h2 id={id}>{title}</h2>
        {actions}
      </div>
      {children}
    </section>
  );
}

export function StateBadge({ state }: { state: string }) {
  return <span className={`badge state-${state}`}>{state}</span>;
}

/** Starts a download of `blob` under `name`. */
export function saveBlob(blob: Blob, name: string): void {
  const url = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}
