import { AckPolicy, jetstream, jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { startNatsServer, type TestNatsServer } from '../../../../test/support/nats-server.js';
import { runCli } from '../program.js';

/** `gpunet nats recreate-stream` against a real nats-server holding a GPUNET_EVENTS of the old layout (`limits`). */
describe('gpunet nats recreate-stream', () => {
  let server: TestNatsServer;
  let nc: NatsConnection;
  let jsm: JetStreamManager;
  let dir: string;

  beforeAll(async () => {
    server = await startNatsServer();
    nc = await connect({ servers: server.url });
    jsm = await jetstreamManager(nc);
    dir = await mkdtemp(join(tmpdir(), 'gpunet-recreate-'));
  });
  afterAll(async () => {
    await nc?.close();
    await server?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  async function gpunet(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
    const out = new PassThrough();
    const err = new PassThrough();
    let stdout = '';
    let stderr = '';
    out.on('data', (c: Buffer) => (stdout += c.toString()));
    err.on('data', (c: Buffer) => (stderr += c.toString()));
    const code = await runCli(['nats', 'recreate-stream', ...args, '--nats', server.url, '--data-dir', dir], { stdout: out, stderr: err, env: {}, cwd: dir });
    return { code, stdout, stderr };
  }

  it('refuses while a durable has not acknowledged every message, naming it; then makes the stream again with interest retention and the durables it keeps events for', async () => {
    await jsm.streams.add({ name: 'GPUNET_EVENTS', subjects: ['gpunet.evt.>'] });
    await jsm.consumers.add('GPUNET_EVENTS', { durable_name: 'ledger', ack_policy: AckPolicy.Explicit, filter_subject: 'gpunet.evt.>' });
    const js = jetstream(nc);
    await js.publish('gpunet.evt.JobFinished.ml.job-1', '{}');

    const refused = await gpunet('GPUNET_EVENTS');
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/consumer ledger: has 1 message\(s\) not yet delivered/);
    expect((await jsm.streams.info('GPUNET_EVENTS')).state.messages).toBe(1);

    const m = await (await js.consumers.get('GPUNET_EVENTS', 'ledger')).next({ expires: 5_000 });
    await m!.ackAck();
    // The request that fetched it lasts a moment at the server: the command refuses while one is open.
    let done: { code: number; stdout: string; stderr: string };
    for (;;) {
      done = await gpunet('GPUNET_EVENTS');
      if (done.code === 0 || !/still pulling/.test(done.stderr)) break;
      await new Promise((r) => setTimeout(r, 250));
    }
    expect(done.code).toBe(0);
    expect(done.stdout).toMatch(/retention limits → interest/);
    const info = await jsm.streams.info('GPUNET_EVENTS');
    expect(info.config.retention).toBe('interest');
    const durables: string[] = [];
    for await (const c of jsm.consumers.list('GPUNET_EVENTS')) durables.push(c.name);
    expect(durables.sort()).toEqual(['ledger', 'placement', 'storage', 'storage-released']);
    // An event published now waits for those whose filter it matches (placement's and the ledger's).
    await js.publish('gpunet.evt.JobFinished.ml.job-2', '{}');
    expect((await jsm.streams.info('GPUNET_EVENTS')).state.messages).toBe(1);
  }, 60_000);

  it('names the streams of the topology file when asked for another', async () => {
    const run = await gpunet('NOPE');
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/no stream NOPE in .*topology\.yaml/);
    expect(run.stderr).toContain('GPUNET_EVENTS');
  });
});
