import { BlobStore } from '#blobs';
import { NodeOutputsReport, outputsReportSubject, outputsSigningBytes, type StoreOutputs } from '#contracts';
import { newIdentity, verifySignature } from '#identity';
import { ValidationError } from '#errors';
import { QueryUnavailableError, serveQuery } from '#messaging';
import { connect, type NatsConnection, type Subscription } from '@nats-io/transport-node';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { startNatsServer, type TestNatsServer } from '../../../../test/support/nats-server.js';
import { selectOutputs, storeOutputs } from './output-handover.js';

const TEAM = 'team-out';
const target = { team: TEAM, jobId: 'job-out', attemptId: 'job-out-a1', nodeId: 'n1', correlationId: 'corr-1' };
const log = pino({ level: 'silent' });
const identity = newIdentity();

let nats: TestNatsServer;
let nc: NatsConnection;
let blobs: BlobStore;
let dir: string;
let outputs: string;
let logFiles: { stdout: string; stderr: string };
let responder: Subscription | undefined;

beforeAll(async () => {
  [nats, dir] = await Promise.all([startNatsServer(), mkdtemp(join(tmpdir(), 'gpunet-out-'))]);
  nc = await connect({ servers: nats.url });
  blobs = await BlobStore.open(nc);
  outputs = join(dir, 'outputs');
  await mkdir(join(outputs, 'model'), { recursive: true });
  await writeFile(join(outputs, 'model/w.bin'), 'weights');
  await writeFile(join(outputs, 'metrics.json'), '{"loss":0.1}');
  await symlink('/etc/hostname', join(outputs, 'model/leak'));
  logFiles = { stdout: join(dir, 'stdout.log'), stderr: join(dir, 'stderr.log') };
  await writeFile(logFiles.stdout, 'hello\n');
  await writeFile(logFiles.stderr, '');
});
afterEach(() => {
  responder?.unsubscribe();
  responder = undefined;
});
afterAll(async () => {
  await nc?.close();
  await nats?.stop();
  await rm(dir, { recursive: true, force: true });
});

function respond(handler: (req: StoreOutputs) => unknown): StoreOutputs[] {
  const seen: StoreOutputs[] = [];
  // Stands in for the recorder: the node's outputs report, signed with its key.
  responder = serveQuery(nc, outputsReportSubject(target.nodeId), { request: NodeOutputsReport }, async (req) => {
    const report = req as NodeOutputsReport;
    if (!verifySignature(identity.publicKey, outputsSigningBytes(report), report.signature)) throw new ValidationError('bad signature');
    seen.push(report.outputs);
    return handler(report.outputs);
  });
  return seen;
}

const ok = (r: StoreOutputs) => ({ jobId: r.jobId, attemptId: r.attemptId, files: r.files.length, totalBytes: r.files.reduce((n, f) => n + f.size, 0), duplicate: false });

describe('output handover', () => {
  it('selects by glob and says why a matching file is refused', async () => {
    const selection = await selectOutputs(outputs, ['model/**']);
    expect(selection.collected.files.map((f) => f.path)).toEqual(['model/w.bin']);
    expect(selection.notices).toEqual([expect.stringMatching(/^\[gpunet\] output model\/leak not kept: /)]);
    expect(selection.truncated).toBe(false);
  });

  it('uploads the files and logs, and waits for a storage service that comes up late', async () => {
    const selection = await selectOutputs(outputs, ['**']);
    let seen: StoreOutputs[] = [];
    setTimeout(() => (seen = respond(ok)), 600);
    const reply = await storeOutputs(blobs, nc, identity, target, selection, logFiles, log, { retryDelayMs: 100, giveUpAfterMs: 10_000 });
    expect(reply).toMatchObject({ files: 2, duplicate: false });
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({ team: TEAM, jobId: target.jobId, attemptId: target.attemptId, nodeId: target.nodeId, truncated: false });
    expect(seen[0]).not.toHaveProperty('correlationId'); // travels as a header, not in the body
    expect(seen[0]!.files.map((f) => f.path)).toEqual(['metrics.json', 'model/w.bin']);
    // The refused symlink goes into the job's record with its reason, not only into its log.
    expect(seen[0]!.rejected).toEqual([{ path: 'model/leak', reason: 'symlink_outside', message: 'model/leak is a symlink pointing outside the output directory; it was not followed' }]);
    expect(seen[0]!.logs.map((l) => [l.stream, l.size])).toEqual([['stdout', 6]]); // the empty stderr is left out
    expect(await blobs.exists(TEAM, seen[0]!.files[1]!.sha256)).toBe(true);
  });

  it('gives up after its bound when no storage service answers', async () => {
    const selection = await selectOutputs(outputs, ['metrics.json']);
    const t0 = Date.now();
    await expect(storeOutputs(blobs, nc, identity, target, selection, logFiles, log, { retryDelayMs: 50, giveUpAfterMs: 400 })).rejects.toThrow(QueryUnavailableError);
    // Its own bound, not the default of two minutes (a loose ceiling a loaded machine cannot reach).
    expect(Date.now() - t0).toBeLessThan(60_000);
  });

  it('does not retry a refusal', async () => {
    const seen = respond(() => {
      throw new ValidationError('blob missing', [{ path: 'files.0', message: 'not uploaded' }]);
    });
    const selection = await selectOutputs(outputs, ['metrics.json']);
    await expect(storeOutputs(blobs, nc, identity, target, selection, logFiles, log, { retryDelayMs: 50 })).rejects.toThrow(ValidationError);
    expect(seen).toHaveLength(1);
  });

  it('uploads again and asks once more when a blob it sent was removed before storage checked it (the same bytes as an input of the team released meanwhile)', async () => {
    await writeFile(join(dir, 'outputs', 'same-as-input.bin'), `bytes an input of the team also has ${Date.now()}`);
    const selection = await selectOutputs(outputs, ['same-as-input.bin']);
    const seen = respond(async (req) => {
      const file = req.files[0]!;
      if (seen.length === 1) {
        // Storage removed the input blob (its job was released) after the upload, before this check.
        expect(await blobs.remove(TEAM, file.sha256)).toBe(true);
        throw new ValidationError('outputs cannot be recorded', [{ path: 'files.0', message: `output (sha256 ${file.sha256}) is not in the object store of team ${TEAM}`, fix: 'upload it before asking storage to record it' }]);
      }
      expect(await blobs.exists(TEAM, file.sha256)).toBe(true);
      return ok(req);
    });
    const reply = await storeOutputs(blobs, nc, identity, target, selection, logFiles, log, { retryDelayMs: 50 });
    expect(reply).toMatchObject({ files: 1, duplicate: false });
    expect(seen).toHaveLength(2);
    expect(await blobs.exists(TEAM, seen[1]!.files[0]!.sha256)).toBe(true);
  });

  it('marks the outputs truncated at the size cap', async () => {
    const selection = await selectOutputs(outputs, ['**'], 10);
    expect(selection.truncated).toBe(true);
    expect(selection.notices.at(-1)).toMatch(/reached outputs.maxBytes \(10 bytes\)/);
  });
});
