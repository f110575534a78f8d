/**
 * One job: its spec, its life to scale with the billed span of each attempt, attempts, logs
 * (following while it runs), outputs to download, its charge line by line, and why it waits.
 * Follows the job's own feed (`/v1/feed?jobId=`) and reads the view again on each entry.
 */
import { useEffect, useRef, useState } from 'react';
import { authedFetch, must, type JobView, type Schemas } from '../api/client';
import { followFeed, readLogs, type LogLine } from '../api/streams';
import { ErrorBox, Loading, Money, saveBlob, Section, StateBadge, Time } from '../components/common';
import { Timeline } from '../components/timeline';
import { formatBytes, formatDuration } from '../format/money';
import { Link, useSession } from '../session';

const WAITING = new Set(['submitted', 'staged']);

export function JobPage({ jobId }: { jobId: string }) {
  const { api, key } = useSession();
  const [job, setJob] = useState<JobView | undefined>();
  const [error, setError] = useState<unknown>();
  const [now, setNow] = useState(() => Date.now());
  const [charges, setCharges] = useState<Schemas['GetChargesReply'] | undefined>();
  const [queue, setQueue] = useState<Schemas['GetQueueReply'] | undefined>();

  const reload = useRef<() => Promise<void>>(async () => undefined);
  reload.current = async () => {
    try {
      const j = await must(api.GET('/v1/jobs/{jobId}', { params: { path: { jobId } } }));
      setJob(j);
      setError(undefined);
      // Secondary panels, both at once, after the view (the timeline) is drawn.
      const [q, c] = await Promise.all([
        WAITING.has(j.state) ? must(api.GET('/v1/jobs/{jobId}/queue', { params: { path: { jobId } } })).catch(() => undefined) : undefined,
        j.attempts.some((a) => a.finishedAt) ? must(api.GET('/v1/charges', { params: { query: { jobId } } })).catch(() => undefined) : undefined,
      ]);
      setQueue(q);
      if (c) setCharges(c);
    } catch (err) {
      setError(err);
    }
  };

  useEffect(() => {
    setJob(undefined);
    const abort = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    // The view first; the job's feed (every entry from its start, so nothing is missed) once it is drawn.
    void reload.current()
      .then(() => {
        if (abort.signal.aborted) return;
        return followFeed(key, { jobId }, () => {
          if (timer === undefined) timer = setTimeout(() => { timer = undefined; void reload.current(); }, 150);
        }, abort.signal).then(() => reload.current());
      })
      .catch(() => undefined);
    return () => {
      abort.abort();
      clearTimeout(timer);
    };
  }, [jobId, key]);

  const over = job?.ended !== undefined;
  useEffect(() => {
    if (over) return;
    const t = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(t);
  }, [over]);

  if (error && !job) return <><h1>Job <code>{jobId}</code></h1><ErrorBox error={error} /></>;
  if (!job) return <Loading label="Loading the job" />;
  const waiting = queue?.pending.find((p) => p.jobId === jobId);
  return (
    <>
      <p><Link to="/">← Jobs</Link></p>
      <h1>
        Job <code>{job.jobId}</code> {job.name && <span className="muted">{job.name}</span>} <StateBadge state={job.state} />
      </h1>
      <ErrorBox error={error} />
      {waiting && (
        <p className="waiting" role="status">
          Waiting: <strong>{waiting.reason}</strong> — place {waiting.position} in line
          {waiting.expectedStart ? <>, expected to start <Time iso={waiting.expectedStart} /></> : ', no expected start yet'}.
        </p>
      )}
      {job.rejection && (
        <div className="error" role="alert">
          Rejected ({job.rejection.reason}): {job.rejection.message}
          <ul>{job.rejection.issues.map((i) => <li key={i.path}><code>{i.path}</code> {i.message}{i.fix && <> — fix: {i.fix}</>}</li>)}</ul>
        </div>
      )}
      <Section title="Timeline">
        <Timeline job={job} now={now} />
      </Section>
      <div className="cols">
        <Section title="Spec"><Spec job={job} /></Section>
        <Section title="Charge"><Charge job={job} charges={charges} /></Section>
      </div>
      <Section title="Attempts"><Attempts job={job} /></Section>
      <Section title="Outputs"><Outputs job={job} /></Section>
      <Section title="Logs"><Logs jobId={job.jobId} follow={!over} /></Section>
    </>
  );
}

function useDigest(value: unknown): string | undefined {
  const [digest, setDigest] = useState<string>();
  const text = JSON.stringify(value);
  useEffect(() => {
    if (!crypto.subtle) return;
    void crypto.subtle.digest('SHA-256', new TextEncoder().encode(text)).then((d) => setDigest([...new Uint8Array(d)].map((b) => b.toString(16).padStart(2, '0')).join('')));
  }, [text]);
  return digest;
}

function Spec({ job }: { job: JobView }) {
  const r = job.spec.request;
  const digest = useDigest(job.spec.work);
  const work = job.spec.work as { kind: string; image?: string; command?: string[]; script?: { inline?: string; path?: string } };
  return (
    <dl className="facts">
      <dt>Team</dt><dd>{job.team}</dd>
      <dt>Work</dt><dd>{work.kind}{work.image ? ` ${work.image}` : ''}</dd>
      <dt>Work digest</dt><dd><code title="sha256 of the spec's work, as JSON">{digest ? `sha256:${digest.slice(0, 16)}…` : '—'}</code></dd>
      <dt>Request</dt><dd>{r.gpus} × {r.gpuModel ?? 'any GPU'}, time limit {formatDuration(r.timeLimitMs)}{r.network ? ', network' : ''}</dd>
      <dt>Inputs</dt><dd>{job.spec.data.inputs.length} file(s)</dd>
      <dt>Submitted</dt><dd><Time iso={job.submittedAt} /></dd>
      <dt>Deadline</dt><dd><Time iso={job.deadlineAt} /></dd>
      <dt>Ended</dt><dd><Time iso={job.ended?.endedAt} /></dd>
    </dl>
  );
}

function Charge({ job, charges }: { job: JobView; charges: Schemas['GetChargesReply'] | undefined }) {
  if (!charges || charges.lines.length === 0) return <p className="muted">{job.ended ? 'Nothing billed.' : 'Billed once an attempt finishes.'}</p>;
  return (
    <table className="grid compact" aria-label="Charge lines">
      <thead><tr><th scope="col">Attempt</th><th scope="col">Node</th><th scope="col">GPUs</th><th scope="col">Billed</th><th scope="col">Rate / GPU-h</th><th scope="col">Amount</th></tr></thead>
      <tbody>
        {charges.lines.map((l) => (
          <tr key={`${l.attemptId}-${l.nodeId}`}>
            <td><code>{l.attemptId}</code></td><td>{l.nodeId}</td><td className="num">{l.gpus} × {l.gpuModel}</td>
            <td className="num">{formatDuration(l.billableMs)}</td>
            <td><Money micros={l.rateMicrosPerGpuHour} currency={l.currency} /></td>
            <td><Money micros={l.amountMicros} currency={l.currency} precise />{l.waivedReason && <> (waived: {l.waivedReason})</>}</td>
          </tr>
        ))}
      </tbody>
      <tfoot>
        {charges.totals.map((t) => (
          <tr key={t.currency}><th scope="row" colSpan={5}>Total ({formatDuration(charges.billableMs)} billed)</th><td><Money micros={t.amountMicros} currency={t.currency} /></td></tr>
        ))}
      </tfoot>
    </table>
  );
}

function Attempts({ job }: { job: JobView }) {
  if (job.attempts.length === 0) return <p className="muted">Not placed yet.</p>;
  return (
    <div className="table-wrap" tabIndex={0} role="region" aria-label="Scrollable table">
      <table className="grid" aria-label="Attempts">
        <thead><tr><th scope="col">#</th><th scope="col">Node</th><th scope="col">GPU ids</th><th scope="col">Model</th><th scope="col">Held</th><th scope="col">Started</th><th scope="col">Finished</th><th scope="col">Released</th><th scope="col">Outcome</th></tr></thead>
        <tbody>
          {job.attempts.map((a) => (
            <tr key={a.attemptId}>
              <td>{a.attempt}</td><td>{a.nodes ? a.nodes.map((n) => n.nodeId).join(', ') : a.nodeId}</td><td>{a.gpuIndices.join(', ')}</td><td>{a.gpuModel}</td>
              <td><Time iso={a.heldAt} timeOnly /></td><td><Time iso={a.startedAt} timeOnly /></td><td><Time iso={a.finishedAt} timeOnly /></td><td><Time iso={a.releasedAt} timeOnly /></td>
              <td>{a.outcome ?? 'running'}{a.exitCode !== undefined && a.exitCode !== null ? ` (exit ${a.exitCode})` : ''}{a.message ? ` — ${a.message}` : ''}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function Outputs({ job }: { job: JobView }) {
  const { key } = useSession();
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState<string>();
  if (!job.outputs) return <p className="muted">{job.ended ? 'No outputs.' : 'Stored when the job ends.'}</p>;
  const download = async (path: string) => {
    setBusy(path);
    try {
      const res = await authedFetch(key, `/v1/jobs/${job.jobId}/outputs/${path.split('/').map(encodeURIComponent).join('/')}`);
      saveBlob(await res.blob(), path.split('/').at(-1)!);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(undefined);
    }
  };
  return (
    <>
      <ErrorBox error={error} />
      <table className="grid" aria-label="Outputs">
        <thead><tr><th scope="col">File</th><th scope="col">Size</th><th scope="col">sha256</th><th scope="col"><span className="sr-only">Download</span></th></tr></thead>
        <tbody>
          {job.outputs.files.map((f) => (
            <tr key={f.path}>
              <td><code>{f.path}</code></td><td className="num" title={`${f.size} bytes`}>{formatBytes(f.size)}</td><td><code title={f.sha256}>{f.sha256.slice(0, 16)}…</code></td>
              <td><button type="button" onClick={() => void download(f.path)} disabled={busy === f.path} aria-label={`Download ${f.path}`}>{busy === f.path ? 'Downloading…' : 'Download'}</button></td>
            </tr>
          ))}
        </tbody>
      </table>
      {job.outputs.truncated && <p>Some files were skipped at the output size cap.</p>}
      {(job.outputs.rejected ?? []).length > 0 && <p>Refused: {job.outputs.rejected!.map((r) => `${r.path} (${r.reason})`).join(', ')}</p>}
    </>
  );
}

function Logs({ jobId, follow }: { jobId: string; follow: boolean }) {
  const { key } = useSession();
  const [lines, setLines] = useState<LogLine[]>([]);
  const [error, setError] = useState<unknown>();
  const [state, setState] = useState<'reading' | 'following' | 'done'>('reading');
  useEffect(() => {
    const abort = new AbortController();
    setLines([]);
    setState(follow ? 'following' : 'reading');
    readLogs(key, jobId, follow, (l) => setLines((ls) => [...ls, l]), abort.signal).then(
      () => setState('done'),
      (err: unknown) => !abort.signal.aborted && setError(err),
    );
    return () => abort.abort();
    // Following stops by itself when the job ends (the server ends the stream).
  }, [jobId, key]);
  return (
    <>
      <ErrorBox error={error} />
      <p className="muted" role="status">{state === 'following' ? 'following while the job runs…' : state === 'reading' ? 'reading…' : `${lines.length} line(s)`}</p>
      <pre className="logs" tabIndex={0} aria-label="Log lines">
        {lines.map((l, i) => (
          <span key={i} className={`log-${l.stream}`}>
            <time dateTime={l.ts} title={l.ts}>{new Date(l.ts).toLocaleTimeString(undefined, { hour12: false })}</time> {l.stream === 'stdout' ? '' : `[${l.stream}] `}{l.line}
            {'\n'}
          </span>
        ))}
      </pre>
    </>
  );
}
