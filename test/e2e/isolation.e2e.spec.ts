/**
 * Isolation through the whole network: jobs submitted over HTTP to real agents (running as
 * root, as node agents do) try to break out, and cannot. The run engine's own tests
 * (services/execution/src/run/isolation.int.spec.ts) cover fork bombs and memory hogs; here the
 * agent's wiring is checked: job users, the network namespace, the scrubbed environment and
 * closed directories between two jobs running at once on one node.
 */
import type { JobStarted, NodeRegistered } from '#contracts';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { jobEvents, scriptJob, settle } from '../support/jobs.js';
import { TestNetwork, withLogsOnFailure, NETWORK_START_HOOK_MS } from '../support/network.js';
import { until } from '../support/poll.js';

let net: TestNetwork | undefined;
const network = () => net!;
const e2e = (body: () => Promise<void>) => withLogsOnFailure(() => net, body);

/** The job's stdout lines, as `gpunet logs` returns them once it ended. */
async function stdout(jobId: string): Promise<string[]> {
  const lines: string[] = [];
  for await (const l of network().client().logs(jobId)) if (l.stream === 'stdout') lines.push(l.line);
  return lines;
}

beforeAll(async () => {
  // The data directory is a mkdtemp (0700); `gpunet up` itself opens it for passing, not listing
  // (0711), so that job users reach their runs below it.
  // No container runtime here: container work is refused at placement (containers.e2e.spec.ts runs it).
  net = await TestNetwork.start({ agents: 1, gpus: 2, env: { GPUNET_KILL_GRACE_MS: '1000', GPUNET_SECRET_FOR_TEST: 'agent-secret-123', GPUNET_CONTAINER_RUNTIME: 'off' } });
}, NETWORK_START_HOOK_MS);

afterAll(async () => {
  await net?.stop();
}, 60_000);

describe('isolation of jobs on a real agent', () => {
  it(
    'registers what it can confine: a network namespace',
    e2e(async () => {
      const regs = (await network().events({ types: ['NodeRegistered'] })).map((e) => e.data as NodeRegistered);
      expect(regs.at(-1)).toMatchObject({ nodeId: 'node-1', networkIsolation: true });
    }),
  );

  it(
    'refuses container work at placement, naming the missing runtime, when no node has one: nothing is held',
    e2e(async () => {
      const regs = (await network().events({ types: ['NodeRegistered'] })).map((e) => e.data as NodeRegistered);
      expect(regs.at(-1)!.containerRuntimes).toEqual([]); // GPUNET_CONTAINER_RUNTIME=off
      const client = network().client();
      const { jobId } = await client.submit({ work: { kind: 'container', image: 'ghcr.io/acme/train:1.4' }, request: { gpus: 1, timeLimit: '1m' } } as never);
      await until('the container job to be rejected', async () => (await client.getJob(jobId)).state === 'rejected', { timeoutMs: 30_000, intervalMs: 200 });
      const events = await jobEvents(network(), [jobId]);
      const rejected = events.find((e) => e.type === 'JobRejected')!.data as { reason: string; message: string };
      expect(rejected.reason).toBe('unsatisfiable');
      expect(rejected.message).toMatch(/container runtime \(docker or podman\)/);
      expect(events.map((e) => e.type)).not.toContain('ComputeHeld');
      expect(events.map((e) => e.type)).not.toContain('JobPlaced');
    }),
    60_000,
  );

  it(
    'runs the job as an unprivileged user, without the agent’s environment, and without network unless asked',
    e2e(async () => {
      const client = network().client();
      const intake = new URL(network().url);
      const probe = [
        'echo "uid=$(id -u)"',
        'env | grep -c -E "GPUNET_(NATS|STORE|SECRET|API)" | sed "s/^/leaked=/"',
        `if timeout 3 bash -c 'exec 3<>/dev/tcp/${intake.hostname}/${intake.port}' 2>/dev/null; then echo net=yes; else echo net=no; fi`,
      ].join('\n');
      const { jobId: closed } = await client.submit(scriptJob(probe, { name: 'no-net' }));
      const { jobId: open } = await client.submit({ ...scriptJob(probe, { name: 'with-net' }), request: { gpus: 1, timeLimit: '1m', network: true } } as never);
      const { views } = await settle(network(), [closed, open]);
      expect(views.get(closed)!.state).toBe('completed');
      expect(views.get(open)!.state).toBe('completed');

      const closedOut = await stdout(closed);
      expect(closedOut.find((l) => l.startsWith('uid='))).toMatch(/^uid=61\d{3}$/);
      expect(closedOut).toContain('leaked=0');
      expect(closedOut).toContain('net=no');
      const openOut = await stdout(open);
      expect(openOut).toContain('net=yes');
      expect(openOut.find((l) => l.startsWith('uid='))).toMatch(/^uid=61\d{3}$/);

      // The audit trail says what ran: the script's sha256.
      const started = (await jobEvents(network(), [closed], ['JobStarted'])).map((e) => e.data as JobStarted);
      expect(started[0]!.work).toEqual({ kind: 'script', digest: expect.stringMatching(/^sha256:[0-9a-f]{64}$/) });
    }),
    90_000,
  );

  it(
    'keeps two jobs on one node out of each other’s directories',
    e2e(async () => {
      const client = network().client();
      const { jobId: a } = await client.submit(
        // Runs until cancelled below: its directories must still be there when the attacker runs,
        // however long a loaded machine takes to place and start it.
        scriptJob('echo secret-of-a > "$GPUNET_WORK_DIR/secret"; echo "dir=$GPUNET_WORK_DIR"; echo "out=$GPUNET_OUTPUT_DIR"; sleep 600', { name: 'victim', timeLimit: '15m' }),
      );
      let dirs: string[] = [];
      await until('the first job to say where it works', async () => {
        const lines: string[] = [];
        const abort = new AbortController();
        const timer = setTimeout(() => abort.abort(), 1_000);
        try {
          for await (const l of client.logs(a, { follow: true, signal: abort.signal })) {
            lines.push(l.line);
            if (lines.some((x) => x.startsWith('out='))) break;
          }
        } catch {
          // aborted: not there yet
        } finally {
          clearTimeout(timer);
        }
        dirs = lines.filter((l) => l.startsWith('dir=') || l.startsWith('out=')).map((l) => l.slice(4));
        return dirs.length === 2;
      }, { timeoutMs: 30_000, intervalMs: 200 });
      const [work, out] = dirs as [string, string];

      const attack = [
        `cat ${work}/secret`,
        `ls ${work}`,
        `ls ${work}/..`,
        `touch ${out}/planted`,
        `ls ${work}/../../..`,
      ];
      const script = attack.map((t, i) => `if ${t} >/dev/null 2>&1; then echo "BROKE-OUT ${i}"; else echo "refused ${i}"; fi`).join('\n');
      const { jobId: b } = await client.submit(scriptJob(script, { name: 'attacker' }));
      const { views } = await settle(network(), [b]);
      expect(views.get(b)!.state).toBe('completed');
      const lines = await stdout(b);
      expect(lines.filter((l) => l.startsWith('BROKE-OUT'))).toEqual([]);
      expect(lines.filter((l) => l.startsWith('refused'))).toHaveLength(attack.length);
      expect((await client.getJob(a)).state).toBe('running'); // the attack met a live victim
      await client.cancel(a);
      await settle(network(), [a]);
    }),
    120_000,
  );
});
