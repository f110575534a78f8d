/**
 * Events of the execution service's recorder, the central part beside the store that records
 * what the nodes report: which node may report with which key, and every report it refused.
 * A node never writes the store itself (decision 0015).
 */
import { z } from 'zod';
import { defineEvent } from '../message.js';
import { HumanText, JobId, NodeId, Timestamp } from '../primitives.js';

/** A node's NKey public key: `U` and 55 more base32 characters. */
export const NodePublicKey = z
  .string()
  .regex(/^U[A-Z2-7]{55}$/, { error: 'must be an NKey user public key (U followed by 55 base32 characters); see `gpunet nodes enroll --help`' })
  .describe('NKey user public key of the node (`U…`); its reports are signed with the matching seed.');

export const NodeEnrolled = z.object({
  nodeId: NodeId,
  publicKey: NodePublicKey,
  enrolledBy: z.string().min(1).max(200).describe('Who enrolled the node: `gpunet up`, or the operator who ran `gpunet nodes enroll`.'),
  enrolledAt: Timestamp.describe('Recorder clock: when the enrollment was recorded.'),
});
export type NodeEnrolled = z.output<typeof NodeEnrolled>;

/** The id of a join token in the record: the first 16 hex digits of the sha256 of its secret. */
export const JoinTokenId = z.string().regex(/^[0-9a-f]{16}$/).describe('First 16 hex digits of the sha256 of the token\'s secret: names the token in the record.');

export const NodeJoinTokenIssued = z.object({
  nodeId: NodeId.describe('The only node this token may join as.'),
  tokenId: JoinTokenId,
  secretSha256: z.string().regex(/^[0-9a-f]{64}$/).describe('sha256 (hex) of the token\'s one-time secret; the secret itself is never recorded.'),
  expiresAt: Timestamp.describe('After this the token joins nothing.'),
  issuedBy: z.string().min(1).max(200).describe('The operator who ran `gpunet nodes token`.'),
  issuedAt: Timestamp.describe('Recorder clock.'),
});
export type NodeJoinTokenIssued = z.output<typeof NodeJoinTokenIssued>;

export const NodeJoinTokenUsed = z.object({
  nodeId: NodeId,
  tokenId: JoinTokenId,
  publicKey: NodePublicKey.describe('The key the node made on its own machine and joined with (enrolled in the same append).'),
  usedAt: Timestamp.describe('Recorder clock.'),
});
export type NodeJoinTokenUsed = z.output<typeof NodeJoinTokenUsed>;

/** Why the recorder refused a join. */
export const JOIN_REFUSAL_REASONS = ['unknown_token', 'used', 'expired', 'other_node'] as const;
export type JoinRefusalReason = (typeof JOIN_REFUSAL_REASONS)[number];

/** Why the recorder refused a node's report. */
export const REPORT_REFUSAL_REASONS = [
  'malformed',
  'unknown_node',
  'bad_signature',
  'other_node',
  'not_placed',
  'other_team',
  'replayed',
  'state',
  'bad_blob',
] as const;
export type ReportRefusalReason = (typeof REPORT_REFUSAL_REASONS)[number];

export const NodeReportRefused = z.object({
  nodeId: z.string().max(200).describe('The node the report came from (its subject), as sent.'),
  reason: z
    .enum(REPORT_REFUSAL_REASONS)
    .describe(
      '`malformed`: not a report; `unknown_node`: no enrolled key; `bad_signature`: not signed by the enrolled key; `other_node`: about another node (its stream, its attempt or its subject); `not_placed`: the attempt was never placed on the node; `other_team`: outputs for a team the job is not of; `replayed`: an old report sent again; `state`: does not fit what the attempt recorded so far; `bad_blob`: outputs whose bytes in the node\'s bucket are missing or do not match the address and size reported (storage refused to copy them).',
    ),
  detail: HumanText.describe('What did not hold, for the operator.'),
  eventId: z.string().max(200).optional().describe('The reported event id, when there was one.'),
  type: z.string().max(200).optional().describe('The reported event type, or `StoreOutputs` for an outputs report.'),
  streamId: z.string().max(500).optional().describe('The stream the report was for.'),
  jobId: JobId.optional(),
  attemptId: z.string().max(200).optional().describe('The attempt the report was about, as sent.'),
  publicKey: z.string().max(200).optional().describe('The key the report claims to be signed with (the enrolled one, when the node is known).'),
  refusedAt: Timestamp.describe('Recorder clock.'),
});
export type NodeReportRefused = z.output<typeof NodeReportRefused>;

export const reportEvents = [
  defineEvent({
    name: 'NodeEnrolled',
    version: 1,
    producers: ['execution'],
    description: 'The recorder takes reports from this node signed with this key (a later enrollment of the node replaces the key).',
    schema: NodeEnrolled,
  }),
  defineEvent({
    name: 'NodeJoinTokenIssued',
    version: 1,
    producers: ['execution'],
    description: 'An operator issued a one-time token a machine may join as this node with, until it expires (only its secret\'s hash is kept).',
    schema: NodeJoinTokenIssued,
  }),
  defineEvent({
    name: 'NodeJoinTokenUsed',
    version: 1,
    producers: ['execution'],
    description: 'A machine joined with this token: the token is spent, and the node is enrolled with the key it made (NodeEnrolled, same append).',
    schema: NodeJoinTokenUsed,
  }),
  defineEvent({
    name: 'NodeReportRefused',
    version: 1,
    producers: ['execution'],
    description: 'The recorder refused a report of a node: nothing of it was recorded or billed.',
    schema: NodeReportRefused,
  }),
] as const;

