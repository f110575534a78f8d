import { ValidationError } from '#errors';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ForbiddenError, UnauthorizedError } from '../common/errors.js';
import { ApiKeyRing, RefusedKeyError, keyDigest } from './api-keys.js';
import { assertOwnJob, assertTeamScope, authorize } from './permissions.js';

const KEY_A = 'a-secret-key-of-team-a-0123456789';
const KEY_B = 'b-secret-key-of-team-b-0123456789';

function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  throw new Error('expected a throw');
}

describe('ApiKeyRing', () => {
  const ring = ApiKeyRing.fromEntries([
    { id: 'ci-a', key: KEY_A, team: 'team-a', role: 'producer', timeZone: 'Europe/Berlin' },
    { id: 'audit-b', sha256: keyDigest(KEY_B), team: 'team-b', role: 'compliance' },
  ]);

  it('knows a key given in clear and one given by its sha256', () => {
    expect(ring.size).toBe(2);
    expect(ring.authenticate(`Bearer ${KEY_A}`)).toEqual({ keyId: 'ci-a', team: 'team-a', role: 'producer', timeZone: 'Europe/Berlin' });
    expect(ring.authenticate(`bearer  ${KEY_B} `)).toEqual({ keyId: 'audit-b', team: 'team-b', role: 'compliance' });
  });

  it.each([
    ['no header', undefined, 'no API key'],
    ['an empty header', '', 'no API key'],
    ['another scheme', `Basic ${KEY_A}`, 'is not `Bearer <key>`'],
    ['a bare key', KEY_A, 'is not `Bearer <key>`'],
    ['an unknown key', 'Bearer not-a-known-key-at-all-xx', 'unknown API key'],
  ])('refuses %s with UnauthorizedError that says how to pass a key', (_what, header, text) => {
    const err = thrown(() => ring.authenticate(header));
    expect(err).toBeInstanceOf(UnauthorizedError);
    expect((err as Error).message).toContain(text);
    expect((err as Error).message).toContain('Authorization: Bearer <key>');
  });

  it('names each bad field of the file with its fix', () => {
    const err = thrown(() =>
      ApiKeyRing.fromEntries([
        { id: 'x', key: 'short', team: 'team a', role: 'boss' },
        { id: 'y', team: 'team-a', role: 'producer' },
        { id: 'z', key: KEY_A, team: 'team-a', role: 'producer', timeZone: 'Mars/Olympus', extra: 1 },
      ]),
    ) as ValidationError;
    expect(err).toBeInstanceOf(ValidationError);
    expect(err.issues.map((i) => i.path).sort()).toEqual(['[0].key', '[0].role', '[0].team', '[1].key', '[2].extra', '[2].timeZone']);
    for (const issue of err.issues) expect(issue.fix).toEqual(expect.any(String));
  });

  it('refuses a key id used twice and a key listed twice', () => {
    const err = thrown(() =>
      ApiKeyRing.fromEntries([
        { id: 'k', key: KEY_A, team: 'team-a', role: 'producer' },
        { id: 'k', sha256: keyDigest(KEY_A), team: 'team-b', role: 'admin' },
      ]),
    ) as ValidationError;
    expect(err.issues.map((i) => i.path)).toEqual(['[1].id', '[1]']);
  });

  it('loads YAML and JSON files, and says which variable to fix when the file is missing', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'gpunet-keys-'));
    try {
      await writeFile(join(dir, 'keys.yaml'), `- id: ci\n  sha256: ${keyDigest(KEY_A)}\n  team: team-a\n  role: admin\n`);
      await writeFile(join(dir, 'keys.json'), JSON.stringify([{ id: 'ci', key: KEY_B, team: 'team-b', role: 'billing' }]));
      expect((await ApiKeyRing.load(join(dir, 'keys.yaml'))).authenticate(`Bearer ${KEY_A}`).role).toBe('admin');
      expect((await ApiKeyRing.load(join(dir, 'keys.json'))).authenticate(`Bearer ${KEY_B}`).team).toBe('team-b');
      await expect(ApiKeyRing.load(join(dir, 'missing.yaml'))).rejects.toMatchObject({ issues: [expect.objectContaining({ path: 'GPUNET_API_KEYS_FILE' })] });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('permissions', () => {
  const principal = (role: 'producer' | 'compliance' | 'billing' | 'admin') => ({ keyId: 'k', team: 'team-a', role });

  it('producer and admin submit, cancel and read; compliance reads; billing reads charges only', () => {
    const can = (role: Parameters<typeof principal>[0], action: Parameters<typeof authorize>[1]) => {
      try {
        authorize(principal(role), action);
        return true;
      } catch (err) {
        expect(err).toBeInstanceOf(ForbiddenError);
        return false;
      }
    };
    const actions = ['jobs:submit', 'jobs:cancel', 'jobs:read', 'charges:read'] as const;
    expect(actions.map((a) => can('producer', a))).toEqual([true, true, true, true]);
    expect(actions.map((a) => can('admin', a))).toEqual([true, true, true, true]);
    expect(actions.map((a) => can('compliance', a))).toEqual([false, false, true, true]);
    expect(actions.map((a) => can('billing', a))).toEqual([false, false, false, true]);
  });

  it('another team\'s job is forbidden to every role', () => {
    for (const role of ['producer', 'admin'] as const) {
      expect(thrown(() => assertOwnJob(principal(role), { jobId: 'j', team: 'team-b' }))).toBeInstanceOf(ForbiddenError);
    }
    expect(() => assertOwnJob(principal('producer'), { jobId: 'j', team: 'team-a' })).not.toThrow();
  });
});

describe('ApiKeyRing over the key events', () => {
  const by = { keyId: 'operator', team: 'ops' };
  const NEW_KEY = 'gpn_a-key-issued-by-event-000000000000000000';
  let now = new Date('2026-01-01T00:00:00.000Z');
  const ring = ApiKeyRing.fromEntries([{ id: 'operator', key: KEY_A, team: 'ops', role: 'operator' }], 'keys', () => now);
  ring.apply({ type: 'TeamCreated', data: { team: 'team-ml', displayName: 'ML', timeZone: 'Asia/Tokyo', createdBy: by, createdAt: now.toISOString() } });

  it('accepts an issued key at once, with its team\'s time zone, and refuses it by name once revoked', () => {
    expect(() => ring.authenticate(`Bearer ${NEW_KEY}`)).toThrow('unknown API key');
    ring.apply({ type: 'ApiKeyIssued', data: { keyId: 'key_1', team: 'team-ml', role: 'producer', sha256: keyDigest(NEW_KEY), issuedBy: by, issuedAt: now.toISOString() } });
    expect(ring.authenticate(`Bearer ${NEW_KEY}`)).toEqual({ keyId: 'key_1', team: 'team-ml', role: 'producer', timeZone: 'Asia/Tokyo' });
    ring.apply({ type: 'ApiKeyRevoked', data: { keyId: 'key_1', team: 'team-ml', sha256: keyDigest(NEW_KEY), revokedBy: by, revokedAt: now.toISOString() } });
    const err = thrown(() => ring.authenticate(`Bearer ${NEW_KEY}`));
    expect(err).toBeInstanceOf(RefusedKeyError);
    expect(err).toMatchObject({ keyId: 'key_1', state: 'revoked', message: expect.stringContaining('was revoked') });
  });

  it('refuses a key past its expiry and a key of a disabled team; a bootstrap key can be revoked by event', () => {
    const LATER = 'gpn_a-key-that-expires-0000000000000000000000';
    ring.apply({ type: 'ApiKeyIssued', data: { keyId: 'key_2', team: 'team-ml', role: 'producer', sha256: keyDigest(LATER), expiresAt: '2026-01-02T00:00:00.000Z', issuedBy: by, issuedAt: now.toISOString() } });
    expect(ring.authenticate(`Bearer ${LATER}`).keyId).toBe('key_2');
    now = new Date('2026-01-02T00:00:00.000Z');
    expect(thrown(() => ring.authenticate(`Bearer ${LATER}`))).toMatchObject({ state: 'expired' });
    ring.apply({ type: 'ApiKeyRevoked', data: { keyId: 'operator', team: 'ops', sha256: keyDigest(KEY_A), revokedBy: by, revokedAt: now.toISOString() } });
    expect(thrown(() => ring.authenticate(`Bearer ${KEY_A}`))).toMatchObject({ state: 'revoked', keyId: 'operator' });
    // The file entry replaced with a new key under the same id: the old revocation does not touch it.
    const renewed = ApiKeyRing.fromEntries([{ id: 'operator', key: KEY_B, team: 'ops', role: 'operator' }], 'keys', () => now);
    renewed.apply({ type: 'ApiKeyRevoked', data: { keyId: 'operator', team: 'ops', sha256: keyDigest(KEY_A), revokedBy: by, revokedAt: now.toISOString() } });
    expect(renewed.authenticate(`Bearer ${KEY_B}`).keyId).toBe('operator');
    ring.apply({ type: 'TeamDisabled', data: { team: 'team-ml', disabledBy: by, disabledAt: now.toISOString() } });
    expect(ring.directory.listKeys('team-ml', now).map((k) => k.state)).toEqual(['revoked', 'team_disabled']);
  });
});

describe('permissions of teams and keys', () => {
  const p = (role: 'producer' | 'admin' | 'operator' | 'compliance' | 'billing') => ({ keyId: 'k', team: 'team-a', role });
  const can = (role: Parameters<typeof p>[0], action: Parameters<typeof authorize>[1]) => {
    try {
      authorize(p(role), action);
      return true;
    } catch {
      return false;
    }
  };

  it('only operator manages teams and every team\'s keys; admin its own team\'s keys; the rest none', () => {
    const actions = ['teams:manage', 'keys:manage', 'keys:read', 'keys:all-teams', 'jobs:submit'] as const;
    expect(actions.map((a) => can('operator', a))).toEqual([true, true, true, true, false]);
    expect(actions.map((a) => can('admin', a))).toEqual([false, true, true, false, true]);
    for (const role of ['producer', 'compliance', 'billing'] as const) expect(actions.slice(0, 4).map((a) => can(role, a))).toEqual([false, false, false, false]);
    expect(thrown(() => assertTeamScope(p('admin'), 'team-b', 'issue keys'))).toBeInstanceOf(ForbiddenError);
    expect(() => assertTeamScope(p('admin'), 'team-a', 'issue keys')).not.toThrow();
    expect(() => assertTeamScope(p('operator'), 'team-b', 'issue keys')).not.toThrow();
  });
});
