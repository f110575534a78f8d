/**
 * Signed chain heads ("digests"): the ledger's notary signs, with the network's ed25519 signing
 * key, every stream's head (last revision, position, hash) as of a store position, chained to the
 * previous digest — CloudTrail's digest files, as events. Anyone holding the public key checks a
 * store, an exported digest directory or a dispute bundle against them offline
 * (docs/decisions/0011-signed-chain-heads.md).
 */
import { z } from 'zod';
import { strictObject } from './issues.js';
import { defineCommand, defineEvent } from './message.js';
import { DecimalString, Sha256, Timestamp } from './primitives.js';

/** Format tag of a digest, also the first field its signature covers. */
export const CHAIN_DIGEST_FORMAT = 'gpunet.chain-digest/2';
/** Format of digests signed before /2: the same fields, the Merkle leaves sorted by stream id (docs/decisions/0040-heads-tree-in-first-appearance-order.md). */
export const LEGACY_CHAIN_DIGEST_FORMAT = 'gpunet.chain-digest/1';

/** `ledger-digests`: every ChainHeadsSigned, sequence 1 first (revision = sequence − 1). */
export const DIGEST_STREAM = 'ledger-digests';

export const StreamHead = z
  .object({
    streamId: z.string().min(1).describe('Event store stream id, e.g. `execution-node-1-attempt-job_01-a1`.'),
    revision: DecimalString.describe('Last revision of the stream at or before the digest position.'),
    position: DecimalString.describe('Global position of that event.'),
    hash: Sha256.describe('Its chain hash.'),
  })
  .describe("A stream's head as of a position.");
export type StreamHead = z.output<typeof StreamHead>;

export const ChainHeadsSigned = z
  .object({
    format: z.enum([CHAIN_DIGEST_FORMAT, LEGACY_CHAIN_DIGEST_FORMAT]).describe(`\`${CHAIN_DIGEST_FORMAT}\` for every digest signed now; \`${LEGACY_CHAIN_DIGEST_FORMAT}\` (leaves sorted by stream id) in stores signed before it, still checked.`),
    sequence: z.int().min(1).describe('1 for the first digest of the store, then +1.'),
    position: DecimalString.describe('Store position covered: every event at or before it.'),
    previousPosition: DecimalString.describe('Position of the previous digest (`0` for the first).'),
    previousDigestHash: Sha256.describe('`digestHash` of the previous digest (64 zeros for the first): digests chain too.'),
    streams: z.int().min(0).describe('How many streams the store held at `position`.'),
    headsRoot: Sha256.describe(
      'Merkle root over every stream head at `position` (leaf = sha256(0x00 ‖ canonical [streamId, revision, position, hash]), node = sha256(0x01 ‖ left ‖ right), an odd node carried up). Leaves in the order streams first appear in the chain of digests, each digest\'s `heads` in the order listed (format /2); sorted by stream id (format /1).',
    ),
    heads: z.array(StreamHead).describe('The heads that changed since the previous digest, sorted by stream id (all of them in the first digest).'),
    signedAt: Timestamp.describe('When the notary signed (its clock).'),
    publicKey: z.string().regex(/^U[A-Z2-7]{55}$/).describe('NKey public key (ed25519) of the signing key.'),
    signature: z.string().min(1).describe('base64url ed25519 signature over the canonical JSON of every other field.'),
  })
  .describe('Every stream head of the event store as of a position, signed with the network signing key and chained to the previous digest.');
export type ChainHeadsSigned = z.output<typeof ChainHeadsSigned>;

export const SignChainHeads = strictObject({}, 'SignChainHeads').describe('Sign the chain heads now (when the store moved since the last digest).');
export type SignChainHeads = z.output<typeof SignChainHeads>;

export const SignChainHeadsReply = z
  .object({
    signed: z.boolean().describe('True when a new digest was recorded; false when the store had not moved since the latest one, which is returned.'),
    digest: ChainHeadsSigned.nullable().describe('The latest digest (null: nothing to sign in an empty store).'),
  })
  .describe('The digest covering the store head.');
export type SignChainHeadsReply = z.output<typeof SignChainHeadsReply>;

export const digestEvents = [
  defineEvent({
    name: 'ChainHeadsSigned',
    version: 1,
    producers: ['ledger'],
    description: 'Signed chain heads: every stream head as of a store position (changed ones listed, all in a Merkle root), chained to the previous digest and signed with the network signing key (ed25519).',
    schema: ChainHeadsSigned,
  }),
] as const;

export const digestCommands = [
  defineCommand({
    name: 'SignChainHeads',
    version: 1,
    handler: 'ledger',
    description: 'Operator: the ledger signs the chain heads now (only when the store moved since the last digest) and answers with the digest covering the head.',
    schema: SignChainHeads,
    replySchema: SignChainHeadsReply,
  }),
] as const;
