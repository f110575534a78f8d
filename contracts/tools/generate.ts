/**
 * Renders the contracts for producers in other languages: one JSON Schema (draft-07) per
 * message and one AsyncAPI 3.0 document. Pure: returns file contents, writes nothing, so the
 * export script writes them and a test compares them with what is committed.
 *
 * Every JSON Schema file validates one NATS message body exactly as sent:
 * - `<Event>.json`: the recorded-event envelope whose `data` is that event;
 * - `<Command>.json` / `<Query>.json`: the request; `<Name>.reply.json`: its reply envelope;
 * - `JobSpec.json`: the job spec as people write it (`job.yaml`), `RecordedEvent.json`: any
 *   event envelope, `DeadLetter.json`: a dead letter, `FolderManifest.json`: the blob that
 *   addresses a folder input.
 * Schemas are generated in `input` mode: they accept exactly what the zod schemas accept
 * (fields with defaults are optional).
 */
import { z } from 'zod';
import {
  BLOB_BUCKET_PREFIX,
  NODE_BUCKET_PREFIX,
  BlobObjectRecord,
  CHUNK_INDEX_HEADER,
  CHUNK_SHA256_HEADER,
  Commands,
  DeadLetter,
  ERROR_CODES,
  Events,
  FeedEntry,
  LogLine,
  NodeOutputsReport,
  NodeReport,
  NodeReportReply,
  StageForNode,
  StageForNodeReply,
  CheckpointFromNode,
  CheckpointFromNodeReply,
  ReadForNode,
  ReadForNodeReply,
  REPLY_ERROR_CODES,
  WORK_STREAM,
  EVERY_SERVICE,
  FolderManifest,
  HEADERS,
  JobSpecInput,
  MESSAGES,
  NO_SCOPE,
  RecordedEventEnvelope,
  SERVICE_NAMES,
  STREAMS,
  SUBJECT_PREFIX,
  eventEnvelopeSchema,
  replyEnvelope,
  type EventType,
  type MessageDefinition,
} from '../index.js';

/** Version of the contracts as a whole (AsyncAPI `info.version`); bump the minor on additions, the major with any message version. */
export const CONTRACTS_VERSION = '1.0.0';

/** One generated file, its path relative to `contracts/generated/`. */
export interface GeneratedFile {
  path: string;
  content: string;
}

type JsonObject = { [key: string]: unknown };

const GENERATED_NOTE = 'Generated from contracts/ by `npm run contracts:export`; do not edit.';

/** Every generated file, in a stable order with stable content. */
export function generateContractFiles(): GeneratedFile[] {
  const schemas = messageSchemas();
  const files = [...schemas].map(([name, schema]) => ({ path: `json-schema/${name}.json`, content: render(schema) }));
  files.push({ path: 'asyncapi.json', content: render(asyncApiDocument(schemas)) });
  return files.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

/** JSON text as committed: two-space indent, trailing newline. */
function render(value: unknown): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}

/** Standalone JSON Schemas by file name (without `.json`). */
function messageSchemas(): Map<string, JsonObject> {
  const out = new Map<string, JsonObject>();
  for (const def of MESSAGES) {
    const about = `${def.description} Subject: \`${def.subject}\`. Schema version ${def.version}.`;
    if (def.kind === 'event') {
      out.set(def.name, jsonSchema(eventEnvelopeSchema(def.name as EventType), def.name, about, def.version));
    } else {
      out.set(def.name, jsonSchema(def.schema, def.name, about, def.version));
      out.set(replyName(def), jsonSchema(replyEnvelope(def.replySchema), replyName(def), `Reply to ${def.name}.`, def.version));
    }
  }
  out.set('JobSpec', jsonSchema(JobSpecInput, 'JobSpec', 'A job spec as people write it (`job.yaml`, `POST /v1/jobs` `spec`, `SubmitJob.spec`).'));
  out.set('RecordedEvent', jsonSchema(RecordedEventEnvelope, 'RecordedEvent', `Any event on \`${SUBJECT_PREFIX.event}.*\`; check \`data\` with the file named by \`type\`.`));
  out.set('FolderManifest', jsonSchema(FolderManifest, 'FolderManifest', 'The manifest blob that addresses a folder input.'));
  out.set('DeadLetter', jsonSchema(DeadLetter, 'DeadLetter', `A message a consumer gave up on, on \`${SUBJECT_PREFIX.deadLetter}.<consumer>\`.`));
  out.set('LogLine', jsonSchema(LogLine, 'LogLine', `One line of a job's output, on \`${SUBJECT_PREFIX.logs}.<team>.<jobId>.<nodeId>\` (stream ${STREAMS.logs.name}).`));
  out.set('NodeHeartbeat.message', jsonSchema(Events.NodeHeartbeat.schema, 'NodeHeartbeat.message', `An agent's heartbeat on \`${SUBJECT_PREFIX.heartbeat}.<nodeId>\` (core NATS, not stored): the data of a NodeHeartbeat.`));
  out.set('NodeReport', jsonSchema(NodeReport, 'NodeReport', 'A node\'s signed observation, on `gpunet.report.<nodeId>.event`.'));
  out.set('NodeReport.reply', jsonSchema(replyEnvelope(NodeReportReply), 'NodeReport.reply', 'Reply to NodeReport.'));
  out.set('NodeOutputsReport', jsonSchema(NodeOutputsReport, 'NodeOutputsReport', 'A node\'s signed outputs of one attempt, on `gpunet.report.<nodeId>.outputs`.'));
  out.set('NodeOutputsReport.reply', jsonSchema(replyEnvelope(Commands.StoreOutputs.replySchema), 'NodeOutputsReport.reply', 'Reply to NodeOutputsReport: what storage recorded.'));
  out.set('StageForNode', jsonSchema(StageForNode, 'StageForNode', 'A node asks storage to copy blobs of an attempt placed on it into its own bucket, on `gpunet.data.<nodeId>.stage`.'));
  out.set('StageForNode.reply', jsonSchema(replyEnvelope(StageForNodeReply), 'StageForNode.reply', 'Reply to StageForNode: what is now in the node\'s bucket.'));
  out.set('CheckpointFromNode', jsonSchema(CheckpointFromNode, 'CheckpointFromNode', 'A node asks storage to take a checkpoint from its bucket into the team\'s, on `gpunet.data.<nodeId>.checkpoint`.'));
  out.set('CheckpointFromNode.reply', jsonSchema(replyEnvelope(CheckpointFromNodeReply), 'CheckpointFromNode.reply', 'Reply to CheckpointFromNode: what storage took into the team\'s bucket.'));
  out.set('ReadForNode', jsonSchema(ReadForNode, 'ReadForNode', 'A node reads one chunk of a blob of an attempt placed on it through storage, on `gpunet.data.<nodeId>.read`.'));
  out.set('ReadForNode.reply', jsonSchema(replyEnvelope(ReadForNodeReply), 'ReadForNode.reply', 'Storage\'s own reply to ReadForNode: `{ ok: true, data: { end: true } }` (a blob with no bytes) or `{ ok: false, error }` (refused: `node_data_refused`, `validation_failed`, `not_found`). A chunk comes instead from nats-server as raw bytes with the `ReadChunkHeaders`.'));
  out.set('BlobObjectRecord', jsonSchema(BlobObjectRecord, 'BlobObjectRecord', `The Object Store record of a blob, on \`$O.${BLOB_BUCKET_PREFIX}-<team>.M.<base64url(name)>\`.`));
  out.set('FeedEntry', jsonSchema(FeedEntry, 'FeedEntry', `One entry of a team's feed: an SSE \`data\` of \`GET /v1/feed\`, a \`ReadFeed\` reply entry, a notification on \`${SUBJECT_PREFIX.feed}.<team>.<jobId>\`.`));
  return out;
}

function replyName(def: MessageDefinition): string {
  return `${def.name}.reply`;
}

/**
 * zod spells out calendar rules (leap years, month lengths) in every date-time pattern, which
 * would repeat a 300-character regex hundreds of times. `format: date-time` already checks the
 * calendar; the short pattern keeps what the format does not say: UTC `Z`, or an explicit offset.
 */
const DATE_TIME_PATTERN = {
  utc: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(?:\\.\\d+)?Z$',
  offset: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(?:\\.\\d+)?(?:Z|[+-]\\d{2}:\\d{2})$',
};

function shortenDateTimePattern(ctx: { jsonSchema: JsonObject }): void {
  const js = ctx.jsonSchema;
  if (js.format !== 'date-time' || typeof js.pattern !== 'string') return;
  js.pattern = js.pattern.includes('[+-]') ? DATE_TIME_PATTERN.offset : DATE_TIME_PATTERN.utc;
}

function jsonSchema(schema: z.ZodType, title: string, description: string, version?: number): JsonObject {
  const { $schema, ...body } = z.toJSONSchema(schema, {
    target: 'draft-07',
    io: 'input',
    unrepresentable: 'throw',
    override: shortenDateTimePattern,
  }) as JsonObject;
  return {
    $schema,
    $id: `urn:gpunet:contracts:${title}${version === undefined ? '' : `:v${version}`}`,
    $comment: GENERATED_NOTE,
    title,
    ...body,
    description,
  };
}

// ── AsyncAPI 3.0 ───────────────────────────────────────────────────────────────────────────

/** Inside the AsyncAPI document schemas are components; file-level keywords stay in the files. */
function asComponent(schema: JsonObject): JsonObject {
  const { $schema: _s, $id: _i, $comment: _c, ...rest } = schema;
  return rest;
}

/**
 * AsyncAPI parameters replace `*` tokens: `gpunet.qry.*.Health` → `gpunet.qry.{service}.Health`,
 * `gpunet.evt.JobFinished.*.*` → `gpunet.evt.JobFinished.{team}.{jobId}`.
 */
function channelAddress(def: MessageDefinition): string {
  if (def.kind === 'event') return def.subject.replace(/\.\*\.\*$/, '.{team}.{jobId}');
  return def.kind === 'query' && def.service === EVERY_SERVICE ? def.subject.replace(`.${EVERY_SERVICE}.`, '.{service}.') : def.subject;
}

/** The parameters of an event channel's address. */
const EVENT_CHANNEL_PARAMETERS = {
  team: { description: `The team the event concerns (its \`metadata.team\`), or \`${NO_SCOPE}\` when it concerns none.` },
  jobId: { description: `The job the event concerns (its \`metadata.jobId\`), or \`${NO_SCOPE}\` when it concerns none.` },
};

/** …and of a partitioned network's event channel (decision 0030). */
const EVENT_CHANNEL_PARAMETERS_PARTITIONED = {
  ...EVENT_CHANNEL_PARAMETERS,
  partition: { description: 'FNV-1a (32 bit) of the job id\'s UTF-8 bytes modulo the topology\'s `eventPartitions` (`eventPartition` in contracts/subjects.ts); `0` for an event of no job.' },
};

const ref = (path: string) => ({ $ref: `#/${path}` });

/** Intake's public API: its commands and queries take the team's API key in `Authorization`. */
function takesApiKey(def: MessageDefinition): boolean {
  return (def.kind === 'command' && def.handler === 'intake') || (def.kind === 'query' && def.service === 'intake');
}

/** A channel with one message, its operation (and reply), added to the document being built. */
interface ChannelSpec {
  /** Channel, message and operation key. */
  key: string;
  address: string;
  description: string;
  parameters?: JsonObject;
  message: { name: string; summary: string; payload: JsonObject; headers?: string; contentType?: string; tags: string[]; version?: number; correlation?: boolean };
  action: 'send' | 'receive';
  summary: string;
  operationDescription?: string;
  /** `binaryWhen`: a reply carrying this header is raw bytes (`x-binary-when-header`), others JSON. */
  reply?: { name: string; summary: string; payload: string; version?: number; headers?: string; description?: string; binaryWhen?: string };
  security?: string[];
}

function asyncApiDocument(schemas: Map<string, JsonObject>): JsonObject {
  const channels: JsonObject = {};
  const operations: JsonObject = {};
  const messages: JsonObject = {};
  const components: JsonObject = {};
  for (const [name, schema] of schemas) components[name] = asComponent(schema); // component keys allow `.`: `GetJob.reply`
  Object.assign(components, headerSchemas());

  const add = (c: ChannelSpec): void => {
    const m = c.message;
    messages[m.name] = {
      name: m.name,
      title: m.name,
      summary: m.summary,
      contentType: m.contentType ?? 'application/json',
      ...(m.headers ? { headers: ref(`components/schemas/${m.headers}`) } : {}),
      payload: m.payload,
      ...(m.correlation ? { correlationId: { location: `$message.header#/${HEADERS.correlationId}` } } : {}),
      tags: m.tags.map((name) => ({ name })),
      ...(m.version !== undefined ? { 'x-schema-version': m.version } : {}),
    };
    channels[c.key] = {
      address: c.address,
      description: c.description,
      ...(c.parameters ? { parameters: c.parameters } : {}),
      messages: { [m.name]: ref(`components/messages/${m.name}`) },
    };
    const operation: JsonObject = {
      action: c.action,
      channel: ref(`channels/${c.key}`),
      summary: c.summary,
      ...(c.operationDescription ? { description: c.operationDescription } : {}),
      ...(c.security ? { security: c.security.map((name) => ref(`components/securitySchemes/${name}`)) } : {}),
      messages: [ref(`channels/${c.key}/messages/${m.name}`)],
    };
    if (c.reply) {
      const r = c.reply;
      messages[r.name] = {
        name: r.name,
        title: r.name,
        summary: r.summary,
        ...(r.description ? { description: r.description } : {}),
        contentType: 'application/json',
        ...(r.binaryWhen ? { 'x-binary-when-header': r.binaryWhen } : {}),
        headers: ref(`components/schemas/${r.headers ?? 'ReplyHeaders'}`),
        payload: ref(`components/schemas/${r.payload}`),
        tags: [{ name: 'reply' }],
        ...(r.version !== undefined ? { 'x-schema-version': r.version } : {}),
      };
      channels[r.name] = {
        address: null,
        description: `The requester's NATS inbox (reply subject) for ${c.key}.`,
        messages: { [r.name]: ref(`components/messages/${r.name}`) },
      };
      operation.reply = { channel: ref(`channels/${r.name}`), messages: [ref(`channels/${r.name}/messages/${r.name}`)] };
    }
    operations[`${c.action}${c.key}`] = operation;
  };

  for (const def of MESSAGES) {
    if (def.kind === 'event') {
      add({
        key: def.name,
        address: channelAddress(def),
        description: def.description,
        parameters: EVENT_CHANNEL_PARAMETERS,
        message: { name: def.name, summary: def.description, payload: ref(`components/schemas/${def.name}`), headers: 'EventHeaders', tags: ['event'], version: def.version, correlation: true },
        action: 'send',
        summary: `Publish ${def.name} on stream ${STREAMS.events.name}.`,
        operationDescription: `Appended to the event store by ${def.producers.join(', ')}, then published by the outbox relay with \`${HEADERS.msgId}\` = eventId.`,
      });
      // The same event on a network whose events are split into partitions (decision 0030).
      add({
        key: `${def.name}Partitioned`,
        address: `${channelAddress(def)}.{partition}`,
        description: `${def.name} on a network with \`eventPartitions\` N > 1 in its topology: the subject ends in the event's partition.`,
        parameters: EVENT_CHANNEL_PARAMETERS_PARTITIONED,
        message: { name: def.name, summary: def.description, payload: ref(`components/schemas/${def.name}`), headers: 'EventHeaders', tags: ['event'], version: def.version, correlation: true },
        action: 'send',
        summary: `Publish ${def.name} on stream ${STREAMS.events.name}, partitioned.`,
        operationDescription: `As ${def.name}; a partitioned consumer filters \`gpunet.evt.*.*.*.<partition>\`.`,
      });
      continue;
    }
    const answeredBy = def.kind === 'command' ? def.handler : def.service === EVERY_SERVICE ? 'every service' : def.service;
    add({
      key: def.name,
      address: channelAddress(def),
      description: def.description,
      ...(def.kind === 'query' && def.service === EVERY_SERVICE ? { parameters: { service: { enum: [...SERVICE_NAMES], description: 'The service asked.' } } } : {}),
      message: { name: def.name, summary: def.description, payload: ref(`components/schemas/${def.name}`), headers: 'RequestHeaders', tags: [def.kind], version: def.version, correlation: true },
      action: 'receive',
      summary: `${def.kind === 'command' ? 'Command' : 'Query'} ${def.name}, answered by ${answeredBy} (request/reply).`,
      ...(takesApiKey(def)
        ? { security: ['apiKey'], operationDescription: `Public: send the team's API key in \`${HEADERS.authorization}\`.` }
        : { operationDescription: 'Internal: nats-server lets only intake (with a `principal` from the caller\'s key) and the operator send it (deploy/nats-permissions.yaml).' }),
      reply: { name: `${def.name}Reply`, summary: `Reply to ${def.name}: \`{ ok: true, data }\` or \`{ ok: false, error }\`.`, payload: replyName(def), version: def.version },
    });
  }

  add({
    key: 'TeamFeed',
    address: `${SUBJECT_PREFIX.feed}.{team}.{jobId}`,
    description: `The team feed's notifications: intake's word that team \`team\`'s job \`jobId\` has a new entry (core NATS, not stored). A team's identity may subscribe to \`${SUBJECT_PREFIX.feed}.<team>.>\` only. Read the entries from any position with the ReadFeed query (or \`GET /v1/feed\`, SSE with \`Last-Event-ID\`); resume after the last \`position\` seen.`,
    parameters: { team: { description: 'The team the job belongs to.' }, jobId: { description: 'The job.' } },
    message: { name: 'FeedNotification', summary: 'One new entry of a team\'s feed.', payload: ref('components/schemas/FeedEntry'), headers: 'FeedHeaders', tags: ['feed'], correlation: true },
    action: 'send',
    summary: 'Intake announces each new entry of a team\'s feed.',
  });
  add({
    key: 'JobLogs',
    address: `${SUBJECT_PREFIX.logs}.{team}.{jobId}.{nodeId}`,
    description: `Log lines of a job's runs, in JetStream stream ${STREAMS.logs.name} (kept for a while; stored with the outputs at the end). A team's identity may subscribe to \`${SUBJECT_PREFIX.logs}.<team>.>\` (live lines); earlier lines: \`GET /v1/jobs/{jobId}/logs\` or \`gpunet logs\`, which keep only lines from a node the line's attempt was placed on (a node may publish only subjects naming itself; decision 0025).`,
    parameters: { team: { description: 'The team the job belongs to.' }, jobId: { description: 'The job.' }, nodeId: { description: 'The node that ran the lines.' } },
    message: { name: 'LogLine', summary: 'One line of a job\'s output.', payload: ref('components/schemas/LogLine'), headers: 'PlainHeaders', tags: ['logs'] },
    action: 'send',
    summary: `The node agent running the job publishes its lines on stream ${STREAMS.logs.name}.`,
  });
  add({
    key: 'BlobChunks',
    address: `$O.${BLOB_BUCKET_PREFIX}-{team}.C.{nuid}`,
    description: `The bytes of a team's blobs (JetStream Object Store, bucket \`${BLOB_BUCKET_PREFIX}-<team>\`, stream \`OBJ_${BLOB_BUCKET_PREFIX}-<team>\`): one message per chunk, in order. Object names are \`<team>/<sha256>\`: content-addressed and team-scoped. Upload: JetStream-publish the chunks in order, then the record (BlobRecords); skip an object whose record is already there. Download without a consumer (a team may not make one): the record by a direct get (\`$JS.API.DIRECT.GET.OBJ_${BLOB_BUCKET_PREFIX}-<team>\` with \`last_by_subj\` = the record's subject), then its chunks by direct gets \`{ seq, next_by_subj: "$O.${BLOB_BUCKET_PREFIX}-<team>.C.<nuid>" }\`, each from the last one's sequence + 1, and check the sha256. Outputs are downloadable over HTTP too (\`GET /v1/jobs/{jobId}/outputs/{path}\`). A team's identity may use its own bucket only; any Object Store client that reads by direct get works.`,
    parameters: { team: { description: 'The team that owns the blob.' }, nuid: { description: 'The object\'s chunk id (the record\'s `nuid`).' } },
    message: { name: 'BlobChunk', summary: 'One chunk of a blob\'s bytes (at most the record\'s `options.max_chunk_size`).', payload: { type: 'string', format: 'binary', description: 'Raw bytes.' }, contentType: 'application/octet-stream', headers: 'BlobChunkHeaders', tags: ['blobs'] },
    action: 'receive',
    summary: 'Store a chunk of a blob (producers, storage, node agents).',
  });
  add({
    key: 'BlobRecords',
    address: `$O.${BLOB_BUCKET_PREFIX}-{team}.M.{name}`,
    description: 'The record of a team\'s blob, written after its chunks (an object exists once its record does); `name` is the padded base64url of the object name `<team>/<sha256>`.',
    parameters: { team: { description: 'The team that owns the blob.' }, name: { description: 'Padded base64url of `<team>/<sha256>`.' } },
    message: { name: 'BlobRecord', summary: 'The Object Store record of a blob.', payload: ref('components/schemas/BlobObjectRecord'), headers: 'BlobRecordHeaders', tags: ['blobs'] },
    action: 'receive',
    summary: 'Record a blob once its chunks are stored (or mark it deleted).',
  });
  add({
    key: 'DeadLetters',
    address: `${SUBJECT_PREFIX.deadLetter}.{consumer}`,
    description: `Dead letters of one durable consumer, in stream ${STREAMS.deadLetters.name}.`,
    parameters: { consumer: { description: 'Name of the durable consumer that gave up.' } },
    message: { name: 'DeadLetter', summary: 'A message a consumer gave up on, with the reason.', payload: ref('components/schemas/DeadLetter'), headers: 'DeadLetterHeaders', tags: ['dead-letter'] },
    action: 'send',
    summary: `Publish a dead letter on stream ${STREAMS.deadLetters.name}.`,
  });
  add({
    key: 'NodeHeartbeats',
    address: `${SUBJECT_PREFIX.heartbeat}.{nodeId}`,
    description: 'Internal: an execution node\'s heartbeats (core NATS, not stored), read by placement.',
    parameters: { nodeId: { description: 'The node.' } },
    message: { name: 'NodeHeartbeatMessage', summary: 'A node\'s heartbeat.', payload: ref('components/schemas/NodeHeartbeat.message'), headers: 'PlainHeaders', tags: ['node'] },
    action: 'receive',
    summary: 'Placement takes each node\'s heartbeats.',
  });
  add({
    key: 'NodeReports',
    address: `${SUBJECT_ROOT_TOKEN}.report.{nodeId}.event`,
    description: 'Internal: a node\'s signed observation, checked and recorded by the execution recorder.',
    parameters: { nodeId: { description: 'The node (its NKey may publish its own reports only).' } },
    message: { name: 'NodeReport', summary: 'A node\'s signed observation.', payload: ref('components/schemas/NodeReport'), headers: 'RequestHeaders', tags: ['node'], correlation: true },
    action: 'receive',
    summary: 'The recorder checks and records a node\'s report (request/reply).',
    reply: { name: 'NodeReportReply', summary: 'Whether the report was recorded.', payload: 'NodeReport.reply' },
  });
  add({
    key: 'NodeOutputsReports',
    address: `${SUBJECT_ROOT_TOKEN}.report.{nodeId}.outputs`,
    description: 'Internal: a node\'s signed outputs of one attempt, checked by the recorder and handed to storage.',
    parameters: { nodeId: { description: 'The node.' } },
    message: { name: 'NodeOutputsReport', summary: 'A node\'s signed outputs.', payload: ref('components/schemas/NodeOutputsReport'), headers: 'RequestHeaders', tags: ['node'], correlation: true },
    action: 'receive',
    summary: 'The recorder checks a node\'s outputs and asks storage to record them (request/reply).',
    reply: { name: 'NodeOutputsReportReply', summary: 'What storage recorded.', payload: 'NodeOutputsReport.reply' },
  });
  add({
    key: 'NodeBucketChunks',
    address: `$O.${NODE_BUCKET_PREFIX}-{nodeId}.C.{nuid}`,
    description: `Internal: the bytes of blobs in an execution node's own bucket (\`${NODE_BUCKET_PREFIX}-<nodeId>\`; decision 0025), object names \`<team>/<sha256>\`. Only that node and storage may use it: storage copies an attempt's inputs and checkpoints in, the node writes its outputs and checkpoints there for storage to take into the team's bucket.`,
    parameters: { nodeId: { description: 'The node.' }, nuid: { description: 'The object\'s chunk id.' } },
    message: { name: 'NodeBucketChunk', summary: 'One chunk of a blob in a node\'s bucket.', payload: { type: 'string', format: 'binary', description: 'Raw bytes.' }, contentType: 'application/octet-stream', headers: 'BlobChunkHeaders', tags: ['node', 'blobs'] },
    action: 'receive',
    summary: 'Store a chunk of a blob in a node\'s bucket (the node, storage).',
  });
  add({
    key: 'NodeBucketRecords',
    address: `$O.${NODE_BUCKET_PREFIX}-{nodeId}.M.{name}`,
    description: 'Internal: the record of a blob in a node\'s own bucket; `name` is the padded base64url of `<team>/<sha256>`.',
    parameters: { nodeId: { description: 'The node.' }, name: { description: 'Padded base64url of `<team>/<sha256>`.' } },
    message: { name: 'NodeBucketRecord', summary: 'The Object Store record of a blob in a node\'s bucket.', payload: ref('components/schemas/BlobObjectRecord'), headers: 'BlobRecordHeaders', tags: ['node', 'blobs'] },
    action: 'receive',
    summary: 'Record a blob in a node\'s bucket once its chunks are stored (or mark it deleted).',
  });
  add({
    key: 'NodeDataStage',
    address: `${SUBJECT_ROOT_TOKEN}.data.{nodeId}.stage`,
    description: 'Internal: a node asks storage to copy an attempt\'s inputs or checkpoint into its own bucket; storage checks the store first (placed on this node, not released, the job\'s blobs).',
    parameters: { nodeId: { description: 'The node (only its NKey may publish here).' } },
    message: { name: 'StageForNode', summary: 'Blobs of an attempt to put into the node\'s bucket.', payload: ref('components/schemas/StageForNode'), headers: 'RequestHeaders', tags: ['node'], correlation: true },
    action: 'receive',
    summary: 'Storage stages blobs into a node\'s bucket (request/reply).',
    reply: { name: 'StageForNodeReply', summary: 'What is now in the node\'s bucket.', payload: 'StageForNode.reply' },
  });
  add({
    key: 'NodeDataCheckpoint',
    address: `${SUBJECT_ROOT_TOKEN}.data.{nodeId}.checkpoint`,
    description: 'Internal: a node asks storage to take a checkpoint it wrote into its own bucket into the team\'s (verified), before it reports JobCheckpointed.',
    parameters: { nodeId: { description: 'The node (only its NKey may publish here).' } },
    message: { name: 'CheckpointFromNode', summary: 'A checkpoint to take into the team\'s bucket.', payload: ref('components/schemas/CheckpointFromNode'), headers: 'RequestHeaders', tags: ['node'], correlation: true },
    action: 'receive',
    summary: 'Storage takes a checkpoint from a node\'s bucket (request/reply).',
    reply: { name: 'CheckpointFromNodeReply', summary: 'What storage took.', payload: 'CheckpointFromNode.reply' },
  });
  add({
    key: 'NodeDataRead',
    address: `${SUBJECT_ROOT_TOKEN}.data.{nodeId}.read`,
    description: 'Internal: a node reads one chunk of an input (or restored checkpoint) of an attempt placed on it; storage checks as for `stage` (placed on this node, not released, the job\'s blob) and answers with the blob\'s next chunk at or after `seq` from the team\'s bucket, by a direct get restricted to that blob\'s chunk subject (decision 0036). The node verifies the whole blob\'s sha256 and size.',
    parameters: { nodeId: { description: 'The node (only its NKey may publish here).' } },
    message: { name: 'ReadForNode', summary: 'A chunk of a blob of an attempt to read.', payload: ref('components/schemas/ReadForNode'), headers: 'RequestHeaders', tags: ['node', 'blobs'], correlation: true },
    action: 'receive',
    summary: 'Storage reads a chunk of a team\'s blob for a node (request/reply).',
    reply: {
      name: 'ReadForNodeReply',
      summary: 'The chunk (nats-server\'s direct get reply: raw bytes, `ReadChunkHeaders`), or storage\'s JSON reply envelope when the read is refused.',
      description: 'A chunk: `application/octet-stream` with `Nats-Sequence` set; status 404 (no body): no chunk of the blob at or after `seq`. Without either, the body is the JSON envelope `ReadForNode.reply`.',
      payload: 'ReadForNode.reply',
      headers: 'ReadChunkHeaders',
      binaryWhen: 'Nats-Sequence',
    },
  });
  add({
    key: 'NodeWork',
    address: `${SUBJECT_ROOT_TOKEN}.work.{nodeId}.{type}`,
    description: `Internal: copies of recorded events a node must act on, in stream ${WORK_STREAM}; one durable consumer per node on its own subjects.`,
    parameters: { nodeId: { description: 'The node.' }, type: { description: 'The event type.' } },
    message: { name: 'NodeWorkEvent', summary: 'A recorded event, as on the event subjects.', payload: ref('components/schemas/RecordedEvent'), headers: 'EventHeaders', tags: ['node'], correlation: true },
    action: 'send',
    summary: `The recorder copies each node's work onto stream ${WORK_STREAM}.`,
  });

  return {
    asyncapi: '3.0.0',
    id: 'urn:gpunet:contracts',
    info: {
      title: 'gpunet',
      version: CONTRACTS_VERSION,
      description:
        'Messages of gpunet, the network that rents GPU compute for batch jobs, described from gpunet\'s side: ' +
        'it sends events (JetStream stream ' +
        `${STREAMS.events.name}, subjects ${STREAMS.events.subjects.join(', ')}) and receives commands and queries by NATS request/reply. ` +
        'A client does the opposite: subscribes to events, sends requests. ' +
        `Each message object states its schema version in \`x-schema-version\`; on the wire it travels in the \`${HEADERS.schemaVersion}\` header, and a version a message does not accept is refused (\`unsupported_schema_version\`, naming the versions accepted). ` +
        'A producer team uses: the intake commands and queries (API key in `Authorization`), its feed (TeamFeed + ReadFeed), its jobs\' logs (JobLogs), its bucket (BlobChunks, BlobRecords). ' +
        'Channels marked internal are the control plane\'s and the nodes\', listed so that everything on the bus is described. ' +
        GENERATED_NOTE,
      license: { name: 'Apache-2.0' },
    },
    defaultContentType: 'application/json',
    servers: {
      nats: {
        host: '{host}:{port}',
        protocol: 'nats',
        description:
          'A gpunet network\'s nats-server (JetStream enabled). `gpunet up` picks a free port: take `natsUrl` from its `--json` output or from `<data-dir>/state.json`. Every connection authenticates with an NKey (natsNkey).',
        variables: {
          host: { default: 'localhost', description: 'Host of the nats-server.' },
          port: { default: '4222', description: 'Port of the nats-server (`gpunet up`: the one it picked).' },
        },
        security: [ref('components/securitySchemes/natsNkey')],
      },
      http: {
        host: '{host}:{port}',
        protocol: 'http',
        description: 'Intake\'s HTTP API, the same commands and queries (OpenAPI at `/openapi.json`), the team feed as SSE (`GET /v1/feed`) and resumable uploads (tus, `/v1/uploads`). `gpunet up` prints its `url`.',
        variables: {
          host: { default: 'localhost', description: 'Host of intake.' },
          port: { default: '8080', description: 'Port of intake\'s HTTP API (`gpunet up`: the one it picked).' },
        },
        security: [ref('components/securitySchemes/apiKey')],
      },
    },
    channels,
    operations,
    components: {
      schemas: components,
      messages,
      securitySchemes: {
        natsNkey: {
          type: 'asymmetricEncryption',
          description:
            'Every NATS connection authenticates with its own NKey (ed25519; decision 0014): the server sends a nonce, the client signs it with its seed (nats.js `nkeyAuthenticator`, nats.py `nkeys_seed`, the `nats` CLI `--nkey`). ' +
            'A team\'s identity is `team-<team>`: `gpunet up --team <team>` (or the operator) writes its seed to `<data-dir>/keys/team-<team>.nk` and admits its public key. ' +
            'nats-server then allows it exactly what deploy/nats-permissions.yaml gives a team, nothing else: publish the intake commands and queries, its own bucket (`$O.gpunet-blobs-<team>.>` and its stream\'s read APIs); ' +
            'subscribe to `gpunet.feed.<team>.>`, `gpunet.logs.<team>.>` and its own reply inbox `_INBOX_team-<team>.>` (set the client\'s inbox prefix to `_INBOX_team-<team>`; the shared `_INBOX.>` is denied). ' +
            'The connection says who is on the bus; which team a request acts for is said by the API key (apiKey).',
        },
        apiKey: {
          type: 'httpApiKey',
          name: HEADERS.authorization,
          in: 'header',
          description:
            `\`${HEADERS.authorization}: Bearer <team API key>\` on every HTTP request and on every NATS command and query to intake (a message header). ` +
            'The key names the team and the role (producer, billing, admin, operator); the team is never taken from a message body. `gpunet up` prints the local team\'s key; admins issue more (`gpunet keys create`, CreateApiKey).',
        },
      },
    },
  };
}

/** Root token, for the internal subjects built outside `SUBJECT_PREFIX` (reports, work). */
const SUBJECT_ROOT_TOKEN = SUBJECT_PREFIX.event.split('.')[0]!;

function header(description: string, extra: JsonObject = {}): JsonObject {
  return { type: 'string', description, ...extra };
}

const DECIMAL_VERSION = { pattern: '^[1-9][0-9]*$' };

/**
 * W3C trace context (https://www.w3.org/TR/trace-context/), sent on every kind of message only
 * when the sender has tracing configured: never required.
 */
function traceHeaders(): JsonObject {
  return {
    traceparent: header('W3C trace context: `00-<trace id>-<span id>-<flags>`. Sent only when tracing is configured.', { pattern: '^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$' }),
    tracestate: header('W3C trace state, vendor entries. Sent only when tracing is configured.'),
  };
}

/**
 * The headers of every kind of message. Closed (`additionalProperties: false`): a header not
 * listed here is not sent, so the bus tap of the e2e suite fails on one that is.
 */
function headerSchemas(): Record<string, JsonObject> {
  const closed = (description: string, properties: JsonObject, required: string[] = []): JsonObject => ({
    type: 'object',
    description,
    properties: { ...properties, ...traceHeaders() },
    ...(required.length > 0 ? { required } : {}),
    additionalProperties: false,
  });
  return {
    EventHeaders: closed(
      'Headers the outbox relay (and the recorder\'s copies to nodes) sets on every event; all but the job id always.',
      {
        [HEADERS.msgId]: header('The eventId: JetStream drops a re-published duplicate.'),
        [HEADERS.type]: header('Event type, e.g. `JobFinished`.'),
        [HEADERS.jobId]: header('metadata.jobId, when the event concerns a job.'),
        [HEADERS.correlationId]: header('metadata.correlationId.'),
        [HEADERS.causationId]: header('metadata.causationId: the event or request that directly caused this one.'),
        [HEADERS.schemaVersion]: header('Schema version of data (metadata.schemaVersion, 1 when absent), decimal. Consumers refuse one they do not accept (dead letter `unsupported_schema_version`).', DECIMAL_VERSION),
      },
      [HEADERS.msgId, HEADERS.type, HEADERS.correlationId, HEADERS.causationId, HEADERS.schemaVersion],
    ),
    RequestHeaders: closed('Headers a requester may set on commands and queries; none is required by the bus (intake requires `Authorization`).', {
      [HEADERS.authorization]: header('`Bearer <team API key>`; required by intake\'s commands and queries.', { pattern: '^Bearer .+$' }),
      [HEADERS.idempotencyKey]: header('SubmitJob only: same meaning as the payload\'s idempotencyKey.'),
      [HEADERS.deadlinePolicy]: header('SubmitJob only: `reject` (default) refuses a deadline the current plan cannot meet; `warn` accepts it with a warning in the reply.', { enum: ['reject', 'warn'] }),
      [HEADERS.correlationId]: header('Carried into every event the request causes; a new one is made when absent.'),
      [HEADERS.jobId]: header('The job the request concerns, for the answering side\'s logs.'),
      [HEADERS.schemaVersion]: header(`Schema version of the request, decimal; absent means the current one. A version the message does not accept is refused with \`unsupported_schema_version\`, naming the versions accepted.`, DECIMAL_VERSION),
    }),
    ReplyHeaders: closed('Replies carry no headers of their own.', {}),
    FeedHeaders: closed(
      'Headers of a team feed notification; always all three.',
      {
        [HEADERS.type]: header('The entry\'s event type.'),
        [HEADERS.jobId]: header('The job.'),
        [HEADERS.correlationId]: header('The entry\'s correlationId.'),
      },
      [HEADERS.type, HEADERS.jobId, HEADERS.correlationId],
    ),
    DeadLetterHeaders: closed(
      'Headers of a dead letter.',
      {
        'Gpunet-Dead-Letter-Reason': header('The dead letter\'s `reason`.', { enum: [...DeadLetter.shape.reason.options] }),
        [HEADERS.msgId]: header('`dlq:<consumer>:<stream>:<sequence>`: the same message is dead-lettered once.'),
        [HEADERS.type]: header('The event type, when known.'),
        [HEADERS.jobId]: header('The job, when known.'),
        [HEADERS.correlationId]: header('The correlation id, when known.'),
      },
      ['Gpunet-Dead-Letter-Reason'],
    ),
    PlainHeaders: closed('No headers besides trace context.', {}),
    BlobChunkHeaders: closed('Headers of a blob chunk: gpunet\'s writer sets the index (a resumed upload compares the last stored chunk\'s bytes with the file\'s); other Object Store clients none.', {
      [CHUNK_INDEX_HEADER]: header('0-based index of the chunk in its object.', { pattern: '^(0|[1-9][0-9]*)$' }),
      [CHUNK_SHA256_HEADER]: header('Hex sha256 of the chunk\'s bytes, on chunks uploaded by earlier versions of gpunet\'s writer; no longer written, and not read.', { pattern: '^[0-9a-f]{64}$' }),
    }),
    ReadChunkHeaders: closed('Headers of the answer to ReadForNode: nats-server\'s direct get reply carries the chunk\'s stream, sequence, subject and time and the headers it was stored with; storage\'s JSON reply envelope carries none.', {
      'Nats-Stream': header('The team\'s bucket stream, `OBJ_gpunet-blobs-<team>`.'),
      'Nats-Sequence': header('Stream sequence of the chunk: the next read asks for one more.', { pattern: '^[1-9][0-9]*$' }),
      'Nats-Subject': header('The blob\'s chunk subject, `$O.gpunet-blobs-<team>.C.<nuid>`.'),
      'Nats-Time-Stamp': header('When the chunk was stored.'),
      [CHUNK_INDEX_HEADER]: header('0-based index of the chunk in its object, when its writer stored one.', { pattern: '^(0|[1-9][0-9]*)$' }),
      [CHUNK_SHA256_HEADER]: header('Hex sha256 of the chunk\'s bytes, on chunks uploaded by earlier versions of gpunet\'s writer.', { pattern: '^[0-9a-f]{64}$' }),
    }),
    BlobRecordHeaders: closed('Headers of a blob record (the Object Store\'s).', {
      'Nats-Rollup': header('`sub`: the record replaces the earlier ones of its subject.', { enum: ['sub'] }),
      'Nats-Expected-Last-Subject-Sequence': header('Optimistic concurrency of the Object Store client, when it sets it.', { pattern: '^[0-9]+$' }),
    }),
    ErrorCodes: {
      type: 'string',
      description: `Every error code gpunet answers with (contracts/error-codes.ts); \`error.code\` of a reply, an HTTP error or a dead letter. New codes may be added.`,
      enum: [...REPLY_ERROR_CODES],
      'x-descriptions': { ...ERROR_CODES },
    },
  };
}
