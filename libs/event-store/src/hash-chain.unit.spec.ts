import { createHash, createHmac } from 'node:crypto';
import fc from 'fast-check';
import { canonicalJson, computeEventHash, computeEventHashCanonical, GENESIS_HASH, type ChainedFields } from './hash-chain.js';

/** The chain's definition, written the slow obvious way: H(prev ‖ "\n" ‖ canonicalJson([fields])). */
function referenceHash(prev: string, e: ChainedFields, key?: string): string {
  const body = canonicalJson([e.streamId, e.revision.toString(), e.position.toString(), e.eventId, e.type, e.data, e.metadata, e.recordedAt]);
  return (key ? createHmac('sha256', key) : createHash('sha256')).update(prev).update('\n').update(body).digest('hex');
}

const fields = fc.record({
  streamId: fc.string({ minLength: 1 }),
  revision: fc.bigInt({ min: 0n, max: 2n ** 62n }),
  position: fc.bigInt({ min: 1n, max: 2n ** 62n }),
  eventId: fc.uuid(),
  type: fc.string({ minLength: 1 }),
  data: fc.jsonValue(),
  metadata: fc.record(
    {
      correlationId: fc.string(),
      causationId: fc.string(),
      producer: fc.string(),
      occurredAt: fc.string(),
      jobId: fc.string(),
      team: fc.string(),
    },
    { requiredKeys: ['correlationId', 'causationId', 'producer', 'occurredAt'] },
  ),
  recordedAt: fc.string(),
});

describe('hash chain', () => {
  it('computeEventHash and computeEventHashCanonical equal the definition, with and without a key', () => {
    fc.assert(
      fc.property(fields, fc.option(fc.string({ minLength: 1 }), { nil: undefined }), (e, key) => {
        const expected = referenceHash(GENESIS_HASH, e, key);
        expect(computeEventHash(GENESIS_HASH, e, key)).toBe(expected);
        const canonical = { ...e, dataJson: canonicalJson(e.data)!, metadataJson: canonicalJson(e.metadata)! };
        expect(computeEventHashCanonical(GENESIS_HASH, canonical, key)).toBe(expected);
      }),
    );
  });

  it('canonicalJson ignores key order at every level', () => {
    expect(canonicalJson({ b: 1, a: { d: [{ y: 1, x: 2 }], c: null } })).toBe('{"a":{"c":null,"d":[{"x":2,"y":1}]},"b":1}');
  });

  it('changes with every chained field and with the key', () => {
    const e: ChainedFields = {
      streamId: 's', revision: 0n, position: 1n, eventId: '00000000-0000-4000-8000-000000000000', type: 't',
      data: { a: 1 }, metadata: { correlationId: 'c', causationId: 'c', producer: 'p', occurredAt: 'o' }, recordedAt: 'r',
    };
    const h = computeEventHash(GENESIS_HASH, e);
    const variants: ChainedFields[] = [
      { ...e, streamId: 's2' }, { ...e, revision: 1n }, { ...e, position: 2n }, { ...e, eventId: '00000000-0000-4000-8000-000000000001' },
      { ...e, type: 't2' }, { ...e, data: { a: 2 } }, { ...e, metadata: { ...e.metadata, team: 'x' } }, { ...e, recordedAt: 'r2' },
    ];
    for (const v of variants) expect(computeEventHash(GENESIS_HASH, v)).not.toBe(h);
    expect(computeEventHash('1'.repeat(64), e)).not.toBe(h);
    expect(computeEventHash(GENESIS_HASH, e, 'k')).not.toBe(h);
  });
});

describe('canonicalJson', () => {
  it('serializes values with toJSON as JSON.stringify does, keys sorted', () => {
    const at = new Date('2026-11-30T05:00:00.000Z');
    expect(canonicalJson({ b: at, a: [at] })).toBe('{"a":["2026-11-30T05:00:00.000Z"],"b":"2026-11-30T05:00:00.000Z"}');
  });
});
