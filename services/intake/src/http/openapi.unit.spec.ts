import { Validator } from '@seriousme/openapi-schema-validator';
import { readFileSync } from 'node:fs';
import { openApiDocument, ROUTES } from './openapi.js';

type Json = { [key: string]: unknown };
const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'];

/** Every `$ref` in a value, with where it was found. */
function refs(value: unknown, at = '#'): { ref: string; at: string }[] {
  if (Array.isArray(value)) return value.flatMap((v, i) => refs(v, `${at}/${i}`));
  if (typeof value !== 'object' || value === null) return [];
  return Object.entries(value).flatMap(([k, v]) => (k === '$ref' && typeof v === 'string' ? [{ ref: v, at }] : refs(v, `${at}/${k}`)));
}

function resolve(doc: Json, ref: string): unknown {
  return ref
    .replace(/^#\//, '')
    .split('/')
    .map((p) => p.replaceAll('~1', '/').replaceAll('~0', '~'))
    .reduce<unknown>((node, key) => (typeof node === 'object' && node !== null ? (node as Json)[key] : undefined), doc);
}

describe('OpenAPI document', () => {
  const doc = openApiDocument();

  it('is a valid OpenAPI 3.1 document', async () => {
    const validator = new Validator();
    const result = await validator.validate(structuredClone(doc));
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(validator.version).toBe('3.1');
  });

  it('is the one the web console\'s client is generated from (else: npm run console:api)', () => {
    const copy = JSON.parse(readFileSync(new URL('../../../../console/src/api/openapi.json', import.meta.url), 'utf8')) as Json;
    expect(copy).toEqual(JSON.parse(JSON.stringify(doc)));
  });

  it('lists every route, and nothing else', () => {
    const listed = Object.entries(doc.paths as Json).flatMap(([path, item]) =>
      Object.keys(item as Json)
        .filter((m) => METHODS.includes(m))
        .map((m) => `${m.toUpperCase()} ${path}`),
    );
    expect(listed.sort()).toEqual([...ROUTES].sort());
  });

  it('every $ref resolves', () => {
    const all = refs(doc);
    expect(all.length).toBeGreaterThan(20);
    const broken = all.filter(({ ref }) => resolve(doc, ref) === undefined);
    expect(broken).toEqual([]);
  });

  it('states the bearer auth globally, and opens only health, the document itself and the tus capability probe (OPTIONS /v1/uploads)', () => {
    expect(doc.security).toEqual([{ bearerAuth: [] }]);
    expect((doc.components as Json).securitySchemes).toMatchObject({ bearerAuth: { type: 'http', scheme: 'bearer' } });
    const open = Object.entries(doc.paths as Json).filter(([, item]) => Object.values(item as Json).some((op) => Array.isArray((op as Json).security) && ((op as Json).security as unknown[]).length === 0));
    expect(open.map(([p]) => p).sort()).toEqual(['/healthz', '/openapi.json', '/v1/uploads']);
    expect(Object.entries((doc.paths as Json)['/v1/uploads'] as Json).filter(([, op]) => Array.isArray((op as Json).security)).map(([m]) => m)).toEqual(['options']);
  });

  it('every authenticated operation answers 401 and 403 with the error shape, every body-taking one 400', () => {
    for (const [path, item] of Object.entries(doc.paths as Json)) {
      for (const [method, op] of Object.entries(item as Json)) {
        const o = op as Json;
        const responses = o.responses as Json;
        if (Array.isArray(o.security)) continue;
        expect([path, method, Object.keys(responses)]).toEqual([path, method, expect.arrayContaining(['401', '403'])]);
        if (o.requestBody) expect([path, method, Object.keys(responses)]).toEqual([path, method, expect.arrayContaining(['400'])]);
      }
    }
    const error = (doc.components as Json).schemas as Json;
    expect(error.Error).toMatchObject({ properties: { error: { properties: { code: {}, message: {}, issues: {} } } } });
  });

  it('renders request bodies as input (defaults optional) and replies as output', () => {
    const schemas = (doc.components as Json).schemas as Record<string, Json>;
    // `outputs` has a default: a client may leave it out of a spec...
    expect(schemas.JobSpec!.required).toEqual(expect.arrayContaining(['work', 'request']));
    expect(schemas.JobSpec!.required).not.toContain('outputs');
    // ...and the view always has it filled.
    const viewSpec = ((schemas.JobView!.properties as Json).spec as Json).required;
    expect(viewSpec).toEqual(expect.arrayContaining(['outputs', 'data']));
    expect(JSON.stringify(doc)).not.toMatch(/\(\?:\(\?:\\\\d\\\\d\[2468\]/); // the long calendar regex is shortened
  });
});
