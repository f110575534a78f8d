import { Events } from '#contracts';
import { encodeEvent } from '#messaging';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import checkRecordedBus, { BUS_TAP_DIR_ENV, BusContract, formatProblems, OFF_CONTRACT_HEADER, type BusRecord } from './bus-contract.js';

const contract = BusContract.load(join(import.meta.dirname, '../../../contracts/generated'));

/** A TeamCreated as the outbox relay publishes it: encoded by the messaging library itself. */
function teamCreated(edit: (record: BusRecord, body: Record<string, unknown>) => void = () => undefined): BusRecord {
  const data = Events.TeamCreated.schema.parse({ team: 'team-ml', displayName: 'ML', createdBy: { keyId: 'k1', team: 'local' }, createdAt: '2026-01-02T03:04:05.000Z' });
  const m = encodeEvent({
    eventId: '0b9f8e2e-8f0c-4e3c-9d51-4f7f3c1f6a10',
    type: 'TeamCreated',
    data,
    metadata: { correlationId: 'c1', causationId: 'c1', team: 'team-ml', producer: 'intake', occurredAt: '2026-01-02T03:04:05.000Z' },
    streamId: 'team-team-ml',
    revision: 0n,
    position: 7n,
    recordedAt: '2026-01-02T03:04:05.001Z',
    hash: 'a'.repeat(64),
  });
  const headers: Record<string, string[]> = {};
  for (const [k, v] of m.headers) headers[k] = v;
  const body = JSON.parse(m.payload) as Record<string, unknown>;
  const record: BusRecord = { subject: m.subject, headers, size: m.payload.length };
  edit(record, body);
  return { ...record, body: JSON.stringify(body) };
}

describe('bus contract check (against contracts/generated/asyncapi.json)', () => {
  it('passes an event exactly as the library publishes it, a request and its reply', () => {
    const report = contract.checkAll([
      teamCreated(),
      { subject: 'gpunet.qry.intake.GetJob', reply: '_INBOX_team-a.x.1', headers: { Authorization: ['Bearer k'] }, body: '{"jobId":"job_1"}', size: 17 },
      { subject: '_INBOX_team-a.x.1', inReplyTo: 'gpunet.qry.intake.GetJob', body: '{"ok":false,"error":{"code":"not_found","message":"no job job_1"}}', size: 60 },
      { subject: '$JS.API.INFO', body: '', size: 0 },
    ]);
    expect(report.problems).toEqual([]);
    expect(report).toMatchObject({ checked: 3, protocol: 1, byMessage: { TeamCreated: 1, GetJob: 1, GetJobReply: 1 } });
  });

  it('passes an event on its partitioned subject (decision 0030), and fails one with a token more', () => {
    const partitioned = teamCreated((r) => (r.subject = `${r.subject}.3`));
    expect(contract.checkAll([partitioned]).problems).toEqual([]);
    expect(contract.checkAll([teamCreated((r) => (r.subject = `${r.subject}.3.4`))]).problems).not.toEqual([]);
  });

  it('fails an event without a header that is always sent, with an undeclared header, or with a bad payload, naming subject, schema and field', () => {
    const missing = teamCreated((r) => delete r.headers!['Gpunet-Schema-Version']);
    const extra = teamCreated((r) => (r.headers!['X-Unknown'] = ['1']));
    const badVersion = teamCreated((r) => (r.headers!['Gpunet-Schema-Version'] = ['one']));
    const badData = teamCreated((_r, body) => ((body.data as Record<string, unknown>).team = 'no spaces allowed'));
    const noHash = teamCreated((_r, body) => delete body.hash);
    const { problems } = contract.checkAll([missing, extra, badVersion, badData, noHash]);
    expect(problems).toHaveLength(5);
    for (const p of problems) expect(p).toMatchObject({ subject: 'gpunet.evt.TeamCreated.team-ml._', schema: 'TeamCreated' });
    expect(problems[0]!.errors.join()).toContain("must have required property 'Gpunet-Schema-Version'");
    expect(problems[1]!.errors.join()).toContain('must NOT have additional properties (X-Unknown)');
    expect(problems[2]!.errors.join()).toContain('headers.Gpunet-Schema-Version: must match pattern');
    expect(problems[3]!.errors.join()).toContain('body.data.team: must match pattern');
    expect(problems[4]!.errors.join()).toContain("must have required property 'hash'");
    expect(formatProblems(problems)).toContain('- gpunet.evt.TeamCreated.team-ml._ [TeamCreated]');
  });

  it('fails a reply outside its envelope or with headers, a gpunet subject the document does not have, and a body that is not JSON', () => {
    const { problems } = contract.checkAll([
      { subject: '_INBOX_x.1', inReplyTo: 'gpunet.cmd.CancelJob', body: '{"ok":"yes"}', size: 12 },
      { subject: 'gpunet.secret.channel', body: '{}', size: 2 },
      { subject: 'gpunet.feed.team-ml.job_1', headers: { 'Gpunet-Type': ['JobStarted'], 'Gpunet-Job-Id': ['job_1'], 'Gpunet-Correlation-Id': ['c'] }, body: 'not json', size: 8 },
      { subject: '_INBOX_x.2', inReplyTo: 'gpunet.qry.intake.GetJob', headers: { 'Gpunet-Type': ['x'] }, body: '{"ok":false,"error":{"code":"not_found","message":"m"}}', size: 50 },
    ]);
    expect(problems.map((p) => [p.subject, p.schema])).toEqual([
      ['_INBOX_x.1 (reply to gpunet.cmd.CancelJob)', 'CancelJobReply'],
      ['gpunet.secret.channel', '-'],
      ['gpunet.feed.team-ml.job_1', 'FeedNotification'],
      ['_INBOX_x.2 (reply to gpunet.qry.intake.GetJob)', 'GetJobReply'],
    ]);
    expect(problems[1]!.errors).toEqual(['no channel of the AsyncAPI document has this subject']);
    expect(problems[2]!.errors).toEqual(['body: not JSON (8 bytes)']);
  });

  it('a read\'s reply (decision 0036): nats-server\'s chunk with its headers, its status reply, or storage\'s JSON envelope; a chunk with other headers is not', () => {
    const chunk = { 'Nats-Stream': ['OBJ_gpunet-blobs-a'], 'Nats-Sequence': ['7'], 'Nats-Subject': ['$O.gpunet-blobs-a.C.x'], 'Nats-Time-Stamp': ['t'], 'Gpunet-Chunk': ['0'] };
    const { problems } = contract.checkAll([
      { subject: '_INBOX_node-n1.1', inReplyTo: 'gpunet.data.n1.read', headers: chunk, size: 1_044_480 },
      { subject: '_INBOX_node-n1.2', inReplyTo: 'gpunet.data.n1.read', size: 0 },
      { subject: '_INBOX_node-n1.3', inReplyTo: 'gpunet.data.n1.read', body: '{"ok":false,"error":{"code":"node_data_refused","message":"m"}}', size: 60 },
      { subject: '_INBOX_node-n1.4', inReplyTo: 'gpunet.data.n1.read', headers: { ...chunk, 'X-Other': ['1'] }, size: 10 },
    ]);
    expect(problems.map((p) => p.subject)).toEqual(['_INBOX_node-n1.4 (reply to gpunet.data.n1.read)']);
  });

  it('counts messages a test sent off-contract on purpose apart, unchecked', () => {
    const forged = teamCreated((r, body) => {
      r.headers![OFF_CONTRACT_HEADER] = ['forgery'];
      delete body.hash;
    });
    expect(contract.checkAll([forged])).toMatchObject({ checked: 0, offContract: 1, problems: [] });
  });
});

describe('the e2e run\'s check (globalTeardown)', () => {
  const rootDir = join(import.meta.dirname, '../../..');
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'gpunet-bus-check-'));
    process.env[BUS_TAP_DIR_ENV] = dir;
    process.env.GPUNET_E2E_KEEP_DATA = '1'; // keep the directory for the next assertion
  });
  afterEach(() => {
    delete process.env[BUS_TAP_DIR_ENV];
    delete process.env.GPUNET_E2E_KEEP_DATA;
    rmSync(dir, { recursive: true, force: true });
  });
  const write = (records: BusRecord[]) => writeFileSync(join(dir, 'net.jsonl'), records.map((r) => `${JSON.stringify(r)}\n`).join(''));

  it('fails the run listing each invalid message: subject, schema, what failed', () => {
    write([teamCreated(), teamCreated((r) => delete r.headers!['Gpunet-Causation-Id'])]);
    expect(() => checkRecordedBus(undefined, { rootDir })).toThrow(/1 invalid[\s\S]*- gpunet\.evt\.TeamCreated\.team-ml\._ \[TeamCreated\]\n.*required property 'Gpunet-Causation-Id'/);
  });

  it('fails when nothing was recorded, or nothing of gpunet\'s own, or the setup did not run', () => {
    expect(() => checkRecordedBus(undefined, { rootDir })).toThrow(/no message was recorded/);
    write([{ subject: '$JS.API.INFO', size: 0, body: '' }]);
    expect(() => checkRecordedBus(undefined, { rootDir })).toThrow(/none of gpunet's own/);
    delete process.env[BUS_TAP_DIR_ENV];
    expect(() => checkRecordedBus(undefined, { rootDir })).toThrow(/GPUNET_BUS_TAP_DIR is not set/);
  });

  it('passes a run whose every message is valid', () => {
    write([teamCreated()]);
    expect(() => checkRecordedBus(undefined, { rootDir })).not.toThrow();
  });
});
