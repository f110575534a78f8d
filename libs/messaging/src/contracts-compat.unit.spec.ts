/**
 * The messaging library never imports #contracts (it works with any schemas handed to it), but
 * what it puts on the bus must match what contracts/ documents for other languages: the recorded
 * event envelope, the reply envelope and the dead letter.
 */
import { IllegalStateError, ValidationError } from '#errors';
import { DeadLetter, RecordedEventEnvelope, eventSubject, replyEnvelope } from '#contracts';
import type { JsMsg } from '@nats-io/jetstream';
import { headers } from '@nats-io/transport-node';
import { z } from 'zod';
import { decodeEvent, encodeEvent } from './bus-event.js';
import { deadLetterOf } from './consumer/dead-letter.js';
import { failureOutcome, DEFAULT_RETRY_POLICY } from './consumer/outcome.js';
import { MalformedMessageError } from './errors.js';
import { errorReply } from './query/envelope.js';

const recorded = {
  streamId: 'job-job_01jz8k4m2n',
  revision: 3n,
  position: 9_007_199_254_740_993n, // beyond 2^53: must survive as text
  eventId: '0190b6c2-7d4e-7a3b-9c1d-2e3f4a5b6c7d',
  type: 'JobStarted',
  data: { jobId: 'job_01jz8k4m2n' },
  metadata: { correlationId: 'req-1', causationId: 'req-1', jobId: 'job_01jz8k4m2n', producer: 'execution', occurredAt: '2026-01-01T00:00:00.000Z' },
  recordedAt: '2026-01-01T00:00:00.001Z',
  hash: 'a'.repeat(64),
};

function fakeMsg(data: string): JsMsg {
  const h = headers();
  h.set('Gpunet-Job-Id', 'job_01jz8k4m2n');
  return {
    data: new TextEncoder().encode(data),
    subject: 'gpunet.evt.JobStarted.team-a.job_01jz8k4m2n',
    seq: 42,
    headers: h,
    info: { stream: 'GPUNET_EVENTS', deliveryCount: 5 },
  } as unknown as JsMsg;
}

describe('bus shapes match contracts/', () => {
  it('an encoded recorded event is a RecordedEventEnvelope, with 64-bit positions intact, and decodes back', () => {
    const m = encodeEvent(recorded);
    const parsed = RecordedEventEnvelope.parse(JSON.parse(m.payload));
    expect(parsed.position).toBe('9007199254740993');
    expect(m.headers.get('Nats-Msg-Id')).toBe(recorded.eventId);
    expect(m.subject).toBe(eventSubject(recorded.type, recorded.metadata));
    expect(m.subject.split('.').slice(0, 3).join('.')).toBe(`gpunet.evt.${recorded.type}`);
    expect(decodeEvent(new TextEncoder().encode(m.payload))).toEqual(recorded);
  });

  it('error replies are valid reply envelopes', () => {
    const envelope = replyEnvelope(z.unknown());
    for (const err of [new ValidationError('bad', [{ path: 'jobId', message: 'required', fix: 'give one' }]), new IllegalStateError('done'), new Error('secret')]) {
      expect(envelope.safeParse(errorReply(err)).success).toBe(true);
    }
  });

  it('dead letters are valid DeadLetter messages for each reason', () => {
    const cases = [
      failureOutcome(new MalformedMessageError('body is not JSON'), 1, DEFAULT_RETRY_POLICY),
      failureOutcome(new ValidationError('bad data', [{ path: 'data.gpus', message: 'Expected number' }]), 1, DEFAULT_RETRY_POLICY),
      failureOutcome(new Error('still down'), 5, DEFAULT_RETRY_POLICY),
      failureOutcome(new IllegalStateError('already placed'), 1, DEFAULT_RETRY_POLICY),
    ];
    const reasons = cases.map((outcome) => {
      if (outcome.kind !== 'dead_letter') throw new Error(`expected a dead letter, got ${outcome.kind}`);
      const letter = deadLetterOf(fakeMsg('{}'), 'ledger', outcome.reason, { jobId: 'job_01jz8k4m2n' }, new Date('2026-01-01T00:00:00Z'));
      const parsed = DeadLetter.safeParse(letter);
      expect(parsed.error?.issues ?? []).toEqual([]);
      return letter.reason;
    });
    expect(reasons).toEqual(['schema_invalid', 'schema_invalid', 'max_deliveries', 'terminal_error']);
  });
});
