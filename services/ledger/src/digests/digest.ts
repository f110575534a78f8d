/**
 * Signed chain heads, the pure part: the Merkle root over every stream head, inclusion proofs for
 * dispute bundles, building, signing and checking one digest, and the chain of digests.
 *
 * A digest (`ChainHeadsSigned`, contracts/digests.ts) says: "as of store position P, these were
 * the heads of every stream", signed with the network signing key (ed25519, an NKey held by the
 * ledger's notary only) and chained to the previous digest by its hash. The per-stream hash chain
 * (decision 0002) ties every event to its stream's head, so a history rewritten with a recomputed
 * chain ends at another head hash than the one signed, and whoever holds only the public key sees
 * it (docs/decisions/0011-signed-chain-heads.md).
 *
 * Each digest lists only the heads that changed since the previous one (every one in the first),
 * so digests stay small on a store of many streams; the full set at a digest is the fold of the
 * chain up to it, and `headsRoot` (a Merkle root over that full set) lets a bundle prove its
 * streams' heads with a proof of log(streams) hashes and the one digest.
 */
import { CHAIN_DIGEST_FORMAT, type ChainHeadsSigned, type StreamHead } from '#contracts';
import { canonicalJson } from '#event-store';
import { signBytes, verifySignature, type Identity } from '#identity';
import { createHash } from 'node:crypto';

/** `previousDigestHash` of the first digest. */
export const GENESIS_DIGEST_HASH = '0'.repeat(64);

/** Every stream's head by stream id. */
export type Heads = Map<string, StreamHead>;

/** One step of a Merkle inclusion proof: the sibling's hash and which side it sits on. */
export interface ProofStep {
  side: 'left' | 'right';
  hash: string;
}

const sha256 = (...parts: (string | Buffer)[]): Buffer => {
  const h = createHash('sha256');
  for (const p of parts) h.update(p);
  return h.digest();
};
const LEAF = Buffer.from([0]);
const NODE = Buffer.from([1]);

/** Leaf of one head: sha256(0x00 ‖ canonical [streamId, revision, position, hash]); the prefix keeps a leaf from passing for a node. */
export function leafHash(h: StreamHead): Buffer {
  return sha256(LEAF, canonicalJson([h.streamId, h.revision, h.position, h.hash]));
}

function nodeHash(left: Buffer, right: Buffer): Buffer {
  return sha256(NODE, left, right);
}

function sortedHeads(heads: Heads): StreamHead[] {
  return [...heads.values()].sort((a, b) => (a.streamId < b.streamId ? -1 : a.streamId > b.streamId ? 1 : 0));
}

/** The tree's levels, leaves first; an odd last node is carried up unchanged (never duplicated). */
function levels(heads: Heads): Buffer[][] {
  const out: Buffer[][] = [sortedHeads(heads).map(leafHash)];
  while (out[out.length - 1]!.length > 1) {
    const below = out[out.length - 1]!;
    const up: Buffer[] = [];
    for (let i = 0; i < below.length; i += 2) up.push(i + 1 < below.length ? nodeHash(below[i]!, below[i + 1]!) : below[i]!);
    out.push(up);
  }
  return out;
}

/** Merkle root (hex) over every head, streams sorted by id; sha256 of nothing for no stream. */
export function headsRoot(heads: Heads): string {
  if (heads.size === 0) return sha256().toString('hex');
  const l = levels(heads);
  return l[l.length - 1]![0]!.toString('hex');
}

/** The inclusion proof of `streamId`'s head, or undefined when the stream is not among the heads. */
export function inclusionProof(heads: Heads, streamId: string): ProofStep[] | undefined {
  let index = sortedHeads(heads).findIndex((h) => h.streamId === streamId);
  if (index < 0) return undefined;
  const proof: ProofStep[] = [];
  for (const level of levels(heads).slice(0, -1)) {
    const sibling = index % 2 === 0 ? index + 1 : index - 1;
    if (sibling < level.length) proof.push({ side: index % 2 === 0 ? 'right' : 'left', hash: level[sibling]!.toString('hex') });
    index = Math.floor(index / 2);
  }
  return proof;
}

/** The root a head and its proof lead to (compare with the digest's `headsRoot`). */
export function rootFromProof(head: StreamHead, proof: readonly ProofStep[]): string {
  let h = leafHash(head);
  for (const step of proof) {
    const sibling = Buffer.from(step.hash, 'hex');
    h = step.side === 'left' ? nodeHash(sibling, h) : nodeHash(h, sibling);
  }
  return h.toString('hex');
}

/** The bytes a digest's signature covers: the canonical JSON of every field but `signature`. */
export function digestSigningBytes(d: Omit<ChainHeadsSigned, 'signature'> & { signature?: string }): Uint8Array {
  const { signature: _ignored, ...body } = d;
  return new TextEncoder().encode(canonicalJson(body));
}

/** sha256 (hex) of a whole digest, signature included: the next digest's `previousDigestHash`. */
export function digestHash(d: ChainHeadsSigned): string {
  return sha256(canonicalJson(d)).toString('hex');
}

/** Heads that differ between two sets (new or moved streams), sorted by stream id. */
export function changedHeads(before: Heads, after: Heads): StreamHead[] {
  return sortedHeads(after).filter((h) => {
    const b = before.get(h.streamId);
    return !b || b.revision !== h.revision || b.hash !== h.hash || b.position !== h.position;
  });
}

/** Applies a digest's changed heads to the full set before it (a copy). */
export function applyDigest(before: Heads, d: ChainHeadsSigned): Heads {
  const after = new Map(before);
  for (const h of d.heads) after.set(h.streamId, h);
  return after;
}

/** The next digest after `previous` (whose full heads are `previousHeads`), signed. Pure but for the signature. */
export function signNextDigest(input: {
  previous: ChainHeadsSigned | undefined;
  previousHeads: Heads;
  heads: Heads;
  position: bigint;
  signedAt: string;
  identity: Identity;
}): ChainHeadsSigned {
  const body: Omit<ChainHeadsSigned, 'signature'> = {
    format: CHAIN_DIGEST_FORMAT,
    sequence: (input.previous?.sequence ?? 0) + 1,
    position: input.position.toString(),
    previousPosition: input.previous?.position ?? '0',
    previousDigestHash: input.previous ? digestHash(input.previous) : GENESIS_DIGEST_HASH,
    streams: input.heads.size,
    headsRoot: headsRoot(input.heads),
    heads: changedHeads(input.previousHeads, input.heads),
    signedAt: input.signedAt,
    publicKey: input.identity.publicKey,
  };
  return { ...body, signature: signBytes(input.identity, digestSigningBytes(body)) };
}

/** Why one digest cannot be trusted under `publicKey`, or undefined when its signature holds. */
export function signatureProblem(d: ChainHeadsSigned, publicKey: string): string | undefined {
  if (d.publicKey !== publicKey) return `digest #${d.sequence} is signed by key ${d.publicKey}, not by the network key ${publicKey}`;
  if (!verifySignature(publicKey, digestSigningBytes(d), d.signature)) return `digest #${d.sequence} (position ${d.position}) does not match its signature: forged or edited`;
  return undefined;
}

/** Why `d` does not follow `previous` in the chain of digests, or undefined when it does. */
export function linkProblem(previous: ChainHeadsSigned | undefined, d: ChainHeadsSigned): string | undefined {
  const sequence = (previous?.sequence ?? 0) + 1;
  if (d.sequence !== sequence) return `digest #${d.sequence} where #${sequence} was due: ${d.sequence > sequence ? `digest(s) #${sequence}…#${d.sequence - 1} missing` : 'digests out of order'}`;
  const prevHash = previous ? digestHash(previous) : GENESIS_DIGEST_HASH;
  if (d.previousDigestHash !== prevHash) return `digest #${d.sequence} does not chain to digest #${sequence - 1}: its previousDigestHash is not that digest's hash (a digest before it was replaced)`;
  if (d.previousPosition !== (previous?.position ?? '0')) return `digest #${d.sequence} says the previous digest covered position ${d.previousPosition}, it covered ${previous?.position ?? '0'}`;
  if (previous && BigInt(d.position) <= BigInt(previous.position)) return `digest #${d.sequence} covers position ${d.position}, not past digest #${previous.sequence}'s ${previous.position}`;
  return undefined;
}
