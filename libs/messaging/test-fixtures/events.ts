import { randomUUID } from 'node:crypto';
import type { BusEvent } from '../src/bus-event.js';

/** A bus event for tests: fresh id, given job, metadata filled in. */
export function testEvent<T>(type: string, data: T, opts: { jobId?: string; eventId?: string; correlationId?: string } = {}): BusEvent<string, T> {
  const eventId = opts.eventId ?? randomUUID();
  return {
    eventId,
    type,
    data,
    metadata: {
      correlationId: opts.correlationId ?? `corr-${opts.jobId ?? eventId}`,
      causationId: eventId,
      ...(opts.jobId ? { jobId: opts.jobId } : {}),
      producer: 'test',
      occurredAt: new Date(0).toISOString(),
    },
  };
}
