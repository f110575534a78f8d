/** Queue & capacity: the team's waiting jobs (why, expected start), free GPUs per model per hour for 24 h, the nodes. */
import { must } from '../api/client';
import { CapacityChart } from '../components/capacity-chart';
import { ErrorBox, Loading, Section, Time, useLoad } from '../components/common';
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
