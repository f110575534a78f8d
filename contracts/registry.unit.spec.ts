import { z } from 'zod';
import {
  Commands,
  DLQ_STREAM,
  EVENTS_STREAM,
  EventTypes,
  Events,
  HEADERS,
  InvalidSubjectTokenError,
  JOB_OUTCOMES,
  JobSpecInput,
  MESSAGES,
  Queries,
  SERVICE_NAMES,
  STREAMS,
  UnknownMessageError,
  deadLetterSubject,
  eventSubject,
  eventTypeSubjects,
  feedSubject,
  jobEventSubjects,
  parseEventSubject,
  teamEventSubjects,
  findMessage,
  getMessage,
  querySubject,
  validateEventData,
  type AnyEvent,
  type CommandReply,
  type EventData,
  type MessageKind,
  type QueryRequest,
} from './index.js';

/** The messages the foundation issue names. Names may be improved; this list may only grow. */
const REQUIRED: Record<MessageKind, readonly string[]> = {
  command: ['SubmitJob', 'CancelJob'],
  event: [
    'JobSubmitted',
    'JobRejected',
    'JobCancelRequested',
    'InputsStaged',
    'StagingFailed',
    'JobPlaced',
    'ComputeHeld',
    'JobStarted',
    'JobCheckpointed',
    'JobFinished',
    'JobRequeued',
    'OutputsStored',
    'ComputeReleased',
    'DataRemoved',
    'NodeRegistered',
    'NodeHeartbeat',
    'NodeLost',
    'PriceListPublished',
    'UsageRecorded',
  ],
  query: ['GetJob', 'ListJobs', 'Health'],
};

describe('registry', () => {
  it.each(Object.entries(REQUIRED).flatMap(([kind, names]) => names.map((name) => [name, kind] as const)))(
    'defines %s as a %s',
    (name, kind) => {
      const def = getMessage(name);
      expect(def.kind).toBe(kind);
      expect(Number.isInteger(def.version) && def.version >= 1).toBe(true);
      expect(def.description.length).toBeGreaterThan(20);
      if (def.kind !== 'event') expect(def.replySchema).toBeInstanceOf(z.ZodType);
    },
  );

  it('keeps the six outcomes of a finished job', () => {
    expect(JOB_OUTCOMES).toEqual(expect.arrayContaining(['completed', 'failed', 'timeout', 'cancelled', 'node_lost', 'deadline']));
    const finished = { jobId: 'j1', attemptId: 'j1-a1', nodeId: 'n1', exitCode: null, finishedAt: '2025-06-01T12:00:00.000Z' };
    for (const outcome of JOB_OUTCOMES) expect(validateEventData('JobFinished', { ...finished, outcome }).ok).toBe(true);
    expect(validateEventData('JobFinished', { ...finished, outcome: 'exploded' }).ok).toBe(false);
  });

  it('names each message once, looks it up by name, and refuses unknown names', () => {
    expect(new Set(MESSAGES.map((m) => m.name)).size).toBe(MESSAGES.length);
    expect(findMessage('JobFinished')).toBe(Events.JobFinished);
    expect(findMessage('NoSuchThing')).toBeUndefined();
    expect(() => getMessage('NoSuchThing')).toThrow(UnknownMessageError);
    expect(EventTypes.JobFinished).toBe('JobFinished');
    expect(Object.keys(EventTypes).sort()).toEqual(Object.keys(Events).sort());
  });

  it('derives every subject from the name by the convention', () => {
    for (const def of MESSAGES) {
      if (def.kind === 'event') expect(def.subject).toBe(`gpunet.evt.${def.name}.*.*`);
      if (def.kind === 'command') expect(def.subject).toBe(`gpunet.cmd.${def.name}`);
      if (def.kind === 'query') expect(def.subject).toBe(`gpunet.qry.${def.service}.${def.name}`);
    }
    expect(Commands.SubmitJob.subject).toBe('gpunet.cmd.SubmitJob');
    expect(Queries.GetJob.subject).toBe('gpunet.qry.intake.GetJob');
    expect(Queries.Health.subject).toBe('gpunet.qry.*.Health');
    expect(eventSubject('JobFinished', { team: 'team-ml', jobId: 'job_1' })).toBe('gpunet.evt.JobFinished.team-ml.job_1');
    expect(eventSubject('PriceListPublished')).toBe('gpunet.evt.PriceListPublished._._');
    expect(eventSubject('NodeLost', { team: undefined, jobId: 'job_1' })).toBe('gpunet.evt.NodeLost._.job_1');
    expect(teamEventSubjects('team-ml')).toBe('gpunet.evt.*.team-ml.*');
    expect(jobEventSubjects('team-ml', 'job_1')).toBe('gpunet.evt.*.team-ml.job_1');
    expect(parseEventSubject('gpunet.evt.JobFinished.team-ml.job_1')).toEqual({ type: 'JobFinished', team: 'team-ml', jobId: 'job_1' });
    expect(parseEventSubject('gpunet.evt.PriceListPublished._._')).toEqual({ type: 'PriceListPublished' });
    expect(parseEventSubject('gpunet.evt.JobFinished')).toBeUndefined();
    expect(feedSubject('team-ml', 'job_1')).toBe('gpunet.feed.team-ml.job_1');
    expect(querySubject('ledger', 'Health')).toBe('gpunet.qry.ledger.Health');
    expect(deadLetterSubject('placement-jobs')).toBe('gpunet.dlq.placement-jobs');
  });

  it('refuses names that would break a subject', () => {
    for (const bad of ['a.b', 'a*', '>', 'a b', '']) {
      expect(() => deadLetterSubject(bad)).toThrow(InvalidSubjectTokenError);
      expect(() => eventSubject(bad)).toThrow(InvalidSubjectTokenError);
      if (bad !== '') expect(() => eventSubject('JobFinished', { team: bad })).toThrow(InvalidSubjectTokenError);
      if (bad !== '') expect(() => eventSubject('JobFinished', { jobId: bad })).toThrow(InvalidSubjectTokenError);
    }
    // `_` stands for "none": a team or job named so would be read as having none.
    expect(() => eventSubject('JobFinished', { team: '_' })).toThrow(InvalidSubjectTokenError);
  });

  it('keeps every event on the event stream and dead letters on their own', () => {
    expect(STREAMS.events).toEqual({ name: 'GPUNET_EVENTS', subjects: ['gpunet.evt.>'] });
    expect(STREAMS.deadLetters).toEqual({ name: 'GPUNET_DLQ', subjects: ['gpunet.dlq.>'] });
    expect(EVENTS_STREAM).toBe('GPUNET_EVENTS');
    expect(DLQ_STREAM).toBe('GPUNET_DLQ');
    for (const def of Object.values(Events)) {
      expect(def.subject).toBe(eventTypeSubjects(def.name));
      expect(def.producers.length).toBeGreaterThan(0);
      for (const producer of def.producers) expect(SERVICE_NAMES).toContain(producer);
    }
  });

  it('names the bus headers', () => {
    expect(HEADERS).toMatchObject({
      msgId: 'Nats-Msg-Id',
      type: 'Gpunet-Type',
      jobId: 'Gpunet-Job-Id',
      correlationId: 'Gpunet-Correlation-Id',
      schemaVersion: 'Gpunet-Schema-Version',
    });
  });

  it('validates event data by type and says which field is wrong', () => {
    const held = {
      jobId: 'job_1',
      attemptId: 'job_1-a1',
      nodeId: 'node-1',
      gpuIndices: [0, 1],
      gpuModel: 'A100-80GB',
      gpus: 2,
      heldAt: '2025-06-01T12:00:00.000Z',
    };
    expect(validateEventData('ComputeHeld', held)).toEqual({ ok: true, value: held });
    const bad = validateEventData('ComputeHeld', { ...held, gpus: 3, heldAt: '2025-06-01 12:00' });
    expect(bad.ok).toBe(false);
    expect(!bad.ok && bad.issues.map((i) => i.path).sort()).toEqual(['gpus', 'heldAt']);
    const mismatch = validateEventData('ComputeHeld', { ...held, gpus: 3 });
    expect(!mismatch.ok && mismatch.issues).toEqual([
      { path: 'gpus', message: 'gpus must equal the number of gpuIndices', fix: 'set gpus to gpuIndices.length' },
    ]);
    expect(validateEventData('NoSuchEvent', {})).toEqual({ ok: false, issues: [{ path: 'type', message: 'unknown event type "NoSuchEvent"' }] });
  });

  it('types payloads by message name (checked by tsc)', () => {
    const finished: EventData<'JobFinished'> = {
      jobId: 'job_1',
      attemptId: 'job_1-a1',
      nodeId: 'node-1',
      outcome: 'timeout',
      exitCode: null,
      signal: 'SIGKILL',
      finishedAt: '2025-06-01T12:00:00.000Z',
    };
    // @ts-expect-error an outcome outside the six does not type-check
    const wrong: EventData<'JobFinished'>['outcome'] = 'exploded';
    const reply: CommandReply<'SubmitJob'> = { jobId: 'job_1', state: 'submitted', submittedAt: finished.finishedAt, duplicate: false };
    const list: QueryRequest<'ListJobs'> = { limit: 50, states: ['running'] };
    const event: AnyEvent = { type: 'JobFinished', data: finished };
    if (event.type === 'JobFinished') expect(event.data.outcome).toBe('timeout');
    expect([wrong, reply.state, list.limit]).toEqual(['exploded', 'submitted', 50]);
  });

  it('describes every field of every message, so the JSON Schemas document themselves', () => {
    const undescribed: string[] = [];
    const schemas: [string, z.ZodType][] = [['JobSpec', JobSpecInput]];
    for (const def of MESSAGES) {
      schemas.push([def.name, def.schema]);
      if (def.kind !== 'event') schemas.push([`${def.name}.reply`, def.replySchema]);
    }
    for (const [name, schema] of schemas) collectUndescribed(z.toJSONSchema(schema, { io: 'input' }), name, undescribed);
    expect(undescribed).toEqual([]);
  });
});

function collectUndescribed(schema: unknown, path: string, out: string[]): void {
  if (schema === null || typeof schema !== 'object') return;
  if (Array.isArray(schema)) return schema.forEach((s) => collectUndescribed(s, path, out));
  const s = schema as Record<string, unknown>;
  for (const [key, value] of Object.entries((s.properties as Record<string, Record<string, unknown>>) ?? {})) {
    if (typeof value.description !== 'string' || value.description === '') out.push(`${path}.${key}`);
    collectUndescribed(value, `${path}.${key}`, out);
  }
  for (const key of ['items', 'anyOf', 'oneOf', 'additionalProperties']) collectUndescribed(s[key], key === 'items' ? `${path}[]` : path, out);
}
