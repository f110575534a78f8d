import type { NodeJoinTokenIssued } from '#contracts';
import { decideJoin, evolveJoinTokens, type JoinTokenState } from './join.js';

const hash = (c: string) => c.repeat(64);
const issued: NodeJoinTokenIssued = { nodeId: 'gpu-1', tokenId: 'a'.repeat(16), secretSha256: hash('a'), expiresAt: '2026-01-01T01:00:00.000Z', issuedBy: 'operator ops', issuedAt: '2026-01-01T00:00:00.000Z' };
const at = (iso: string) => new Date(iso);

describe('decideJoin', () => {
  const tokens = () => {
    const t = new Map<string, JoinTokenState>();
    evolveJoinTokens(t, 'NodeJoinTokenIssued', issued);
    return t;
  };

  it('takes an issued token, for its node, unspent and unexpired', () => {
    expect(decideJoin(tokens(), { nodeId: 'gpu-1', secretSha256: hash('a') }, at('2026-01-01T00:30:00Z'))).toEqual({ ok: true, token: issued });
  });

  it('refuses a token never issued, one for another node, a spent one and an expired one', () => {
    expect(decideJoin(tokens(), { nodeId: 'gpu-1', secretSha256: hash('b') }, at('2026-01-01T00:30:00Z'))).toMatchObject({ ok: false, reason: 'unknown_token' });
    expect(decideJoin(tokens(), { nodeId: 'gpu-2', secretSha256: hash('a') }, at('2026-01-01T00:30:00Z'))).toMatchObject({ ok: false, reason: 'other_node' });
    expect(decideJoin(tokens(), { nodeId: 'gpu-1', secretSha256: hash('a') }, at('2026-01-01T01:00:00Z'))).toMatchObject({ ok: false, reason: 'expired' });
    const spent = tokens();
    evolveJoinTokens(spent, 'NodeJoinTokenUsed', { nodeId: 'gpu-1', tokenId: issued.tokenId, publicKey: `U${'A'.repeat(55)}`, usedAt: '2026-01-01T00:10:00.000Z' });
    expect(decideJoin(spent, { nodeId: 'gpu-1', secretSha256: hash('a') }, at('2026-01-01T00:30:00Z'))).toMatchObject({ ok: false, reason: 'used' });
  });
});
