/**
 * Teams and API keys managed through intake, against a real nats-server and a temporary SQLite
 * store: two intake instances on one store (the second one follows the first one's changes
 * through the store, as another machine would), a third started afterwards (the fold).
 */
import { Commands, Queries } from '#contracts';
import type { EventStore, RecordedEvent } from '#event-store';
import { startService, type RunningService } from '#service-kit';
import { connect, headers as natsHeaders, type NatsConnection } from '@nats-io/transport-node';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startNatsServer, type TestNatsServer } from '../../../../test/support/nats-server.js';
import { until } from '../../../../test/support/poll.js';
import { keyDigest } from '../auth/api-keys.js';
import { KEY_RING_POLL_MS } from '../auth/key-ring.feed.js';
import { intakeService } from '../intake.service.js';

const OPERATOR = 'bootstrap-operator-key-000000000001';
const ADMIN_A = 'bootstrap-admin-key-of-team-a-00002';
const PRODUCER_A = 'bootstrap-producer-key-team-a-00003';
const PRODUCER_B = 'bootstrap-producer-key-team-b-00004';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- parsed JSON answers; expect() checks their shapes
type JsonBody = Record<string, any>;
type NatsReply = { ok: boolean; data?: JsonBody; error?: { code: string; message: string; issues?: { path: string; message: string; fix?: string }[] } };

const spec = { name: 'k', work: { kind: 'script', script: { inline: 'echo hi' } }, request: { gpus: 1, timeLimit: '1h' } };

describe('intake: teams and API keys (HTTP + NATS, two instances on one store)', () => {
  let nats: TestNatsServer;
  let dir: string;
  let one: RunningService;
  let two: RunningService;
  let store: EventStore;
  let nc: NatsConnection;

  const env = (instance: string) => ({
    GPUNET_NATS_URL: nats.url,
    GPUNET_STORE_URL: `sqlite:${join(dir, 'events.db')}`,
    GPUNET_LOG_LEVEL: 'silent',
    GPUNET_HTTP_PORT: '0',
    GPUNET_INSTANCE: instance,
    GPUNET_API_KEYS_FILE: join(dir, 'keys.yaml'),
  });

  beforeAll(async () => {
    nats = await startNatsServer();
    dir = await mkdtemp(join(tmpdir(), 'gpunet-keys-'));
    await writeFile(
      join(dir, 'keys.yaml'),
      [
        `- { id: operator, sha256: ${keyDigest(OPERATOR)}, team: ops, role: operator }`,
        `- { id: admin-a, key: ${ADMIN_A}, team: team-a, role: admin }`,
        `- { id: ci-a, key: ${PRODUCER_A}, team: team-a, role: producer }`,
        `- { id: ci-b, key: ${PRODUCER_B}, team: team-b, role: producer }`,
      ].join('\n'),
    );
    one = await startService(intakeService({ env: env('intake') }));
    two = await startService(intakeService({ env: env('intake-2') }));
    store = one.ctx.store;
    nc = await connect({ servers: nats.url });
  }, 60_000);

  afterAll(async () => {
    await nc?.close();
    await two?.stop();
    await one?.stop();
    await nats?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  async function http(path: string, init: { method?: string; key?: string | null; body?: unknown; via?: RunningService } = {}) {
    const headers: Record<string, string> = {};
    if (init.key !== null) headers.authorization = `Bearer ${init.key ?? OPERATOR}`;
    if (init.body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(`${(init.via ?? one).httpUrl}${path}`, { method: init.method ?? (init.body !== undefined ? 'POST' : 'GET'), headers, ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}) });
    const text = await res.text();
    return { status: res.status, headers: res.headers, json: (text ? JSON.parse(text) : {}) as JsonBody };
  }

  async function overNats(subject: string, body: unknown, key: string | null = OPERATOR): Promise<NatsReply> {
    const h = natsHeaders();
    if (key !== null) h.set('Authorization', `Bearer ${key}`);
    return (await nc.request(subject, JSON.stringify(body), { timeout: 5_000, headers: h })).json<NatsReply>();
  }

  const events = async (type: string): Promise<RecordedEvent[]> => store.readAll({ maxCount: 100_000, filter: { types: [type] } });

  it('an operator creates a team: recorded as TeamCreated with who and when, listed and shown', async () => {
    const res = await http('/v1/teams', { body: { team: 'team-ml', displayName: 'ML research', timeZone: 'Europe/Berlin', contact: 'ml@example.com' } });
    expect(res.status).toBe(201);
    expect(res.json).toMatchObject({ team: 'team-ml', displayName: 'ML research', source: 'events', createdBy: { keyId: 'operator', team: 'ops' }, activeKeys: 0 });
    const [created] = await store.readStream('intake-team-team-ml');
    expect(created).toMatchObject({ type: 'TeamCreated', data: { team: 'team-ml', createdBy: { keyId: 'operator' }, createdAt: expect.any(String) }, metadata: { producer: 'intake', team: 'team-ml' } });
    const list = await http('/v1/teams');
    expect(list.json.teams.map((t: JsonBody) => [t.team, t.source])).toEqual([['ops', 'file'], ['team-a', 'file'], ['team-b', 'file'], ['team-ml', 'events']]);
    expect((await http('/v1/teams/team-ml')).json).toMatchObject({ team: 'team-ml', timeZone: 'Europe/Berlin' });
    expect((await http('/v1/teams/team-nope')).status).toBe(404);
  });

  it('names the field and the fix: a duplicate team, an unknown role, an unknown team, an unknown key, a past expiry', async () => {
    const dup = await http('/v1/teams', { body: { team: 'team-a' } });
    expect(dup.status).toBe(400);
    expect(dup.json.error.issues).toEqual([{ path: 'team', message: 'team `team-a` already exists', fix: expect.stringContaining('choose another id') }]);
    const badId = await http('/v1/teams', { body: { team: 'has spaces' } });
    expect(badId.json.error.issues).toEqual([expect.objectContaining({ path: 'team', fix: expect.any(String) })]);

    const role = await http('/v1/keys', { body: { team: 'team-a', role: 'root' } });
    expect(role.status).toBe(400);
    expect(role.json.error.issues).toEqual([expect.objectContaining({ path: 'role', message: expect.stringContaining('producer, compliance, billing, admin, operator'), fix: expect.any(String) })]);
    const team = await http('/v1/keys', { body: { team: 'team-ghost', role: 'producer' } });
    expect(team.json.error.issues).toEqual([expect.objectContaining({ path: 'team', message: 'team `team-ghost` does not exist', fix: expect.stringContaining('gpunet teams create') })]);
    const past = await http('/v1/keys', { body: { team: 'team-a', role: 'producer', expiresAt: '2020-01-01T00:00:00.000Z' } });
    expect(past.json.error.issues).toEqual([expect.objectContaining({ path: 'expiresAt', fix: expect.any(String) })]);
    const unknown = await http('/v1/keys/key_0000000000000000/revoke', { body: {} });
    expect(unknown.status).toBe(400);
    expect(unknown.json.error.issues).toEqual([expect.objectContaining({ path: 'keyId', message: 'no API key `key_0000000000000000`', fix: expect.stringContaining('gpunet keys list') })]);

    // The same over NATS: the transport checks the contract, the use case the facts.
    const natsRole = await overNats(Commands.CreateApiKey.subject, { team: 'team-a', role: 'root' });
    expect(natsRole).toMatchObject({ ok: false, error: { code: 'validation_failed' } });
    expect(natsRole.error!.issues!.map((i) => i.path)).toEqual(['role']);
    const natsDup = await overNats(Commands.CreateTeam.subject, { team: 'team-a' });
    expect(natsDup.error).toMatchObject({ code: 'validation_failed', issues: [{ path: 'team', fix: expect.any(String) }] });
    const natsUnknown = await overNats(Commands.RevokeApiKey.subject, { keyId: 'key_ffffffffffffffff' });
    expect(natsUnknown.error).toMatchObject({ code: 'validation_failed', issues: [{ path: 'keyId' }] });
    // Nothing was recorded for any of them.
    expect((await events('ApiKeyIssued')).length + (await events('ApiKeyRevoked')).length).toBe(0);
  });

  it('a key issued on one instance works on both at once; revoked on one, it fails on the other within a second', async () => {
    const created = await http('/v1/keys', { body: { team: 'team-ml', role: 'producer', name: 'ci-nightly' } });
    expect(created.status).toBe(201);
    expect(created.headers.get('cache-control')).toBe('no-store');
    const { apiKey, keyId } = created.json as { apiKey: string; keyId: string };
    expect(apiKey).toMatch(/^gpn_[A-Za-z0-9_-]{43}$/);
    expect(keyId).toMatch(/^key_[0-9a-f]{16}$/);
    expect(created.json).toMatchObject({ team: 'team-ml', role: 'producer', name: 'ci-nightly', source: 'events', state: 'active', issuedBy: { keyId: 'operator', team: 'ops' } });

    // Recorded with its digest, never the key; nowhere in the store.
    const issued = (await store.readStream(`intake-key-${keyId}`))[0]!;
    expect(issued).toMatchObject({ type: 'ApiKeyIssued', data: { keyId, team: 'team-ml', role: 'producer', sha256: keyDigest(apiKey), issuedBy: { keyId: 'operator' } } });
    const everything = JSON.stringify((await store.readAll({ maxCount: 100_000 })).map((e) => e.data));
    expect(everything).not.toContain(apiKey);
    expect(everything).not.toContain(apiKey.slice(4));

    // The issuing instance accepts it in its reply's wake; the other one follows the store.
    expect((await http('/v1/jobs', { key: apiKey })).status).toBe(200);
    await until('the second instance to accept the new key', async () => (await http('/v1/jobs', { key: apiKey, via: two })).status === 200, { timeoutMs: 20_000, intervalMs: 20 });
    expect((await http('/v1/jobs', { key: apiKey, body: spec })).json).toMatchObject({ state: 'submitted' });

    const revoked = await http(`/v1/keys/${keyId}/revoke`, { body: { reason: 'leaked in a CI log' } });
    expect(revoked.json).toMatchObject({ keyId, state: 'revoked', revoked: { by: { keyId: 'operator' }, reason: 'leaked in a CI log' } });
    const refused = await http('/v1/jobs', { key: apiKey });
    expect(refused.status).toBe(401);
    expect(refused.json.error.message).toContain(`API key \`${keyId}\` was revoked`);
    // The other instance refuses it once it has followed the store, which it looks at every
    // KEY_RING_POLL_MS: that interval keeps the one-second promise. A wall-clock bound here would
    // measure the machine's load, not intake; the deadline only guards against never.
    await until('the second instance to refuse the revoked key', async () => (await http('/v1/jobs', { key: apiKey, via: two })).status === 401, { timeoutMs: 20_000, intervalMs: 20 });
    expect(KEY_RING_POLL_MS).toBeLessThanOrEqual(250);
    const [, revokedEvent] = await store.readStream(`intake-key-${keyId}`);
    expect(revokedEvent).toMatchObject({ type: 'ApiKeyRevoked', data: { keyId, team: 'team-ml', revokedBy: { keyId: 'operator', team: 'ops' }, revokedAt: expect.any(String), reason: 'leaked in a CI log' } });
    // Revoking again changes nothing.
    expect((await http(`/v1/keys/${keyId}/revoke`, { body: {} })).json.state).toBe('revoked');
    expect(await store.readStream(`intake-key-${keyId}`)).toHaveLength(2);
  });

  it('over NATS: create, list and revoke; the revoked key is refused on NATS too', async () => {
    const created = await overNats(Commands.CreateApiKey.subject, { team: 'team-ml', role: 'admin' });
    expect(created).toMatchObject({ ok: true, data: { team: 'team-ml', role: 'admin', state: 'active', apiKey: expect.stringMatching(/^gpn_/) } });
    const { apiKey, keyId } = created.data as { apiKey: string; keyId: string };
    const listed = await overNats(Queries.ListApiKeys.subject, {}, apiKey);
    expect(listed.ok).toBe(true);
    expect(listed.data!.keys.map((k: JsonBody) => k.team)).toEqual(expect.arrayContaining(['team-ml']));
    expect(listed.data!.keys.every((k: JsonBody) => k.team === 'team-ml' && !('sha256' in k) && !('apiKey' in k))).toBe(true);
    expect(await overNats(Queries.ListTeams.subject, {}, apiKey)).toMatchObject({ ok: true, data: { teams: [{ team: 'team-ml' }] } });

    expect(await overNats(Commands.RevokeApiKey.subject, { keyId, reason: 'rotated' })).toMatchObject({ ok: true, data: { keyId, state: 'revoked' } });
    await until('NATS to refuse the revoked key', async () => (await overNats(Queries.ListApiKeys.subject, {}, apiKey)).error?.code === 'unauthorized', { timeoutMs: 20_000, intervalMs: 20 });
  });

  it('a team admin manages its own team\'s keys only, issues only producer and admin; each refusal is an AdminActionRefused event', async () => {
    const mine = await http('/v1/keys', { key: ADMIN_A, body: { role: 'producer', name: 'from-admin' } });
    expect(mine.status).toBe(201);
    expect(mine.json).toMatchObject({ team: 'team-a', issuedBy: { keyId: 'admin-a', team: 'team-a' } });
    expect((await http('/v1/keys', { key: ADMIN_A })).json.keys.every((k: JsonBody) => k.team === 'team-a')).toBe(true);

    const before = (await events('AdminActionRefused')).length;
    const attempts = [
      await http('/v1/keys', { key: ADMIN_A, body: { team: 'team-b', role: 'producer' } }),
      await http('/v1/keys', { key: ADMIN_A, body: { role: 'compliance' } }),
      await http('/v1/keys', { key: ADMIN_A, body: { role: 'operator' } }),
      await http('/v1/keys/ci-b/revoke', { key: ADMIN_A, body: {} }),
      await http('/v1/keys?team=team-b', { key: ADMIN_A }),
      await http('/v1/teams', { key: ADMIN_A, body: { team: 'team-admin-made' } }),
    ];
    expect(attempts.map((a) => a.status)).toEqual([403, 403, 403, 403, 403, 403]);
    const refusals = (await events('AdminActionRefused')).slice(before);
    expect(refusals.map((e) => (e.data as JsonBody).action)).toEqual(['keys:create', 'keys:create', 'keys:create', 'keys:revoke', 'keys:read', 'teams:create']);
    for (const r of refusals) expect(r.data).toMatchObject({ by: { keyId: 'admin-a', team: 'team-a', role: 'admin' }, transport: 'http', refusedAt: expect.any(String), reason: expect.any(String) });
    // team-b's key still works: the refused revoke did nothing.
    expect((await http('/v1/jobs', { key: PRODUCER_B })).status).toBe(200);
  });

  it('a producer cannot create keys or teams, revoke a key or list keys, on HTTP or NATS', async () => {
    const before = (await events('AdminActionRefused')).length;
    const http403 = [
      await http('/v1/keys', { key: PRODUCER_A, body: { role: 'producer' } }),
      await http('/v1/teams', { key: PRODUCER_A, body: { team: 'team-evil' } }),
      await http('/v1/keys/ci-b/revoke', { key: PRODUCER_A, body: {} }),
      await http('/v1/keys', { key: PRODUCER_A }),
    ];
    expect(http403.map((a) => a.status)).toEqual([403, 403, 403, 403]);
    const nats403 = [
      await overNats(Commands.CreateApiKey.subject, { role: 'producer' }, PRODUCER_A),
      await overNats(Commands.CreateTeam.subject, { team: 'team-evil' }, PRODUCER_A),
      await overNats(Commands.RevokeApiKey.subject, { keyId: 'ci-b' }, PRODUCER_A),
      await overNats(Queries.ListApiKeys.subject, { team: 'team-b' }, PRODUCER_A),
    ];
    expect(nats403.map((r) => r.error?.code)).toEqual(['forbidden', 'forbidden', 'forbidden', 'forbidden']);
    const refusals = (await events('AdminActionRefused')).slice(before).map((e) => e.data as JsonBody);
    expect(refusals.map((r) => `${r.transport} ${r.action} ${r.by.keyId}`)).toEqual([
      'http keys:create ci-a',
      'http teams:create ci-a',
      'http keys:revoke ci-a',
      'http keys:read ci-a',
      'nats keys:create ci-a',
      'nats teams:create ci-a',
      'nats keys:revoke ci-a',
      'nats keys:read ci-a',
    ]);
    expect((await http('/v1/teams/team-evil')).status).toBe(404);
    // The role is checked before the body: a producer learns nothing from a validation answer.
    expect((await http('/v1/keys', { key: PRODUCER_A, body: { role: 'root', team: 'has spaces' } })).status).toBe(403);
    expect((await http('/v1/teams', { key: PRODUCER_A, body: { team: 'team-a' } })).status).toBe(403);
  });

  it('a disabled team\'s keys are refused at once; a fresh instance folds every change from the store', async () => {
    await http('/v1/teams', { body: { team: 'team-gone' } });
    const key = (await http('/v1/keys', { body: { team: 'team-gone', role: 'producer' } })).json.apiKey as string;
    expect((await http('/v1/jobs', { key })).status).toBe(200);
    const disabled = await http('/v1/teams/team-gone/disable', { body: { reason: 'contract ended' } });
    expect(disabled.json).toMatchObject({ team: 'team-gone', disabled: { by: { keyId: 'operator' }, reason: 'contract ended' }, activeKeys: 0 });
    expect((await http('/v1/jobs', { key })).json.error.message).toContain('disabled');
    expect((await http('/v1/keys', { body: { team: 'team-gone', role: 'producer' } })).json.error.issues[0]).toMatchObject({ path: 'team', message: 'team `team-gone` is disabled' });

    const three = await startService(intakeService({ env: env('intake-3') }));
    try {
      const req = (path: string, key: string) => fetch(`${three.httpUrl}${path}`, { headers: { authorization: `Bearer ${key}` } });
      expect((await req('/v1/jobs', key)).status).toBe(401);
      const keys = (await (await req('/v1/keys', OPERATOR)).json()) as { keys: JsonBody[] };
      expect(keys.keys.filter((k) => k.source === 'events').map((k) => k.state).sort()).toEqual(['active', 'revoked', 'revoked', 'team_disabled']);
      const teams = (await (await req('/v1/teams', OPERATOR)).json()) as { teams: JsonBody[] };
      expect(teams.teams.map((t) => t.team)).toEqual(['ops', 'team-a', 'team-b', 'team-gone', 'team-ml']);
    } finally {
      await three.stop();
    }
  });
});
