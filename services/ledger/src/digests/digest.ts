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
 * streams' heads with a proof of log(streams) hashes and the one digest. Format /2 puts the
 * leaves in the order streams first appear in the chain, so the notary updates the tree in place
 * (`HeadsTree`); format /1 sorted them by stream id, and is still checked (decision 0040).
 */
import { CHAIN_DIGEST_FORMAT, LEGACY_CHAIN_DIGEST_FORMAT, type ChainHeadsSigned, type StreamHead } from '#contracts';
import { canonicalJson } from '#event-store';
import { signBytes, verifySignature, type Identity } from '#identity';
import { createHash } from 'node:crypto';
import { HeadsTree, leafHash, nodeHash, type ProofStep } from './heads-tree.js';

/** `previousDigestHash` of the first digest. */
export const GENESIS_DIGEST_HASH = '0'.repeat(64);

/** Every stream's head by stream id (the verifier's view of a store). */
export type Heads = Map<string, StreamHead>;

export { leafHash, type ProofStep } from './heads-tree.js';

/** Heads in stream id order, as a digest lists them. */
export function sortedHeads(heads: Iterable<StreamHead>): StreamHead[] {
  return [...heads].sort((a, b) => (a.streamId < b.streamId ? -1 : a.streamId > b.streamId ? 1 : 0));
}

/** Format /1's tree: the same tree with the leaves sorted by stream id, built whole (only for digests signed before /2). */
function sortedTree(heads: Iterable<StreamHead>): HeadsTree {
  const tree = new HeadsTree();
  for (const h of sortedHeads(heads)) tree.set(h);
  return tree;
}

/** Format /1's root: over every head, streams sorted by id. */
export function sortedHeadsRoot(heads: Iterable<StreamHead>): string {
  return sortedTree(heads).root();
}

/** The root `d`'s format defines over `tree` (the heads folded up to and including `d`). */
export function digestRoot(tree: HeadsTree, d: Pick<ChainHeadsSigned, 'format'>): string {
  return d.format === LEGACY_CHAIN_DIGEST_FORMAT ? sortedHeadsRoot(tree.heads()) : tree.root();
}

/** The inclusion proof of `streamId`'s head against `d`'s root, `tree` folded up to `d`. */
export function digestProof(tree: HeadsTree, d: Pick<ChainHeadsSigned, 'format'>, streamId: string): ProofStep[] | undefined {
  return (d.format === LEGACY_CHAIN_DIGEST_FORMAT ? sortedTree(tree.heads()) : tree).proof(streamId);
}

/** Why `tree`, folded up to and including `d`, does not give `d`'s stream count and root; undefined when it does. */
export function rootProblem(tree: HeadsTree, d: ChainHeadsSigned): string | undefined {
  return foldProblem(d, tree.size, () => digestRoot(tree, d));
}

/**
 * Why a fold of the chain of digests up to and including `d`, holding `streams` streams with the
 * root `root()`, does not give `d`'s stream count and root; undefined when it does.
 */
export function foldProblem(d: ChainHeadsSigned, streams: number, root: () => string): string | undefined {
  if (streams !== d.streams) return `digest #${d.sequence} says the store held ${d.streams} streams, its chain of digests holds ${streams}: the digest is malformed`;
  if (root() !== d.headsRoot) return `digest #${d.sequence}'s heads do not give its own headsRoot: the digest is malformed`;
  return undefined;
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
  return createHash('sha256').update(canonicalJson(d)).digest('hex');
}

/**
 * The next digest after `previous`, signed: `tree` holds the heads `previous` covers, `changed`
 * the heads that moved since (one per stream). Pure but for the signature; `tree` is not changed.
 */
export function signNextDigest(input: { previous: ChainHeadsSigned | undefined; tree: HeadsTree; changed: Iterable<StreamHead>; position: bigint; signedAt: string; identity: Identity }): ChainHeadsSigned {
  const heads = sortedHeads(input.changed);
  return signDigest({ ...input, heads, ...input.tree.rootWith(heads) });
}

/**
 * The next digest after `previous`, signed: `heads` the heads that moved since (sorted by stream
 * id, one per stream), `root` and `streams` those of the tree over every head with them. Pure but
 * for the signature.
 */
export function signDigest(input: { previous: ChainHeadsSigned | undefined; heads: StreamHead[]; root: string; streams: number; position: bigint; signedAt: string; identity: Identity }): ChainHeadsSigned {
  const { heads, root, streams } = input;
  const body: Omit<ChainHeadsSigned, 'signature'> = {
    format: CHAIN_DIGEST_FORMAT,
    sequence: (input.previous?.sequence ?? 0) + 1,
    position: input.position.toString(),
    previousPosition: input.previous?.position ?? '0',
    previousDigestHash: input.previous ? digestHash(input.previous) : GENESIS_DIGEST_HASH,
    streams,
    headsRoot: root,
    heads,
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
