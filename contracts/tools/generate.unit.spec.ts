import { Parser } from '@asyncapi/parser';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { MESSAGES } from '../index.js';
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
