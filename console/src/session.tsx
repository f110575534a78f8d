/** Who is logged in (the API key and what `GET /v1/whoami` says of it) and a tiny router over /console/…. */
import { createContext, useContext, useEffect, useState, type MouseEvent } from 'react';
import { apiClient, type Api, type Schemas } from './api/client';

export interface Session {
  key: string;
  api: Api;
  me: Schemas['WhoAmI'];
  can: (action: string) => boolean;
  logout: () => void;
}

export const SessionContext = createContext<Session | undefined>(undefined);

export function useSession(): Session {
  const s = useContext(SessionContext);
  if (!s) throw new Error('useSession outside a session');
  return s;
}

export function makeSession(key: string, me: Schemas['WhoAmI'], logout: () => void): Session {
  return { key, api: apiClient(key), me, can: (a) => me.actions.includes(a), logout };
}

export const BASE = '/console';

/** The path inside the console: `/jobs/job_…`, `/queue`, `/` … */
export function usePath(): string {
  const [path, setPath] = useState(() => window.location.pathname.slice(BASE.length) || '/');
  useEffect(() => {
    const on = () => setPath(window.location.pathname.slice(BASE.length) || '/');
    window.addEventListener('popstate', on);
    return () => window.removeEventListener('popstate', on);
  }, []);
  return path;
}

export function navigate(to: string): void {
  window.history.pushState(null, '', `${BASE}${to}`);
  window.dispatchEvent(new PopStateEvent('popstate'));
  window.scrollTo(0, 0);
}

/** A link inside the console (a real `<a href>`: it opens in a new tab too). */
export function Link({ to, children, className }: { to: string; children: React.ReactNode; className?: string }) {
  const onClick = (e: MouseEvent<HTMLAnchorElement>) => {
    if (e.metaKey || e.ctrlKey || e.shiftKey || e.button !== 0) return;
    e.preventDefault();
    navigate(to);
  };
  return (
    <a href={`${BASE}${to}`} onClick={onClick} className={className}>
      {children}
    </a>
  );
}
