/**
 * Join tokens (decision 0022): an operator issues a one-time token for one node id with an expiry;
 * a machine spends it once to enroll the key it made for itself. The store keeps only the sha256
 * of a token's secret. Pure: the recorder hands in the recorded tokens and its clock.
 */
import type { JoinRefusalReason, NodeJoinTokenIssued, NodeJoinTokenUsed } from '#contracts';

/** A recorded token and, once spent, how. */
export interface JoinTokenState {
  issued: NodeJoinTokenIssued;
  used?: NodeJoinTokenUsed;
}

/** The tokens by the sha256 of their secret, from the recorder's enrollment stream. */
export type JoinTokens = ReadonlyMap<string, JoinTokenState>;

/** Folds one event of the enrollment stream into the tokens (other events leave them as they are). */
export function evolveJoinTokens(tokens: Map<string, JoinTokenState>, type: string, data: unknown): void {
  if (type === 'NodeJoinTokenIssued') {
    const issued = data as NodeJoinTokenIssued;
    tokens.set(issued.secretSha256, { issued });
  } else if (type === 'NodeJoinTokenUsed') {
    const used = data as NodeJoinTokenUsed;
    for (const t of tokens.values()) if (t.issued.tokenId === used.tokenId) t.used = used;
  }
}

export type JoinDecision = { ok: true; token: NodeJoinTokenIssued } | { ok: false; reason: JoinRefusalReason; detail: string };

/**
 * May a machine holding a secret whose sha256 is `secretSha256` join as `nodeId` at `now`? Only
 * with a token that was issued (else `unknown_token`: forged or mistyped), for this node id
 * (`other_node`), not spent before (`used`) and not expired (`expired`).
 */
export function decideJoin(tokens: JoinTokens, request: { nodeId: string; secretSha256: string }, now: Date): JoinDecision {
  const t = tokens.get(request.secretSha256);
  if (!t) return { ok: false, reason: 'unknown_token', detail: 'no such join token: it was never issued (ask the operator for one: `gpunet nodes token <nodeId>`)' };
  if (t.issued.nodeId !== request.nodeId) return { ok: false, reason: 'other_node', detail: `token ${t.issued.tokenId} was issued for another node, not ${request.nodeId}` };
  if (t.used) return { ok: false, reason: 'used', detail: `token ${t.issued.tokenId} was spent at ${t.used.usedAt}; a token joins once (ask for a new one)` };
  if (now.getTime() >= Date.parse(t.issued.expiresAt)) return { ok: false, reason: 'expired', detail: `token ${t.issued.tokenId} expired at ${t.issued.expiresAt} (ask for a new one)` };
  return { ok: true, token: t.issued };
}
