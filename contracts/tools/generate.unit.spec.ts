import { Parser } from '@asyncapi/parser';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { MESSAGES, REPLY_ERROR_CODES } from '../index.js';
import { generateContractFiles } from './generate.js';
import { generatedDir } from './paths.js';

/** Spectral's severities: 0 error, 1 warning, 2 information, 3 hint. */
const ERROR = 0;

const files = generateContractFiles();
const asyncApiText = files.find((f) => f.path === 'asyncapi.json')!.content;

async function errorsOf(document: string): Promise<string[]> {
  const diagnostics = await new Parser().validate(document);
  return diagnostics.filter((d) => d.severity === ERROR).map((d) => `${d.code}: ${d.message} at ${d.path.join('.')}`);
}

describe('AsyncAPI document', () => {
  it('is a valid AsyncAPI 3.0 document: no diagnostic of error severity', async () => {
    expect(JSON.parse(asyncApiText)).toMatchObject({ asyncapi: '3.0.0' });
    expect(await errorsOf(asyncApiText)).toEqual([]);
  }, 60_000);

  it('would be caught when broken (the check above can fail)', async () => {
    const broken = JSON.parse(asyncApiText) as { operations: Record<string, { channel: unknown }> };
    broken.operations.sendJobFinished!.channel = { $ref: '#/channels/NoSuchChannel' };
    expect((await errorsOf(JSON.stringify(broken))).length).toBeGreaterThan(0);
  }, 60_000);

  it('has a channel at each message subject, with send for events and receive + reply for requests', () => {
    const doc = JSON.parse(asyncApiText) as {
      channels: Record<string, { address: string | null; parameters?: Record<string, unknown> }>;
      operations: Record<string, { action: string; reply?: unknown }>;
    };
    for (const def of MESSAGES) {
      const address = def.kind === 'event' ? def.subject.replace(/\.\*\.\*$/, '.{team}.{jobId}') : def.subject.replace('.*.', '.{service}.');
      expect(doc.channels[def.name]?.address).toBe(address);
      if (def.kind === 'event') expect(Object.keys(doc.channels[def.name]?.parameters ?? {})).toEqual(['team', 'jobId']);
      if (def.kind === 'event') expect(doc.operations[`send${def.name}`]).toMatchObject({ action: 'send' });
      else expect(doc.operations[`receive${def.name}`]).toMatchObject({ action: 'receive', reply: expect.anything() });
    }
  });
});

describe('AsyncAPI document: partitioned event subjects (decision 0030)', () => {
  it('has, for each event, the channel of its partitioned subject with the same message', () => {
    const doc = JSON.parse(asyncApiText) as { channels: Record<string, { address: string | null; parameters?: Record<string, unknown>; messages: Record<string, { $ref: string }> }> };
    for (const def of MESSAGES) {
      if (def.kind !== 'event') continue;
      const channel = doc.channels[`${def.name}Partitioned`];
      expect(channel?.address).toBe(`gpunet.evt.${def.name}.{team}.{jobId}.{partition}`);
      expect(Object.keys(channel?.parameters ?? {})).toEqual(['team', 'jobId', 'partition']);
      expect(channel?.messages).toEqual(doc.channels[def.name]!.messages);
    }
  });
});

describe('AsyncAPI document: what a producer needs besides the messages', () => {
  const doc = JSON.parse(asyncApiText) as {
    servers: Record<string, { host: string; variables?: Record<string, { default: string }>; security?: { $ref: string }[] }>;
    channels: Record<string, { address: string | null }>;
    operations: Record<string, { security?: { $ref: string }[] }>;
    components: { securitySchemes: Record<string, { type: string }>; schemas: Record<string, { required?: string[]; properties?: Record<string, unknown>; enum?: string[] }> };
  };

  it('says how to authenticate: an NKey per NATS connection, the API key on HTTP and on intake\'s commands and queries', () => {
    expect(doc.components.securitySchemes).toMatchObject({ natsNkey: { type: 'asymmetricEncryption' }, apiKey: { type: 'httpApiKey', name: 'Authorization', in: 'header' } });
    expect(doc.servers.nats!.security).toEqual([{ $ref: '#/components/securitySchemes/natsNkey' }]);
    expect(doc.servers.http!.security).toEqual([{ $ref: '#/components/securitySchemes/apiKey' }]);
    expect(doc.operations.receiveSubmitJob!.security).toEqual([{ $ref: '#/components/securitySchemes/apiKey' }]);
    expect(doc.operations.receiveListCharges!.security).toEqual([{ $ref: '#/components/securitySchemes/apiKey' }]);
    expect(doc.operations.receiveGetCharges!.security).toBeUndefined(); // internal: only intake may ask the ledger
  });

  it('has servers with host and port variables (gpunet up picks the port)', () => {
    for (const server of Object.values(doc.servers)) {
      expect(server.host).toBe('{host}:{port}');
      expect(Object.keys(server.variables ?? {}).sort()).toEqual(['host', 'port']);
    }
  });

  it('declares every header sent, required only where always sent, trace context optional everywhere', () => {
    const s = doc.components.schemas;
    expect(s.EventHeaders!.required!.sort()).toEqual(['Gpunet-Causation-Id', 'Gpunet-Correlation-Id', 'Gpunet-Schema-Version', 'Gpunet-Type', 'Nats-Msg-Id']);
    expect(Object.keys(s.RequestHeaders!.properties!)).toEqual(expect.arrayContaining(['Authorization', 'Idempotency-Key', 'Gpunet-Deadline-Policy', 'Gpunet-Schema-Version']));
    expect(s.RequestHeaders!.required).toBeUndefined();
    for (const name of ['EventHeaders', 'RequestHeaders', 'ReplyHeaders', 'FeedHeaders', 'DeadLetterHeaders', 'PlainHeaders', 'BlobChunkHeaders', 'BlobRecordHeaders']) {
      expect(s[name]).toMatchObject({ additionalProperties: false, properties: { traceparent: expect.anything(), tracestate: expect.anything() } });
      expect(s[name]!.required ?? []).not.toContain('traceparent');
    }
  });

  it('lists the streams and subjects a producer uses, and every error code', () => {
    const addresses = Object.values(doc.channels).map((c) => c.address);
    expect(addresses).toEqual(expect.arrayContaining(['gpunet.feed.{team}.{jobId}', 'gpunet.logs.{team}.{jobId}.{nodeId}', 'gpunet.data.{nodeId}.stage', 'gpunet.data.{nodeId}.read', '$O.gpunet-node-{nodeId}.C.{nuid}', '$O.gpunet-blobs-{team}.C.{nuid}', '$O.gpunet-blobs-{team}.M.{name}', 'gpunet.dlq.{consumer}', 'gpunet.qry.intake.ListCharges', 'gpunet.qry.intake.ReadFeed']));
    expect(doc.components.schemas.ErrorCodes!.enum).toEqual([...REPLY_ERROR_CODES]);
    expect(REPLY_ERROR_CODES).toEqual(expect.arrayContaining(['idempotency_conflict', 'unsupported_schema_version']));
  });
});

describe('generated files', () => {
  it('hold one JSON Schema per message, and a reply schema per request', () => {
    const paths = new Set(files.map((f) => f.path));
    for (const def of MESSAGES) {
      expect(paths).toContain(`json-schema/${def.name}.json`);
      if (def.kind !== 'event') expect(paths).toContain(`json-schema/${def.name}.reply.json`);
      const schema = JSON.parse(files.find((f) => f.path === `json-schema/${def.name}.json`)!.content) as Record<string, unknown>;
      expect(schema).toMatchObject({ $schema: 'http://json-schema.org/draft-07/schema#', title: def.name, type: 'object' });
    }
  });

  it('are committed and up to date with the schemas (run `npm run contracts:export` when this fails)', () => {
    const dir = generatedDir(import.meta.url);
    const committed = new Map<string, string>([['asyncapi.json', readFileSync(join(dir, 'asyncapi.json'), 'utf8')]]);
    for (const name of readdirSync(join(dir, 'json-schema'))) {
      committed.set(`json-schema/${name}`, readFileSync(join(dir, 'json-schema', name), 'utf8'));
    }
    expect([...committed.keys()].sort()).toEqual(files.map((f) => f.path));
    const stale = files.filter((f) => committed.get(f.path) !== f.content).map((f) => f.path);
    expect(stale).toEqual([]);
  });
});
