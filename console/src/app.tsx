/** The console's shell: login, navigation by what the key may do, and the pages. */
import { lazy, Suspense, useEffect, useRef, useState, type FormEvent } from 'react';
import { apiClient, must, storedKey, storedMe, storeKey } from './api/client';
import { ErrorBox, Loading } from './components/common';
import { JobPage } from './pages/job';
import { JobsPage } from './pages/jobs';
import { viewerZone } from './format/time';
import { Link, makeSession, navigate, SessionContext, usePath, useSession as useContextSession, type Session } from './session';

// The pages people open first load with the shell; the rest (and the chart library) when opened.
const QueuePage = lazy(() => import('./pages/queue').then((m) => ({ default: m.QueuePage })));
const InvoicesPage = lazy(() => import('./pages/invoices').then((m) => ({ default: m.InvoicesPage })));
const AuditPage = lazy(() => import('./pages/audit').then((m) => ({ default: m.AuditPage })));
const PricesPage = lazy(() => import('./pages/prices').then((m) => ({ default: m.PricesPage })));
const BudgetsPage = lazy(() => import('./pages/budgets').then((m) => ({ default: m.BudgetsPage })));

const PAGES: { to: string; label: string; needs: string }[] = [
  { to: '/', label: 'Jobs', needs: 'jobs:read' },
  { to: '/queue', label: 'Queue & capacity', needs: 'jobs:read' },
  { to: '/invoices', label: 'Invoices', needs: 'invoices:read' },
  { to: '/audit', label: 'Audit', needs: 'audit:read' },
  { to: '/prices', label: 'Prices', needs: 'prices:read' },
  { to: '/budgets', label: 'Budgets & quotas', needs: 'budgets:read' },
];

export function App() {
  const logoutRef = useRef<() => void>(() => undefined);
  // A tab that already checked its key shows the pages in the first frame (no login form flashing
  // first); the key is checked again in the background below.
  const [session, setSession] = useState<Session | undefined>(() => {
    const key = storedKey();
    const me = storedMe();
    return key && me ? makeSession(key, me, () => logoutRef.current()) : undefined;
  });
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const logout = () => {
    storeKey(null);
    setSession(undefined);
  };
  logoutRef.current = logout;

  const login = async (key: string) => {
    setBusy(true);
    setError(undefined);
    try {
      const me = await must(apiClient(key).GET('/v1/whoami'));
      storeKey(key, me);
      setSession((s) => (s && s.key === key && JSON.stringify(s.me) === JSON.stringify(me) ? s : makeSession(key, me, logout)));
    } catch (err) {
      storeKey(null);
      setSession(undefined);
      setError(err);
    } finally {
      setBusy(false);
    }
  };

  useEffect(() => {
    const key = storedKey();
    if (!key) return;
    void login(key);
  }, []);

  if (!session) return <Login onLogin={login} error={error} busy={busy} />;
  return (
    <SessionContext.Provider value={session}>
      <Shell />
    </SessionContext.Provider>
  );
}

function Login({ onLogin, error, busy }: { onLogin: (key: string) => void; error: unknown; busy: boolean }) {
  const [key, setKey] = useState('');
  const submit = (e: FormEvent) => {
    e.preventDefault();
    onLogin(key.trim());
  };
  return (
    <main className="login">
      <h1>gpunet console</h1>
      <form onSubmit={submit}>
        <label htmlFor="api-key">API key</label>
        <input id="api-key" name="api-key" type="password" autoComplete="off" value={key} onChange={(e) => setKey(e.target.value)} required />
        <p className="hint">The key of your team (`gpunet up` prints where the local one is). It stays in this tab only.</p>
        <button type="submit" disabled={busy || key.trim() === ''}>
          Log in
        </button>
      </form>
      {busy && <Loading label="Checking the key" />}
      <ErrorBox error={error} />
    </main>
  );
}

function Shell() {
  const path = usePath();
  const s = useContextSession();
  const pages = PAGES.filter((p) => s.can(p.needs));
  const job = /^\/jobs\/([^/]+)$/.exec(path);
  let page: React.ReactNode;
  if (job) page = <JobPage jobId={decodeURIComponent(job[1]!)} />;
  else if (path === '/queue') page = <QueuePage />;
  else if (path === '/invoices') page = <InvoicesPage />;
  else if (path === '/audit') page = <AuditPage />;
  else if (path === '/prices') page = <PricesPage />;
  else if (path === '/budgets') page = <BudgetsPage />;
  else if (path === '/' || path === '') page = s.can('jobs:read') ? <JobsPage /> : <NoJobs />;
  else page = <p>No such page. <Link to="/">Back to the jobs</Link></p>;
  return (
    <>
      <a className="skip" href="#main">
        Skip to content
      </a>
      <header className="top">
        <strong className="brand">gpunet</strong>
        <nav aria-label="Pages">
          <ul>
            {pages.map((p) => (
              <li key={p.to}>
                <Link to={p.to} className={(p.to === '/' ? path === '/' || path.startsWith('/jobs') : path === p.to) ? 'current' : ''}>
                  {p.label}
                </Link>
              </li>
            ))}
          </ul>
        </nav>
        <span className="who" title={`times in ${viewerZone}; hover a time for UTC`}>
          {s.me.team} · {s.me.role} · <code>{s.me.keyId}</code>
        </span>
        <button type="button" className="link" onClick={() => { s.logout(); navigate('/'); }}>
          Log out
        </button>
      </header>
      <main id="main" tabIndex={-1}>
        <Suspense fallback={<Loading label="Loading the page" />}>{page}</Suspense>
      </main>
    </>
  );
}

function NoJobs() {
  return <p>Your key's role may not read jobs. Use the pages above.</p>;
}
