/**
 * What nodes send to the execution service's recorder and what they receive from the control
 * plane (decision 0015): a node never opens the event store. It keeps its observations in a
 * journal on its own disk and reports each one, signed with its node key, on
 * `gpunet.report.<nodeId>.event` (request/reply: the reply says whether it was recorded); its
 * outputs on `gpunet.report.<nodeId>.outputs`. Its work (placements, cancels, the ends of its
 * gang peers, and the job facts they need) comes on `gpunet.work.<nodeId>.<EventType>` in the
 * JetStream stream `GPUNET_WORK`, as copies of events the control plane recorded.
 */
import { z } from 'zod';
import { StoreOutputs } from './commands.js';
import { JOIN_REFUSAL_REASONS, JoinTokenId, NodePublicKey, NodeEnrolled, REPORT_REFUSAL_REASONS } from './events/reports.js';
import { defineCommand, defineQuery } from './message.js';
import { AttemptId, ByteCount, JobId, NodeId, Sha256, TeamId, Timestamp } from './primitives.js';
import { SUBJECT_ROOT } from './subjects.js';

/** Stream of every node's work, `gpunet.work.<nodeId>.<EventType>`; each node has one durable consumer on its own subjects. */
export const WORK_STREAM = 'GPUNET_WORK';

const TOKEN = /^[A-Za-z0-9_-]+$/;
function token(name: string): string {
  if (!TOKEN.test(name)) throw new RangeError(`not a valid NATS subject token: ${JSON.stringify(name)} (use letters, digits, _ and -)`);
  return name;
}

/** `gpunet.report.<nodeId>.event`: one observation of a node, signed (request/reply, answered by the recorder). */
export function reportSubject(nodeId: string): string {
  return `${SUBJECT_ROOT}.report.${token(nodeId)}.event`;
}

/** `gpunet.report.<nodeId>.outputs`: a node's outputs of one attempt, signed; the recorder hands them to storage. */
export function outputsReportSubject(nodeId: string): string {
  return `${SUBJECT_ROOT}.report.${token(nodeId)}.outputs`;
}

/** Every report subject, for the recorder's subscription. */
export const REPORT_SUBJECTS = `${SUBJECT_ROOT}.report.*.*`;

/** `gpunet.work.<nodeId>.<type>`: a copy of a recorded event this node must act on. */
export function workSubject(nodeId: string, type: string): string {
  return `${SUBJECT_ROOT}.work.${token(nodeId)}.${token(type)}`;
}

/** `gpunet.work.<nodeId>.>`: the filter of a node's work consumer. */
export function workFilter(nodeId: string): string {
  return `${SUBJECT_ROOT}.work.${token(nodeId)}.>`;
}

/** The node id of a report subject, or undefined. */
export function nodeOfReportSubject(subject: string): string | undefined {
  const parts = subject.split('.');
  return parts.length === 4 && parts[0] === SUBJECT_ROOT && parts[1] === 'report' ? parts[2] : undefined;
}

/**
 * `gpunet.data.<nodeId>.<op>`: a node's requests to storage about its own blob bucket
 * (`gpunet-node-<nodeId>`): `stage` (copy an attempt's inputs or checkpoint from the team's
 * bucket into the node's), `checkpoint` (take a checkpoint the node wrote into its bucket into
 * the team's) and `read` (one chunk of an input of an attempt placed on it, read by storage from
 * the team's bucket for the node: decision 0036). Only that node may publish on its subjects, so
 * the subject proves who asks.
 */
export const NODE_DATA_OPS = ['stage', 'checkpoint', 'read'] as const;
export type NodeDataOp = (typeof NODE_DATA_OPS)[number];

export function nodeDataSubject(nodeId: string, op: NodeDataOp): string {
  return `${SUBJECT_ROOT}.data.${token(nodeId)}.${op}`;
}

/** Every node data subject, for storage's subscription. */
export const NODE_DATA_SUBJECTS = `${SUBJECT_ROOT}.data.*.*`;

/** The node id and operation of a node data subject, or undefined. */
export function parseNodeDataSubject(subject: string): { nodeId: string; op: string } | undefined {
  const parts = subject.split('.');
  return parts.length === 4 && parts[0] === SUBJECT_ROOT && parts[1] === 'data' ? { nodeId: parts[2]!, op: parts[3]! } : undefined;
}

export const StageForNode = z
  .object({
    jobId: JobId,
    attemptId: AttemptId,
    blobs: z
      .array(Sha256)
      .max(10_000)
      .describe('Addresses to copy into the node\'s bucket: the job\'s inputs (files, folder manifests and their files) or a recorded checkpoint of the job (its manifest and files). Empty: only check the attempt and open the bucket.'),
  })
  .strict()
  .describe('A node asks storage to put blobs of an attempt placed on it into its own bucket, before compute is held.');
export type StageForNode = z.output<typeof StageForNode>;

export const StageForNodeReply = z.object({
  bucket: z.string().describe('The node\'s bucket, `gpunet-node-<nodeId>`; objects `<team>/<sha256>`.'),
  team: TeamId,
  blobs: z.array(z.object({ sha256: Sha256, size: ByteCount, copiedBytes: ByteCount.describe('0 when the node\'s bucket held it already.') })),
});
export type StageForNodeReply = z.output<typeof StageForNodeReply>;

export const CheckpointFromNode = z
  .object({
    jobId: JobId,
    attemptId: AttemptId,
    sha256: Sha256.describe('The checkpoint\'s folder manifest, written by the node into its own bucket with its files.'),
  })
  .strict()
  .describe('A node asks storage to take a checkpoint from its bucket into the team\'s (verified), before it reports JobCheckpointed.');
export type CheckpointFromNode = z.output<typeof CheckpointFromNode>;

export const CheckpointFromNodeReply = z.object({
  sha256: Sha256,
  files: z.int().min(0),
  copiedBytes: ByteCount.describe('Bytes copied into the team\'s bucket (files it held already are not copied).'),
});
export type CheckpointFromNodeReply = z.output<typeof CheckpointFromNodeReply>;

export const ReadForNode = z
  .object({
    jobId: JobId,
    attemptId: AttemptId,
    sha256: Sha256.describe('The blob to read: an input of the job (a file, a folder manifest or one of its files) or a recorded checkpoint\'s manifest or file.'),
    seq: z
      .int()
      .min(0)
      .max(Number.MAX_SAFE_INTEGER)
      .describe('Stream sequence in the team\'s bucket: the reply is the blob\'s first chunk at or after it (0 for its first chunk); the reply\'s `Nats-Sequence` tells where the chunk was, so the next read asks for one more.'),
  })
  .strict()
  .describe('A node reads one chunk of a blob of an attempt placed on it from the team\'s bucket, through storage (decision 0036). Storage checks it and has nats-server answer the request: the reply is the server\'s direct get reply (the chunk\'s raw bytes with `Nats-Sequence` and its stored headers, or status 404 past the blob\'s last chunk); storage itself answers only a refusal or an empty blob, as a JSON reply envelope.');
export type ReadForNode = z.output<typeof ReadForNode>;

export const ReadForNodeReply = z
  .object({ end: z.literal(true).describe('The blob has no chunk at or after `seq`.') })
  .describe('Storage\'s own JSON answer to a ReadForNode of a blob with no bytes (a chunk comes from nats-server as raw bytes instead).');
export type ReadForNodeReply = z.output<typeof ReadForNodeReply>;

/** The event as the node recorded it in its journal (the fields the recorder appends). */
export const ReportedEvent = z.object({
  streamId: z.string().min(1).max(500),
  eventId: z.uuid(),
  type: z.string().min(1).max(100),
  data: z.unknown(),
  metadata: z.looseObject({
    correlationId: z.string().min(1).max(128),
    causationId: z.string().min(1).max(128),
    jobId: z.string().max(64).optional(),
    team: z.string().max(64).optional(),
    producer: z.string().max(64),
    occurredAt: z.string().max(64),
  }),
});
export type ReportedEvent = z.output<typeof ReportedEvent>;

export const NodeReport = z
  .object({
    nodeId: NodeId,
    journal: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/).describe('Id of the node\'s journal (made once with it): `seq` counts within it.'),
    seq: z.string().regex(/^\d{1,20}$/).describe('Position of the event in the node\'s journal: increases with every report, so an old one sent again is told apart.'),
    event: ReportedEvent,
    signature: z.string().min(1).max(200).describe('base64url ed25519 signature by the node key of `reportSigningBytes` of the other fields.'),
  })
  .describe('One observation of a node (held, started, checkpointed, finished, released, registered, data removed), signed by the node.');
export type NodeReport = z.output<typeof NodeReport>;

export const NodeReportReply = z.object({
  status: z.enum(['accepted', 'duplicate', 'refused']).describe('`accepted`: recorded now; `duplicate`: recorded earlier; `refused`: never recorded (the refusal is).'),
  reason: z.enum(REPORT_REFUSAL_REASONS).optional(),
  detail: z.string().optional(),
});
export type NodeReportReply = z.output<typeof NodeReportReply>;

export const NodeOutputsReport = z
  .object({
    nodeId: NodeId,
    outputs: StoreOutputs,
    signature: z.string().min(1).max(200).describe('base64url ed25519 signature by the node key of `outputsSigningBytes`.'),
  })
  .describe('The outputs of one attempt, uploaded to the team\'s blobs, signed by the node that ran it.');
export type NodeOutputsReport = z.output<typeof NodeOutputsReport>;

export const EnrollNode = z.object({
  nodeId: NodeId,
  publicKey: NodePublicKey,
  enrolledBy: z.string().min(1).max(200).default('operator').describe('Who enrolls it, for the record.'),
});
export type EnrollNode = z.output<typeof EnrollNode>;

export const EnrollNodeReply = z.object({
  nodeId: NodeId,
  publicKey: NodePublicKey,
  changed: z.boolean().describe('False when the node was already enrolled with this key (nothing recorded).'),
});
export type EnrollNodeReply = z.output<typeof EnrollNodeReply>;

export const IssueJoinToken = z.object({
  nodeId: NodeId,
  secretSha256: z.string().regex(/^[0-9a-f]{64}$/).describe('sha256 (hex) of the one-time secret the operator\'s CLI made; the secret never crosses the bus.'),
  expiresAt: Timestamp,
  issuedBy: z.string().min(1).max(200).default('operator').describe('Who issues it, for the record.'),
});
export type IssueJoinToken = z.output<typeof IssueJoinToken>;

export const IssueJoinTokenReply = z.object({ nodeId: NodeId, tokenId: JoinTokenId, expiresAt: Timestamp });
export type IssueJoinTokenReply = z.output<typeof IssueJoinTokenReply>;

export const JoinNode = z.object({
  nodeId: NodeId,
  secret: z.string().regex(/^[A-Za-z0-9_-]{43}$/).describe('The token\'s one-time secret (32 random bytes, base64url).'),
  publicKey: NodePublicKey.describe('The key the machine made for itself; its seed never leaves the machine.'),
});
export type JoinNode = z.output<typeof JoinNode>;

export const JoinNodeReply = z.object({
  status: z.enum(['joined', 'refused']).describe('`joined`: the token is spent and the key enrolled; `refused`: nothing was recorded.'),
  nodeId: NodeId,
  publicKey: NodePublicKey.optional().describe('The key enrolled (joined).'),
  tokenId: JoinTokenId.optional(),
  reason: z.enum(JOIN_REFUSAL_REASONS).optional().describe('Why a join was refused.'),
  detail: z.string().optional().describe('What to do about a refusal, in words.'),
});
export type JoinNodeReply = z.output<typeof JoinNodeReply>;

export const ListNodes = z.object({}).describe('Every enrolled node.');
export const ListNodesReply = z.object({ nodes: z.array(NodeEnrolled).describe('Each enrolled node with its current key, by node id.') });
export type ListNodesReply = z.output<typeof ListNodesReply>;

export const reportCommands = [
  defineCommand({
    name: 'EnrollNode',
    version: 1,
    handler: 'execution',
    description: 'Operator: the recorder takes this node\'s reports signed with this key (NodeEnrolled).',
    schema: EnrollNode,
    replySchema: EnrollNodeReply,
  }),
  defineCommand({
    name: 'IssueJoinToken',
    version: 1,
    handler: 'execution',
    description: 'Operator: a one-time token a machine may join as this node with (NodeJoinTokenIssued; only the secret\'s hash is sent and kept).',
    schema: IssueJoinToken,
    replySchema: IssueJoinTokenReply,
  }),
  defineCommand({
    name: 'JoinNode',
    version: 1,
    handler: 'execution',
    description: 'A joining machine (identity `joiner`): spend a join token and enroll the key it made (NodeJoinTokenUsed + NodeEnrolled).',
    schema: JoinNode,
    replySchema: JoinNodeReply,
  }),
] as const;

export const reportQueries = [
  defineQuery({
    name: 'ListNodes',
    version: 1,
    service: 'execution',
    description: 'Operator: every enrolled node and its key (answered by the recorder).',
    schema: ListNodes,
    replySchema: ListNodesReply,
  }),
] as const;

/** JSON with object keys sorted at every level (arrays keep their order): one byte string per value. */
function canonical(value: unknown): string {
  const sort = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(sort);
    if (v !== null && typeof v === 'object') {
      return Object.fromEntries(
        Object.keys(v as Record<string, unknown>)
          .filter((k) => (v as Record<string, unknown>)[k] !== undefined)
          .sort()
          .map((k) => [k, sort((v as Record<string, unknown>)[k])]),
      );
    }
    return v;
  };
  return JSON.stringify(sort(value));
}

/**
 * The bytes a node signs for one report: `gpunet-node-report/1` and a newline, then the canonical
 * JSON (keys sorted) of `{ nodeId, journal, seq, event }`. Any change to any field breaks the signature.
 */
export function reportSigningBytes(report: Omit<NodeReport, 'signature'>): Uint8Array {
  const { nodeId, journal, seq, event } = report;
  return new TextEncoder().encode(`gpunet-node-report/1\n${canonical({ nodeId, journal, seq, event })}`);
}

/** The bytes a node signs for an outputs report: `gpunet-node-outputs/1`, a newline, canonical JSON of `{ nodeId, outputs }`. */
export function outputsSigningBytes(report: Omit<NodeOutputsReport, 'signature'>): Uint8Array {
  return new TextEncoder().encode(`gpunet-node-outputs/1\n${canonical({ nodeId: report.nodeId, outputs: report.outputs })}`);
}

/**
 * What the recorder keeps of a node's signature with each event it records from a report
 * (`metadata.report`): enough for anyone holding the event to rebuild the bytes the node signed
 * and check them offline (dispute bundles), since the recorded metadata is the control plane's.
 */
export interface ReportProof {
  readonly nodeId: string;
  readonly publicKey: string;
  readonly signature: string;
  readonly journal: string;
  readonly seq: string;
  /** The event's metadata as the node signed it (the recorded one says `producer: execution`, the job's team from intake). */
  readonly metadata: ReportedEvent['metadata'];
}

/** The bytes a node signed for a recorded event, rebuilt from the event and its {@link ReportProof}. */
export function recordedReportSigningBytes(event: { streamId: string; eventId: string; type: string; data: unknown }, proof: ReportProof): Uint8Array {
  return reportSigningBytes({
    nodeId: proof.nodeId,
    journal: proof.journal,
    seq: proof.seq,
    event: { streamId: event.streamId, eventId: event.eventId, type: event.type, data: event.data, metadata: proof.metadata },
  });
}
