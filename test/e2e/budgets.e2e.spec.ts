/**
 * Budgets across real processes (`gpunet up`: one agent of 4 simulated GPUs priced 1 µ per GPU-ms,
 * so one GPU for 10 min is 0.60): a billing key sets the budget with the CLI, `gpunet estimate`
 * and submit say the worst case and what remains, a job past a `hold` budget waits in the queue
 * with reason `BudgetExceeded` and is placed once the budget allows it, a running job is never
 * stopped when the budget is lowered, and a `refuse` budget refuses with the figures.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { runCli } from '../../libs/cli/src/program.js';
import { scriptJob } from '../support/jobs.js';
import { TestNetwork, withLogsOnFailure, NETWORK_START_HOOK_MS } from '../support/network.js';
import { until } from '../support/poll.js';

let net: TestNetwork | undefined;
const network = () => net!;
const e2e = (body: () => Promise<void>) => withLogsOnFailure(() => net, body);
let billingKey = '';

beforeAll(async () => {
  net = await TestNetwork.start({ agents: 1, gpus: 4 });
  const issued = await net.client(net.team, net.adminApiKey).createApiKey({ team: net.team, role: 'billing', name: 'billing-staff' });
  billingKey = issued.apiKey;
}, NETWORK_START_HOOK_MS);

afterAll(async () => {
  await net?.stop();
}, 60_000);

async function cli(args: string[], apiKey: string): Promise<{ code: number; out: string; err: string }> {
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  const o = new PassThrough();
  const e = new PassThrough();
  o.on('data', (c: Buffer) => out.push(c));
  e.on('data', (c: Buffer) => err.push(c));
  const code = await runCli(args, { stdout: o, stderr: e, env: { GPUNET_URL: network().url, GPUNET_API_KEY: apiKey }, cwd: network().dataDir });
  return { code, out: Buffer.concat(out).toString('utf8'), err: Buffer.concat(err).toString('utf8') };
}

describe('budgets on a running network', () => {
  it(
    'hold: the job past the budget waits with BudgetExceeded; lowering the budget never stops the running job; raising it places the held one',
    e2e(async () => {
      const team = network().team;
      const producer = network().client();
      // A producer key may not set a budget (the CLI says which role can).
      const refused = await cli(['budget', 'set', '--team', team, '--monthly', '1.00'], network().apiKey);
      expect(refused.code).not.toBe(0);
      expect(refused.err).toContain('needs a key with role billing');

      const set = await cli(['budget', 'set', '--team', team, '--monthly', '1.00', '--on-exceed', 'hold'], billingKey);
      expect(set.code).toBe(0);
      expect(set.out).toMatch(new RegExp(`team ${team}: 1\\.000000 [A-Z]{3} per month, holds jobs beyond it; thresholds 50, 80, 100 %`));

      await writeFile(join(network().dataDir, 'ten.yaml'), 'work:\n  kind: script\n  script: { inline: "true" }\nrequest:\n  gpus: 1\n  timeLimit: 10m\n');
      const estimate = await cli(['estimate', 'ten.yaml'], network().apiKey);
      expect(estimate.code).toBe(0);
      expect(estimate.out).toMatch(/worst case: 0\.600000 [A-Z]{3} \(request × time limit × rate\)/);
      expect(estimate.out).toMatch(/budget: {5}0\.400000 [A-Z]{3} of 1\.000000 [A-Z]{3} remain this month after it/);

      const running = await producer.submit(scriptJob('sleep 120', { gpus: 1, timeLimit: '10m' }));
      expect(running.budget).toMatchObject({ worstCaseMicros: 600_000, remainingMicros: 400_000, held: false });
      await until('the first job runs', async () => ((await producer.getJob(running.jobId)).attempts[0]?.heldAt !== undefined ? true : undefined), { timeoutMs: 30_000 });

      const held = await producer.submit(scriptJob('echo held', { gpus: 1, timeLimit: '10m' }));
      expect(held.budget).toMatchObject({ held: true, remainingMicros: -200_000 });
      await until('the held job waits with BudgetExceeded', async () => ((await producer.queue(held.jobId)).pending[0]?.reason === 'BudgetExceeded' ? true : undefined), { timeoutMs: 20_000 });

      // Lowered below what runs: the running job goes on; the held one still waits.
      expect((await cli(['budget', 'set', '--team', team, '--monthly', '0.10', '--on-exceed', 'hold'], billingKey)).code).toBe(0);
      const show = await cli(['budget', 'show'], network().apiKey);
      expect(show.out).toMatch(/remaining -1\.100000/);
      expect(show.out).toContain(`held (BudgetExceeded): ${held.jobId}`);
      expect((await producer.queue(held.jobId)).pending[0]?.reason).toBe('BudgetExceeded');
      expect((await producer.getJob(running.jobId)).state).toBe('running');

      // Raised: placement places it at once, while the first one still runs.
      expect((await cli(['budget', 'set', '--team', team, '--monthly', '2.00', '--on-exceed', 'hold'], billingKey)).code).toBe(0);
      await until('the held job is placed', async () => ((await producer.getJob(held.jobId)).attempts.length > 0 ? true : undefined), { timeoutMs: 20_000 });
      expect((await producer.getJob(running.jobId)).state).toBe('running');
      const ended = await producer.waitFor(held.jobId, { timeoutMs: 30_000 });
      expect(ended.state).toBe('completed');
      await producer.cancel(running.jobId);
      await producer.waitFor(running.jobId, { timeoutMs: 30_000 });
      // Both ended: their reservations are replaced by what they were billed.
      const after = await until('both reservations released', async () => {
        const b = await producer.budget();
        return b.reservedMicros === 0 ? b : undefined;
      }, { timeoutMs: 20_000 });
      const billed = (await producer.getJob(running.jobId)).ended!.billed.totals[0]!.amountMicros + ((await producer.getJob(held.jobId)).ended!.billed.totals[0]?.amountMicros ?? 0);
      expect(after.spentMicros).toBe(billed);
    }),
    150_000,
  );

  it(
    'refuse: a submit past the budget is refused with the figures and the fix; nothing is submitted',
    e2e(async () => {
      const team = network().team;
      expect((await cli(['budget', 'set', '--team', team, '--monthly', '0.50'], billingKey)).code).toBe(0);
      const before = await network().events({ types: ['JobSubmitted'] });
      await writeFile(join(network().dataDir, 'big.yaml'), 'work:\n  kind: script\n  script: { inline: "true" }\nrequest:\n  gpus: 2\n  timeLimit: 1h\n');
      const r = await cli(['submit', 'big.yaml'], network().apiKey);
      expect(r.code).not.toBe(0);
      expect(r.err).toMatch(/monthly budget of 0\.50 [A-Z]{3} \(\d{4}-\d{2}\) would be exceeded/);
      expect(r.err).toContain("this job's worst case 7.20 (2 GPU × 3600000 ms");
      expect(r.err).toContain(`gpunet budget set --team ${team}`);
      expect(await network().events({ types: ['JobSubmitted'] })).toHaveLength(before.length);
      expect((await network().events({ types: ['BudgetRefused'] })).length).toBeGreaterThan(0);
      expect((await cli(['budget', 'clear', '--team', team], billingKey)).out).toContain('has no budget');
    }),
    60_000,
  );
});
