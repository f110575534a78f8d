import { renderKeys, renderTeams } from './keys.js';

describe('teams and keys, as printed', () => {
  const by = { keyId: 'operator', team: 'local' };

  it('lists keys by id, team, role, who created them and their state, revoked with by whom and why', () => {
    const text = renderKeys({
      keys: [
        { keyId: 'local', team: 'local', role: 'producer', source: 'file', state: 'active' },
        { keyId: 'key_1', team: 'team-ml', role: 'producer', name: 'ci', source: 'events', issuedBy: by, issuedAt: '2026-01-01T00:00:00.000Z', state: 'revoked', revoked: { by, at: '2026-01-02T00:00:00.000Z', reason: 'leaked' } },
        { keyId: 'key_2', team: 'team-ml', role: 'admin', source: 'events', issuedBy: by, issuedAt: '2026-01-01T00:00:00.000Z', expiresAt: '2027-01-01T00:00:00.000Z', state: 'active' },
      ],
    });
    const [header, fileKey, revoked, expiring] = text.split('\n');
    expect(header).toMatch(/^KEY ID\s+TEAM\s+ROLE\s+NAME\s+CREATED \(UTC\)\s+BY\s+STATE$/);
    expect(fileKey).toMatch(/^local\s+local\s+producer\s+\(key file\)\s+active$/);
    expect(revoked).toContain('revoked 2026-01-02T00:00:00.000Z by local/operator: leaked');
    expect(expiring).toContain('active until 2027-01-01T00:00:00.000Z');
    expect(renderKeys({ keys: [] })).toBe('no keys');
  });

  it('lists teams with their state and active keys', () => {
    const text = renderTeams({ teams: [{ team: 'team-ml', displayName: 'ML', source: 'events', createdBy: by, createdAt: '2026-01-01T00:00:00.000Z', disabled: { by, at: '2026-02-01T00:00:00.000Z' }, activeKeys: 0 }] });
    expect(text.split('\n')[1]).toMatch(/^team-ml\s+ML\s+disabled\s+0\s+2026-01-01T00:00:00.000Z\s+local\/operator$/);
  });
});
