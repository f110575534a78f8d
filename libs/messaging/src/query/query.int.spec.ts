import { NotFoundError, ValidationError } from '#errors';
import { connect, headers, type NatsConnection } from '@nats-io/transport-node';
import { pino } from 'pino';
import { z } from 'zod';
import { startNatsServer, type TestNatsServer } from '../../../../test/support/nats-server.js';
import { deferred } from '../../test-fixtures/wait-for.js';
import { QueryTimeoutError, QueryUnavailableError, RemoteQueryError } from '../errors.js';
import type { QueryContract } from './envelope.js';
import { requestQuery } from './query-client.js';
import { serveQuery } from './query-responder.js';

const logger = pino({ level: 'silent' });

const GetJob: QueryContract = {
  request: z.object({ jobId: z.string().min(1), verbose: z.boolean().optional() }),
  response: z.object({ jobId: z.string(), state: z.enum(['queued', 'running', 'done']) }),
};

describe('query request/reply (nats-server)', () => {
  let server: TestNatsServer;
  let nc: NatsConnection;
  const release = deferred();

  beforeAll(async () => {
    server = await startNatsServer();
    nc = await connect({ servers: server.url });
    serveQuery(
      nc,
      'gpunet.qry.intake.GetJob',
      GetJob,
      (req) => {
        const { jobId } = req as { jobId: string };
        if (jobId === 'missing') throw new NotFoundError(`job ${jobId} does not exist`);
        if (jobId === 'crash') throw new Error('database password is hunter2');
        if (jobId === 'off-contract') return { jobId, state: 'exploded' };
        return { jobId, state: 'running' };
      },
      { logger, queue: 'intake' },
    );
    serveQuery(nc, 'gpunet.qry.slow.Wait', {}, () => release.promise, { logger });
    await nc.flush();
  });
  afterAll(async () => {
    release.resolve();
    await nc?.close();
    await server?.stop();
  });

  it('answers a valid request with data validated by the contract', async () => {
    await expect(requestQuery(nc, 'gpunet.qry.intake.GetJob', { jobId: 'j1' }, GetJob)).resolves.toEqual({ jobId: 'j1', state: 'running' });
  });

  it('refuses a request of a schema version the subject does not accept, naming the header and the accepted versions', async () => {
    const h = headers();
    h.set('Gpunet-Schema-Version', '2');
    const raw = await nc.request('gpunet.qry.intake.GetJob', JSON.stringify({ jobId: 'j1' }), { timeout: 2000, headers: h });
    const reply = raw.json<{ ok: boolean; error: { code: string; message: string; issues: { path: string; fix: string }[] } }>();
    expect(reply).toMatchObject({ ok: false, error: { code: 'unsupported_schema_version', retryable: false } });
    // GetJob is version 1 in the registry (contracts), which the responder takes by its subject.
    expect(reply.error.message).toBe('Gpunet-Schema-Version "2" is not accepted for GetJob: accepted version 1');
    expect(reply.error.issues).toEqual([expect.objectContaining({ path: 'Gpunet-Schema-Version', fix: expect.stringContaining('Gpunet-Schema-Version: 1') })]);
    // The version it accepts, and no header at all (the current version), are answered.
    h.set('Gpunet-Schema-Version', '1');
    await expect(requestQuery(nc, 'gpunet.qry.intake.GetJob', { jobId: 'j1' }, GetJob, { headers: h })).resolves.toEqual({ jobId: 'j1', state: 'running' });
    // Garbage in the header is refused the same way; through the client it is a RemoteQueryError with the code.
    const bad = headers();
    bad.set('Gpunet-Schema-Version', 'one');
    const err = await requestQuery(nc, 'gpunet.qry.intake.GetJob', { jobId: 'j1' }, GetJob, { headers: bad }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RemoteQueryError);
    expect(err).toMatchObject({ code: 'unsupported_schema_version', message: expect.stringContaining('accepted version 1') });
  });

  it('answers an invalid request with ok:false, validation_failed and the field issues', async () => {
    const raw = await nc.request('gpunet.qry.intake.GetJob', JSON.stringify({ jobId: '', verbose: 'yes' }), { timeout: 2000 });
    const reply = raw.json<{ ok: boolean; error: { code: string; issues: { path: string }[] } }>();
    expect(reply.ok).toBe(false);
    expect(reply.error.code).toBe('validation_failed');
    expect(reply.error.issues.map((i) => i.path).sort()).toEqual(['jobId', 'verbose']);
    // Through the client (without local validation) the same reply becomes a ValidationError with the issues.
    const err = await requestQuery(nc, 'gpunet.qry.intake.GetJob', { jobId: 7 }, { response: GetJob.response }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ValidationError);
    expect((err as ValidationError).issues).toEqual([expect.objectContaining({ path: 'jobId' })]);
    const notJson = (await nc.request('gpunet.qry.intake.GetJob', '{nope', { timeout: 2000 })).json<{ ok: boolean; error: { code: string } }>();
    expect(notJson).toMatchObject({ ok: false, error: { code: 'validation_failed' } });
  });

  it('refuses to send a request that fails its schema', async () => {
    await expect(requestQuery(nc, 'gpunet.qry.intake.GetJob', { jobId: '' }, GetJob)).rejects.toBeInstanceOf(ValidationError);
  });

  it('maps handler errors in one place: family errors keep their code, others become internal without detail', async () => {
    await expect(requestQuery(nc, 'gpunet.qry.intake.GetJob', { jobId: 'missing' }, GetJob)).rejects.toBeInstanceOf(NotFoundError);
    const crash = await requestQuery(nc, 'gpunet.qry.intake.GetJob', { jobId: 'crash' }, GetJob).catch((e: unknown) => e);
    expect(crash).toBeInstanceOf(RemoteQueryError);
    expect(crash).toMatchObject({ code: 'internal', message: 'internal error' });
    expect((crash as Error).message).not.toContain('hunter2');
    const off = await requestQuery(nc, 'gpunet.qry.intake.GetJob', { jobId: 'off-contract' }, GetJob).catch((e: unknown) => e);
    expect(off).toMatchObject({ code: 'internal' });
  });

  it('fails with named errors on a timeout and when nobody serves the subject', async () => {
    const timeout = await requestQuery(nc, 'gpunet.qry.slow.Wait', {}, {}, { timeoutMs: 200 }).catch((e: unknown) => e);
    expect(timeout).toBeInstanceOf(QueryTimeoutError);
    expect(timeout).toMatchObject({ code: 'query_timeout', retryable: true, timeoutMs: 200 });
    const none = await requestQuery(nc, 'gpunet.qry.nobody.Home', {}, {}, { timeoutMs: 1000 }).catch((e: unknown) => e);
    expect(none).toBeInstanceOf(QueryUnavailableError);
  });
});
