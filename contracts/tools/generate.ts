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
  DeadLetter,
  FeedEntry,
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

const ref = (path: string) => ({ $ref: `#/${path}` });

function asyncApiDocument(schemas: Map<string, JsonObject>): JsonObject {
  const channels: JsonObject = {};
  const operations: JsonObject = {};
  const messages: JsonObject = {};
  const components: JsonObject = {};
  for (const [name, schema] of schemas) components[name] = asComponent(schema); // component keys allow `.`: `GetJob.reply`
  components.EventHeaders = eventHeaders();
  components.RequestHeaders = requestHeaders();

  for (const def of MESSAGES) {
    const isEvent = def.kind === 'event';
    messages[def.name] = {
      name: def.name,
      title: def.name,
      summary: def.description,
      contentType: 'application/json',
      headers: ref(`components/schemas/${isEvent ? 'EventHeaders' : 'RequestHeaders'}`),
      payload: ref(`components/schemas/${def.name}`),
      correlationId: { location: `$message.header#/${HEADERS.correlationId}` },
      tags: [{ name: def.kind }],
      'x-schema-version': def.version,
    };
    const channel: JsonObject = {
      address: channelAddress(def),
      description: def.description,
      messages: { [def.name]: ref(`components/messages/${def.name}`) },
    };
    if (isEvent) channel.parameters = EVENT_CHANNEL_PARAMETERS;
    if (def.kind === 'query' && def.service === EVERY_SERVICE) {
      channel.parameters = { service: { enum: [...SERVICE_NAMES], description: 'The service asked.' } };
    }
    channels[def.name] = channel;

    if (isEvent) {
      operations[`send${def.name}`] = {
        action: 'send',
        channel: ref(`channels/${def.name}`),
        summary: `Publish ${def.name} on stream ${STREAMS.events.name}.`,
        description: `Appended to the event store by ${def.producers.join(', ')}, then published by the outbox relay with \`${HEADERS.msgId}\` = eventId.`,
        messages: [ref(`channels/${def.name}/messages/${def.name}`)],
      };
      continue;
    }

    const reply = `${def.name}Reply`;
    messages[reply] = {
      name: reply,
      title: reply,
      summary: `Reply to ${def.name}: \`{ ok: true, data }\` or \`{ ok: false, error }\`.`,
      contentType: 'application/json',
      payload: ref(`components/schemas/${replyName(def)}`),
      tags: [{ name: 'reply' }],
      'x-schema-version': def.version,
    };
    channels[reply] = {
      address: null,
      description: `The requester's NATS inbox (reply subject) for ${def.name}.`,
      messages: { [reply]: ref(`components/messages/${reply}`) },
    };
    const answeredBy = def.kind === 'command' ? def.handler : def.service === EVERY_SERVICE ? 'every service' : def.service;
    operations[`receive${def.name}`] = {
      action: 'receive',
      channel: ref(`channels/${def.name}`),
      summary: `${def.kind === 'command' ? 'Command' : 'Query'} ${def.name}, answered by ${answeredBy} (request/reply).`,
      messages: [ref(`channels/${def.name}/messages/${def.name}`)],
      reply: {
        channel: ref(`channels/${reply}`),
        messages: [ref(`channels/${reply}/messages/${reply}`)],
      },
    };
  }

  messages.DeadLetter = {
    name: 'DeadLetter',
    title: 'DeadLetter',
    summary: 'A message a consumer gave up on, with the reason.',
    contentType: 'application/json',
    payload: ref('components/schemas/DeadLetter'),
    tags: [{ name: 'dead-letter' }],
  };
  channels.DeadLetters = {
    address: `${SUBJECT_PREFIX.deadLetter}.{consumer}`,
    description: `Dead letters of one durable consumer, in stream ${STREAMS.deadLetters.name}.`,
    parameters: { consumer: { description: 'Name of the durable consumer that gave up.' } },
    messages: { DeadLetter: ref('components/messages/DeadLetter') },
  };
  operations.sendDeadLetter = {
    action: 'send',
    channel: ref('channels/DeadLetters'),
    summary: `Publish a dead letter on stream ${STREAMS.deadLetters.name}.`,
    messages: [ref('channels/DeadLetters/messages/DeadLetter')],
  };

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
        'Each message object states its schema version in `x-schema-version`; on the wire it travels in the `Gpunet-Schema-Version` header. ' +
        GENERATED_NOTE,
      license: { name: 'Apache-2.0' },
    },
    defaultContentType: 'application/json',
    servers: {
      local: {
        host: 'localhost:4222',
        protocol: 'nats',
        description: 'A local gpunet network (`gpunet up`); JetStream enabled.',
      },
    },
    channels,
    operations,
    components: { schemas: components, messages },
  };
}

function header(description: string, extra: JsonObject = {}): JsonObject {
  return { type: 'string', description, ...extra };
}

function eventHeaders(): JsonObject {
  return {
    type: 'object',
    description: 'Headers the outbox relay sets on every event.',
    properties: {
      [HEADERS.msgId]: header('The eventId: JetStream drops a re-published duplicate.'),
      [HEADERS.type]: header('Event type, e.g. `JobFinished`.'),
      [HEADERS.jobId]: header('metadata.jobId, when the event concerns a job.'),
      [HEADERS.correlationId]: header('metadata.correlationId.'),
      [HEADERS.causationId]: header('metadata.causationId.'),
      [HEADERS.schemaVersion]: header('Schema version of data, decimal.', { pattern: '^[1-9][0-9]*$' }),
    },
    required: [HEADERS.msgId, HEADERS.type, HEADERS.correlationId, HEADERS.schemaVersion],
  };
}

function requestHeaders(): JsonObject {
  return {
    type: 'object',
    description: 'Headers a requester sets on commands and queries.',
    properties: {
      [HEADERS.authorization]: header('`Bearer <team API key>`; required by intake.', { pattern: '^Bearer .+$' }),
      [HEADERS.idempotencyKey]: header('SubmitJob only: same meaning as the payload\'s idempotencyKey.'),
      [HEADERS.correlationId]: header('Carried into every event the request causes; a new one is made when absent.'),
      [HEADERS.schemaVersion]: header('Schema version of the request, decimal; absent means the current one.', { pattern: '^[1-9][0-9]*$' }),
    },
  };
}
