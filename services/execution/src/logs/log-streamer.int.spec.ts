import { LOGS_STREAM, logSubject, type LogLine } from '#contracts';
import { DeliverPolicy, jetstream, jetstreamManager, type JetStreamClient } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startNatsServer, type TestNatsServer } from '../../../../test/support/nats-server.js';
import { LogStreamer } from './log-streamer.js';

let nats: TestNatsServer;
let nc: NatsConnection;
let js: JetStreamClient;
let dir: string;
const now = () => '2026-01-01T00:00:00.000Z';

beforeAll(async () => {
  [nats, dir] = await Promise.all([startNatsServer(), mkdtemp(join(tmpdir(), 'gpunet-logs-'))]);
  nc = await connect({ servers: nats.url });
  js = jetstream(nc);
  await (await jetstreamManager(nc)).streams.add({ name: LOGS_STREAM, subjects: ['gpunet.logs.>'] });
});
afterAll(async () => {
  await nc?.close();
  await nats?.stop();
  await rm(dir, { recursive: true, force: true });
});

/**
 * Every line the stream holds for the job: fetches until the consumer has nothing pending. One
 * fetch ends after its `expires` however many it got, which on a loaded machine is not all.
 */
async function readBack(jobId: string, timeoutMs = 60_000): Promise<LogLine[]> {
  const consumer = await js.consumers.get(LOGS_STREAM, { filter_subjects: logSubject('team-log', jobId, 'node-log'), deliver_policy: DeliverPolicy.All });
  const out: LogLine[] = [];
  const end = Date.now() + timeoutMs;
  for (;;) {
    const messages = await consumer.fetch({ max_messages: 10_000, expires: 1_000 });
    for await (const m of messages) {
      out.push(m.json<LogLine>());
      if (m.info.pending === 0) return out;
    }
    if (Date.now() > end) throw new Error(`read ${out.length} log lines of ${jobId} back within ${timeoutMs} ms, and more were pending`);
  }
}

const LINES = 5_000;

describe('log streamer', () => {
  it('streams every line in order without making the job wait, and writes stdout and stderr files', async () => {
    const s = new LogStreamer(js, 'team-log', 'job-chatty', 'node-log', 'job-chatty-a1', await mkdtemp(join(dir, 'run-')), { now });
    // 5,000 lines: enough to show order and the stdout/stderr split. The number of acknowledged
    // publishes is what takes time on a loaded machine, not what is asserted.
    for (let i = 0; i < LINES; i++) s.push(`line ${i}`, i % 1000 === 999 ? 'stderr' : 'stdout');
    s.push('[gpunet] time limit reached', 'system');
    // Taking a line is a queue push that returns at once: the loop above never yielded to the
    // event loop, so no acknowledgement can have come back yet, whatever the machine's load.
    expect(s.stats.published).toBe(0);
    const stats = await s.close();
    expect(stats).toEqual({ published: LINES + 1, dropped: 0, failed: 0 });

    const lines = await readBack('job-chatty');
    expect(lines).toHaveLength(LINES + 1);
    expect(lines.slice(0, 1000).every((l, i) => l.line === `line ${i}`)).toBe(true);
    expect(lines[999]).toEqual({ ts: now(), stream: 'stderr', line: 'line 999', attemptId: 'job-chatty-a1' });
    expect(lines[LINES]).toMatchObject({ stream: 'agent', line: '[gpunet] time limit reached' });
    const stdout = (await readFile(s.files.stdout, 'utf8')).split('\n');
    expect(stdout).toHaveLength(LINES - LINES / 1000 + 1);
    expect(await readFile(s.files.stderr, 'utf8')).toMatch(/^line 999\n[\s\S]*\[gpunet\] time limit reached\n$/);
    // The bus may take several seconds for the acknowledged publishes on a busy 2-core machine;
    // what is asserted is that the job never waited for them (nothing published while it pushed).
  }, 60_000);

  it('beyond its queue it drops lines from the live stream only, and says how many', async () => {
    const s = new LogStreamer(js, 'team-log', 'job-flood', 'node-log', 'job-flood-a1', await mkdtemp(join(dir, 'run-')), { now, maxQueued: 100, maxInFlight: 10 });
    for (let i = 0; i < 5_000; i++) s.push(`flood ${i}`, 'stdout');
    const stats = await s.close();
    expect(stats.dropped).toBeGreaterThan(0);
    expect(stats.published + stats.dropped).toBe(5_001); // every line, plus the notice
    const lines = await readBack('job-flood');
    expect(lines[lines.length - 1]).toMatchObject({ stream: 'agent', line: `[gpunet] ${stats.dropped} log line(s) were not streamed live (the job wrote faster than the bus took them); they are in the stored logs` });
    expect((await readFile(s.files.stdout, 'utf8')).split('\n')).toHaveLength(5_001);
  });
});
