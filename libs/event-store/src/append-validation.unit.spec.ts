import { ValidationError } from '#errors';
import { prepareAppend } from './append-validation.js';

const ok = {
  eventId: '7f1c2a4e-3b5d-4c6e-8f90-123456789abc',
  type: 'JobSubmitted',
  data: { b: 1, a: [2, { d: 1, c: 0 }] },
  metadata: { producer: 'intake', correlationId: 'c', causationId: 'c', occurredAt: '2030-01-01T00:00:00.000Z', jobId: 'job-1' },
};

function issuesOf(fn: () => unknown): string[] {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ValidationError);
    return (err as ValidationError).issues.map((i) => i.path);
  }
  throw new Error('expected a ValidationError');
}

describe('prepareAppend', () => {
  it('serializes data and metadata canonically and lifts jobId and team', () => {
    const [p] = prepareAppend('job-1', [ok]);
    expect(p).toEqual({
      eventId: ok.eventId,
      type: 'JobSubmitted',
      dataJson: '{"a":[2,{"c":0,"d":1}],"b":1}',
      metadataJson: '{"causationId":"c","correlationId":"c","jobId":"job-1","occurredAt":"2030-01-01T00:00:00.000Z","producer":"intake"}',
      jobId: 'job-1',
      team: null,
    });
  });

  it('names every bad field', () => {
    expect(issuesOf(() => prepareAppend('', [ok]))).toEqual(['streamId']);
    expect(issuesOf(() => prepareAppend('s', []))).toEqual(['events']);
    expect(issuesOf(() => prepareAppend('s', [ok, { ...ok, type: '' }, ok]))).toEqual(['events.1.eventId', 'events.1.type', 'events.2.eventId']);
    expect(issuesOf(() => prepareAppend('s', [{ ...ok, eventId: 'x' }]))).toEqual(['events.0.eventId']);
    expect(issuesOf(() => prepareAppend('s', [{ ...ok, data: undefined }]))).toEqual(['events.0.data']);
    expect(issuesOf(() => prepareAppend('s', [{ ...ok, data: { n: 1n } }]))).toEqual(['events.0.data']);
    expect(issuesOf(() => prepareAppend('s', [{ ...ok, metadata: { ...ok.metadata, producer: undefined } }]))).toEqual(['events.0.metadata.producer']);
    expect(issuesOf(() => prepareAppend('s', [ok], { expectedRevision: -1n }))).toEqual(['options.expectedRevision']);
  });

  it('spells every event id in lower case, so both adapters store and hash the same id', () => {
    const upper = { ...ok, eventId: ok.eventId.toUpperCase() };
    expect(prepareAppend('s', [upper])[0]?.eventId).toBe(ok.eventId.toLowerCase());
    expect(issuesOf(() => prepareAppend('s', [ok, upper]))).toEqual(['events.1.eventId']);
  });
});
