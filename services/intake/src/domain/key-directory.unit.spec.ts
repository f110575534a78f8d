import { ValidationError } from '#errors';
import { KeyDirectory, decideCreateTeam, decideDisableTeam, decideIssueKey, decideRevokeKey } from './key-directory.js';

const by = { keyId: 'operator', team: 'ops' };
const now = new Date('2026-03-01T10:00:00.000Z');
const sha = (c: string) => c.repeat(64);

function issues(fn: () => unknown): { path: string; fix?: string }[] {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ValidationError);
    return (err as ValidationError).issues.map((i) => ({ path: i.path, fix: i.fix }));
  }
  throw new Error('expected a ValidationError');
}

describe('key directory: given the events, when a change is asked, then its event or the field at fault', () => {
  const given = () => {
    const dir = KeyDirectory.fromBootstrap([{ keyId: 'operator', team: 'ops', role: 'operator', sha256: sha('a') }]);
    dir.apply({ type: 'TeamCreated', data: decideCreateTeam(dir, { team: 'team-ml', by, now }) });
    return dir;
  };

  it('creates a team once; the bootstrap file\'s teams exist already', () => {
    const dir = given();
    expect(dir.teamView(dir.requireTeam('team-ml'), now)).toEqual({ team: 'team-ml', displayName: 'team-ml', source: 'events', createdBy: by, createdAt: now.toISOString(), activeKeys: 0 });
    expect(issues(() => decideCreateTeam(dir, { team: 'team-ml', by, now }))).toEqual([{ path: 'team', fix: expect.stringContaining('gpunet teams show team-ml') }]);
    expect(issues(() => decideCreateTeam(dir, { team: 'ops', by, now }))).toEqual([{ path: 'team', fix: expect.any(String) }]);
  });

  it('issues keys only to an existing, enabled team, with an expiry in the future', () => {
    const dir = given();
    const ok = decideIssueKey(dir, { keyId: 'key_1', sha256: sha('b'), team: 'team-ml', role: 'producer', by, now });
    expect(ok).toEqual({ keyId: 'key_1', team: 'team-ml', role: 'producer', sha256: sha('b'), issuedBy: by, issuedAt: now.toISOString() });
    expect(issues(() => decideIssueKey(dir, { keyId: 'key_2', sha256: sha('c'), team: 'team-x', role: 'producer', by, now }))).toEqual([{ path: 'team', fix: expect.stringContaining('gpunet teams create') }]);
    expect(issues(() => decideIssueKey(dir, { keyId: 'key_2', sha256: sha('c'), team: 'team-ml', role: 'producer', expiresAt: now.toISOString(), by, now }))).toEqual([{ path: 'expiresAt', fix: expect.any(String) }]);
    dir.apply({ type: 'TeamDisabled', data: decideDisableTeam(dir, { team: 'team-ml', by, now })! });
    expect(decideDisableTeam(dir, { team: 'team-ml', by, now })).toBeUndefined();
    expect(issues(() => decideIssueKey(dir, { keyId: 'key_2', sha256: sha('c'), team: 'team-ml', role: 'producer', by, now }))).toEqual([{ path: 'team', fix: expect.any(String) }]);
  });

  it('revokes a known key once, naming the digest it revokes; an unknown id names keyId', () => {
    const dir = given();
    dir.apply({ type: 'ApiKeyIssued', data: decideIssueKey(dir, { keyId: 'key_1', sha256: sha('b'), team: 'team-ml', role: 'producer', by, now }) });
    const revoked = decideRevokeKey(dir, { keyId: 'key_1', reason: 'rotated', by, now })!;
    expect(revoked).toEqual({ keyId: 'key_1', team: 'team-ml', sha256: sha('b'), reason: 'rotated', revokedBy: by, revokedAt: now.toISOString() });
    dir.apply({ type: 'ApiKeyRevoked', data: revoked });
    expect(decideRevokeKey(dir, { keyId: 'key_1', by, now })).toBeUndefined();
    expect(dir.listKeys('team-ml', now)).toEqual([expect.objectContaining({ keyId: 'key_1', state: 'revoked', revoked: { by, at: now.toISOString(), reason: 'rotated' } })]);
    expect(issues(() => decideRevokeKey(dir, { keyId: 'key_nope', by, now }))).toEqual([{ path: 'keyId', fix: expect.stringContaining('gpunet keys list') }]);
  });

  it('a fold that meets an event that does not fit (a second TeamCreated, a revoke of a key never issued) changes nothing and goes on', () => {
    const dir = given();
    dir.apply({ type: 'TeamCreated', data: { team: 'team-ml', displayName: 'Other', createdBy: by, createdAt: now.toISOString() } });
    dir.apply({ type: 'ApiKeyRevoked', data: { keyId: 'key_ghost', team: 'team-ml', sha256: sha('d'), revokedBy: by, revokedAt: now.toISOString() } });
    expect(dir.requireTeam('team-ml').displayName).toBe('team-ml');
    expect(dir.keys.has('key_ghost')).toBe(false);
  });
});
