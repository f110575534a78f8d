/** Queue & capacity: the team's waiting jobs (why, expected start), free GPUs per model per hour for 24 h, the nodes. */
import { must, type Schemas } from '../api/client';
import { CapacityChart } from '../components/capacity-chart';
import { ErrorBox, Loading, Section, Time, useLoad } from '../components/common';
import { formatDuration } from '../format/money';
import { Link, useSession } from '../session';

export function QueuePage() {
  const { api } = useSession();
  const queue = useLoad(() => must(api.GET('/v1/queue')), [api]);
  const capacity = useLoad(() => must(api.GET('/v1/capacity', { params: { query: { hours: 24 } } })), [api]);
  return (
    <>
      <h1>Queue &amp; capacity</h1>
      <Section title="Waiting jobs" actions={<button type="button" onClick={queue.reload}>Refresh</button>}>
        <ErrorBox error={queue.error} />
        {queue.loading && <Loading label="Asking placement" />}
        {queue.data && (
          <div className="table-wrap" tabIndex={0} role="region" aria-label="Scrollable table">
            <table className="grid" aria-label="Waiting jobs">
              <thead><tr><th scope="col">Place</th><th scope="col">Job</th><th scope="col">Reason</th><th scope="col">GPUs</th><th scope="col">Attempt</th><th scope="col">Submitted</th><th scope="col">Expected start</th></tr></thead>
              <tbody>
                {queue.data.pending.map((p) => (
                  <tr key={p.jobId}>
                    <td className="num">{p.position}</td><td><Link to={`/jobs/${p.jobId}`}><code>{p.jobId}</code></Link></td><td>{p.reason}</td>
                    <td className="num">{p.gpus} × {p.gpuModel ?? 'any'}</td><td className="num">{p.attempt}</td><td><Time iso={p.submittedAt} /></td><td><Time iso={p.expectedStart} /></td>
                  </tr>
                ))}
                {queue.data.pending.length === 0 && <tr><td colSpan={7} className="muted">None of your jobs waits.</td></tr>}
              </tbody>
            </table>
          </div>
        )}
      </Section>
      <Section title="Free GPUs, next 24 hours">
        <ErrorBox error={capacity.error} />
        {capacity.loading && <Loading label="Asking placement for the plan" />}
        {capacity.data && <CapacityChart capacity={capacity.data} />}
      </Section>
      <Section title="How honest recent quotes were">
        {capacity.data?.quotes ? <QuoteAccuracy quotes={capacity.data.quotes} /> : capacity.data && <p className="muted">Placement gave no figures.</p>}
      </Section>
      <Section title="Nodes">
        {queue.data && (
          <table className="grid" aria-label="Nodes">
            <thead><tr><th scope="col">Node</th><th scope="col">Models</th><th scope="col">GPUs</th><th scope="col">Free</th><th scope="col">Last heartbeat</th></tr></thead>
            <tbody>
              {queue.data.nodes.map((n) => (
                <tr key={n.nodeId}>
                  <td>{n.nodeId}</td><td>{n.gpuModels.join(', ')}</td><td className="num">{n.gpus}</td><td className="num">{n.freeGpuIndices.length}</td><td><Time iso={n.lastHeartbeatAt} /></td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </Section>
    </>
  );
}

type Quotes = NonNullable<Schemas['CapacityReply']['quotes']>;

/** A signed error: `+4.2 s` late, `−3 min 05 s` early. */
function signed(ms: number | undefined): string {
  if (ms === undefined) return 'n/a';
  return `${ms > 0 ? '+' : ms < 0 ? '−' : ''}${formatDuration(Math.abs(ms))}`;
}

/** Start and end errors of the quotes given (status, estimates, deadlines accepted at submit) and deadlines kept, since the window's start. */
function QuoteAccuracy({ quotes: q }: { quotes: Quotes }) {
  return (
    <table className="grid" aria-label="Quote accuracy">
      <thead><tr><th scope="col">Since</th><th scope="col">Quoted</th><th scope="col">Median error</th><th scope="col">p90 |error|</th></tr></thead>
      <tbody>
        <tr><th scope="row">Starts (<Time iso={q.since} />)</th><td className="num">{q.started}</td><td className="num">{signed(q.medianStartErrorMs)}</td><td className="num">{q.p90StartErrorMs === undefined ? 'n/a' : formatDuration(q.p90StartErrorMs)}</td></tr>
        <tr><th scope="row">Ends</th><td className="num">{q.ended ?? 0}</td><td className="num">{signed(q.medianEndErrorMs)}</td><td className="num">{q.p90EndErrorMs === undefined ? 'n/a' : formatDuration(q.p90EndErrorMs)}</td></tr>
        <tr><th scope="row">Deadlines met</th><td className="num" colSpan={3}>{q.deadlinesAccepted === 0 ? 'no job with a deadline ended' : `${q.deadlinesMet} of ${q.deadlinesAccepted}`}</td></tr>
      </tbody>
    </table>
  );
}
