import { parseExposition } from './exposition.js';
import { renderTop, topView } from './top-view.js';

const placement = `# HELP gpunet_queue_pending_jobs Jobs waiting
# TYPE gpunet_queue_pending_jobs gauge
gpunet_queue_pending_jobs{service="placement",instance="placement",reason="Resources"} 3
gpunet_queue_pending_jobs{service="placement",instance="placement",reason="Inputs"} 1
gpunet_gpus{node="node-1",model="a100",state="held",service="placement",instance="placement"} 3
gpunet_gpus{node="node-1",model="a100",state="free",service="placement",instance="placement"} 1
gpunet_gpus{node="node-2",model="a100",state="free",service="placement",instance="placement"} 4
gpunet_node_heartbeat_age_seconds{node="node-1",service="placement",instance="placement"} 0.5
gpunet_node_heartbeat_age_seconds{node="node-2",service="placement",instance="placement"} 42
gpunet_jetstream_consumer_pending_messages{stream="GPUNET_EVENTS",consumer="ledger",service="placement",instance="placement"} 17
gpunet_dead_letter_messages{consumer="ledger",service="placement",instance="placement"} 2
gpunet_outbox_relay_lag_seconds{service="placement",instance="placement"} 0
`;
const ledger = `gpunet_billed_gpu_milliseconds_total{team="acme",model="a100",service="ledger",instance="ledger"} 7200000
gpunet_jobs_weird{label="with \\"quotes\\", and, commas"} 1e3
`;
const agent = 'gpunet_agent_attempts{service="execution",instance="node-1"} 2\n';

describe('parseExposition', () => {
  it('reads names, labels (escapes included) and values, and skips comments', () => {
    const samples = parseExposition(placement + ledger);
    expect(samples[0]).toEqual({ name: 'gpunet_queue_pending_jobs', labels: { service: 'placement', instance: 'placement', reason: 'Resources' }, value: 3 });
    expect(samples.find((s) => s.name === 'gpunet_jobs_weird')).toEqual({ name: 'gpunet_jobs_weird', labels: { label: 'with "quotes", and, commas' }, value: 1000 });
    expect(parseExposition('up 1 1700000000000\nnot a sample\nx{a="1"} +Inf\n')).toEqual([
      { name: 'up', labels: {}, value: 1 },
      { name: 'x', labels: { a: '1' }, value: Infinity },
    ]);
  });
});

describe('topView', () => {
  const view = topView(
    [
      { target: 'placement', url: 'u1', samples: parseExposition(placement) },
      { target: 'ledger', url: 'u2', samples: parseExposition(ledger) },
      { target: 'node-1', url: 'u3', samples: parseExposition(agent) },
      { target: 'node-2', url: 'u4', error: 'connect ECONNREFUSED' },
    ],
    new Date('2026-01-01T00:00:00Z'),
  );

  it('adds GPUs up per model and per node, and joins each agent to its node', () => {
    expect(view.queue).toEqual({ Resources: 3, Inputs: 1 });
    expect(view.gpus).toEqual([{ model: 'a100', held: 3, free: 5 }]);
    expect(view.nodes).toEqual([
      { node: 'node-1', held: 3, free: 1, heartbeatAgeSeconds: 0.5, attempts: 2, up: true },
      { node: 'node-2', held: 0, free: 4, heartbeatAgeSeconds: 42, up: false },
    ]);
    expect(view.consumers).toEqual([{ stream: 'GPUNET_EVENTS', consumer: 'ledger', pending: 17, ackPending: 0, redelivered: 0, deadLetters: 2 }]);
    expect(view.billed).toEqual([{ team: 'acme', model: 'a100', gpuMilliseconds: 7_200_000 }]);
  });

  it('renders the figures and names the processes that did not answer', () => {
    const text = renderTop(view);
    expect(text).toContain('3/4 processes answering (down: node-2)');
    expect(text).toContain('QUEUE  4 waiting: Resources 3, Inputs 1');
    expect(text).toMatch(/node-2\s+NO\s+0\s+4\s+-\s+42s/);
    expect(text).toMatch(/GPUNET_EVENTS\s+ledger\s+17\s+0\s+0\s+2/);
    expect(text).toMatch(/acme\s+a100\s+2\.000/);
  });
});
