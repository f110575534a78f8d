/**
 * Jobs: what ran, is running, waits. Server-side paging and filtering (`GET /v1/jobs`), the
 * count per state of everything the filters match (group-by), live from the team feed, CSV.
 * A key that reads every team's audit (compliance) lists every team's jobs (`allTeams`), filters
 * by team and groups by team or state.
 */
import { createColumnHelper, flexRender, getCoreRowModel, useReactTable } from '@tanstack/react-table';
import { useEffect, useMemo, useRef, useState } from 'react';
import { firstJobsAnswered, must, takeFirstJobs, type JobSummary, type ListJobsReply } from '../api/client';
import { followFeed } from '../api/streams';
import { ErrorBox, Loading, saveBlob, Section, StateBadge, Time } from '../components/common';
import { Link, useSession } from '../session';

const STATES = ['submitted', 'staged', 'placed', 'running', 'finishing', 'completed', 'failed', 'timeout', 'cancelled', 'node_lost', 'deadline', 'rejected'] as const;
const OUTCOMES = ['completed', 'failed', 'timeout', 'cancelled', 'node_lost', 'deadline'] as const;

interface Filters {
  state: string;
  gpuModel: string;
  nodeId: string;
  outcome: string;
  from: string;
  to: string;
  team: string;
}
const NO_FILTERS: Filters = { state: '', gpuModel: '', nodeId: '', outcome: '', from: '', to: '', team: '' };

/** A `datetime-local` value (viewer's zone) as a UTC instant. */
function toInstant(local: string): string | undefined {
  if (local === '') return undefined;
  const d = new Date(local);
  return Number.isNaN(d.getTime()) ? undefined : d.toISOString();
}

function queryOf(f: Filters, limit: number, cursor?: string, everyTeam = false) {
  return {
    limit,
    ...(everyTeam ? { allTeams: true } : {}),
    ...(everyTeam && f.team ? { team: f.team } : {}),
    ...(cursor ? { cursor } : {}),
    ...(f.state ? { state: [f.state as (typeof STATES)[number]] } : {}),
    ...(f.gpuModel ? { gpuModel: f.gpuModel } : {}),
    ...(f.nodeId ? { nodeId: f.nodeId } : {}),
    ...(f.outcome ? { outcome: f.outcome as (typeof OUTCOMES)[number] } : {}),
    ...(toInstant(f.from) ? { submittedFrom: toInstant(f.from)! } : {}),
    ...(toInstant(f.to) ? { submittedTo: toInstant(f.to)! } : {}),
  };
}

const col = createColumnHelper<JobSummary>();
const COLUMNS = [
  col.accessor('jobId', { header: 'Job', cell: (c) => <Link to={`/jobs/${c.getValue()}`}><code>{c.getValue()}</code></Link> }),
  col.accessor('team', { header: 'Team' }),
  col.accessor('name', { header: 'Name', cell: (c) => c.getValue() ?? '' }),
  col.accessor('state', { header: 'State', cell: (c) => <StateBadge state={c.getValue()} /> }),
  col.accessor('outcome', { header: 'Outcome', cell: (c) => c.getValue() ?? '' }),
  col.accessor('gpus', { header: 'GPUs', cell: (c) => <span className="num">{c.getValue()}</span> }),
  col.accessor('gpuModel', { header: 'Model', cell: (c) => c.getValue() ?? 'any' }),
  col.accessor('nodeId', { header: 'Node', cell: (c) => c.getValue() ?? '' }),
  col.accessor('submittedAt', { header: 'Submitted', cell: (c) => <Time iso={c.getValue()} /> }),
  col.accessor('updatedAt', { header: 'Updated', cell: (c) => <Time iso={c.getValue()} /> }),
];

const PAGE = 50;

export function JobsPage() {
  const { api, key, can } = useSession();
  const everyTeam = can('audit:read-all-teams');
  const [groupBy, setGroupBy] = useState<'state' | 'team'>('state');
  const [filters, setFilters] = useState<Filters>(NO_FILTERS);
  const [cursors, setCursors] = useState<string[]>([]); // cursors of the pages before this one's
  // The first page with no filter may be here already (index.html asked before the bundle ran): rows in the first render.
  const [reply, setReply] = useState<ListJobsReply | undefined>(() => firstJobsAnswered(key, `/v1/jobs?limit=${PAGE}`));
  const [error, setError] = useState<unknown>();
  const [loading, setLoading] = useState(reply === undefined);
  const answered = useRef(reply !== undefined); // the first load is that answer
  const [live, setLive] = useState<'connecting' | 'live' | 'off'>('connecting');
  const [exporting, setExporting] = useState(false);
  const cursor = cursors.at(-1);
  const tick = useRef(0);

  const load = useMemo(
    () => async () => {
      if (answered.current) {
        answered.current = false;
        return;
      }
      const mine = ++tick.current;
      setLoading(true);
      try {
        // The first page with no filter may already be on its way (index.html asked before the bundle ran; a team's own list only).
        const early = cursor === undefined && filters === NO_FILTERS && !everyTeam ? takeFirstJobs(key, `/v1/jobs?limit=${PAGE}`) : undefined;
        const r = await (early ?? must(api.GET('/v1/jobs', { params: { query: queryOf(filters, PAGE, cursor, everyTeam) } })));
        if (mine === tick.current) {
          setReply(r);
          setError(undefined);
        }
      } catch (err) {
        if (mine === tick.current) setError(err);
      } finally {
        if (mine === tick.current) setLoading(false);
      }
    },
    [api, key, filters, cursor, everyTeam],
  );

  useEffect(() => {
    void load();
  }, [load]);

  // Live: every feed entry after the store's head now may change a row or add one; reload the page (at most every 500 ms).
  // The head is read at once, the feed opened only once the first rows show: it does not compete with them.
  const loadRef = useRef(load);
  loadRef.current = load;
  const head = useMemo(() => fetch('/healthz').then(async (r) => ((await r.json()) as { position: string }).position).catch(() => undefined), [key]);
  const shown = reply !== undefined || error !== undefined;
  useEffect(() => {
    if (!shown) return;
    const abort = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    (async () => {
      const position = await head;
      if (position === undefined) throw new Error('no store position from /healthz');
      setLive('live');
      await followFeed(key, { after: position }, () => {
        if (timer === undefined) timer = setTimeout(() => { timer = undefined; void loadRef.current(); }, 500);
      }, abort.signal);
    })().catch(() => !abort.signal.aborted && setLive('off'));
    return () => {
      abort.abort();
      clearTimeout(timer);
    };
  }, [key, head, shown]);

  const table = useReactTable({ data: reply?.jobs ?? [], columns: COLUMNS, state: { columnVisibility: { team: everyTeam } }, getCoreRowModel: getCoreRowModel(), manualPagination: true, manualFiltering: true });

  const set = (patch: Partial<Filters>) => {
    setCursors([]);
    setFilters((f) => ({ ...f, ...patch }));
  };

  const exportCsv = async () => {
    setExporting(true);
    try {
      const rows: JobSummary[] = [];
      let next: string | undefined;
      do {
        const r = await must(api.GET('/v1/jobs', { params: { query: queryOf(filters, 500, next, everyTeam) } }));
        rows.push(...r.jobs);
        next = r.nextCursor ?? undefined;
      } while (next && rows.length < 100_000);
      const cols = ['jobId', 'team', 'name', 'state', 'outcome', 'gpus', 'gpuModel', 'nodeId', 'submittedAt', 'updatedAt'] as const;
      const esc = (v: unknown) => (v === undefined ? '' : /[",\n]/.test(String(v)) ? `"${String(v).replaceAll('"', '""')}"` : String(v));
      const csv = [cols.join(','), ...rows.map((r) => cols.map((c) => esc(r[c])).join(','))].join('\n') + '\n';
      saveBlob(new Blob([csv], { type: 'text/csv' }), 'jobs.csv');
    } catch (err) {
      setError(err);
    } finally {
      setExporting(false);
    }
  };

  const total = reply?.countsByState?.reduce((n, c) => n + c.count, 0) ?? 0;
  return (
    <>
      <h1>Jobs</h1>
      <form className="filters" aria-label="Filter jobs" onSubmit={(e) => e.preventDefault()}>
        <label>
          State
          <select value={filters.state} onChange={(e) => set({ state: e.target.value })}>
            <option value="">any</option>
            {STATES.map((s) => <option key={s}>{s}</option>)}
          </select>
        </label>
        {everyTeam && (
          <label>
            Team
            <input value={filters.team} onChange={(e) => set({ team: e.target.value.trim() })} placeholder="every team" />
          </label>
        )}
        <label>
          Outcome
          <select value={filters.outcome} onChange={(e) => set({ outcome: e.target.value })}>
            <option value="">any</option>
            {OUTCOMES.map((s) => <option key={s}>{s}</option>)}
          </select>
        </label>
        <label>
          GPU model
          <input value={filters.gpuModel} onChange={(e) => set({ gpuModel: e.target.value })} placeholder="e.g. A100-80GB" />
        </label>
        <label>
          Node
          <input value={filters.nodeId} onChange={(e) => set({ nodeId: e.target.value })} placeholder="e.g. node-1" />
        </label>
        <label>
          Submitted from
          <input type="datetime-local" value={filters.from} onChange={(e) => set({ from: e.target.value })} />
        </label>
        <label>
          to
          <input type="datetime-local" value={filters.to} onChange={(e) => set({ to: e.target.value })} />
        </label>
        <button type="button" onClick={() => set(NO_FILTERS)}>Clear</button>
        <button type="button" onClick={() => void exportCsv()} disabled={exporting}>{exporting ? 'Exporting…' : 'Export CSV'}</button>
      </form>
      <Section
        title={groupBy === 'team' ? 'By team' : 'By state'}
        actions={
          <>
            {everyTeam && (
              <span role="group" aria-label="Group by">
                <button type="button" aria-pressed={groupBy === 'state'} onClick={() => setGroupBy('state')}>state</button>{' '}
                <button type="button" aria-pressed={groupBy === 'team'} onClick={() => setGroupBy('team')}>team</button>
              </span>
            )}
            <span className={`live live-${live}`} role="status">{live === 'live' ? '● live' : live === 'off' ? 'live updates off' : 'connecting…'}</span>
          </>
        }
      >
        {groupBy === 'team' ? (
          <ul className="groups" aria-label="Jobs per team">
            <li>
              <button type="button" aria-pressed={filters.team === ''} onClick={() => set({ team: '' })}>every team <span className="num">{reply?.countsByTeam?.reduce((n, c) => n + c.count, 0) ?? 0}</span></button>
            </li>
            {(reply?.countsByTeam ?? []).map((c) => (
              <li key={c.team}>
                <button type="button" aria-pressed={filters.team === c.team} data-team={c.team} onClick={() => set({ team: c.team })}>
                  {c.team} <span className="num">{c.count}</span>
                </button>
              </li>
            ))}
          </ul>
        ) : (
        <ul className="groups" aria-label="Jobs per state">
          <li>
            <button type="button" aria-pressed={filters.state === ''} onClick={() => set({ state: '' })}>all <span className="num">{total}</span></button>
          </li>
          {(reply?.countsByState ?? []).map((c) => (
            <li key={c.state}>
              <button type="button" aria-pressed={filters.state === c.state} onClick={() => set({ state: c.state })}>
                <StateBadge state={c.state} /> <span className="num">{c.count}</span>
              </button>
            </li>
          ))}
        </ul>
        )}
      </Section>
      <ErrorBox error={error} />
      {loading && !reply && <Loading label="Loading jobs" />}
      <div className="table-wrap" tabIndex={0} role="region" aria-label="Scrollable table">
        <table className="grid" aria-label="Jobs" aria-busy={loading}>
          <thead>
            {table.getHeaderGroups().map((g) => (
              <tr key={g.id}>{g.headers.map((h) => <th key={h.id} scope="col">{flexRender(h.column.columnDef.header, h.getContext())}</th>)}</tr>
            ))}
          </thead>
          <tbody>
            {table.getRowModel().rows.map((r) => (
              <tr key={r.id} data-job={r.original.jobId}>{r.getVisibleCells().map((c) => <td key={c.id}>{flexRender(c.column.columnDef.cell, c.getContext())}</td>)}</tr>
            ))}
            {reply && reply.jobs.length === 0 && (
              <tr><td colSpan={COLUMNS.length} className="muted">No job matches.</td></tr>
            )}
          </tbody>
        </table>
      </div>
      <nav className="pager" aria-label="Pages of jobs">
        <button type="button" disabled={cursors.length === 0} onClick={() => setCursors((c) => c.slice(0, -1))}>← Newer</button>
        <span>page {cursors.length + 1}</span>
        <button type="button" disabled={!reply?.nextCursor} onClick={() => reply?.nextCursor && setCursors((c) => [...c, reply.nextCursor!])}>Older →</button>
        {loading && reply && <Loading label="Updating" />}
      </nav>
    </>
  );
}
