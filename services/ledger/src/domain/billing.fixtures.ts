/**
 * Builders of stored-event histories for the billing specs and the replay benchmark: a tiny
 * in-memory log with increasing positions and deterministic event ids. Pure.
 */
import type { ComputeHeld, InvoiceFinalized, JobFinished, JobOutcome, JobSubmitted, NodeLost, PriceListPublished } from '#contracts';
import { readJobTeam, readSettledLines, unreadLosses, type BillingState, type StoredEvent } from './billing.js';

/**
 * What the ledger reads from the store after a fold into a settling state (decision 0046), read
 * from `events` instead: the lines of losses of settled attempts, from their InvoiceFinalized
 * events, and the teams of jobs named in `teamless`, from their JobSubmitted.
 */
export function readFromEvents(state: BillingState, events: readonly StoredEvent[]): void {
  for (const entry of unreadLosses(state)) readSettledLines(entry, events.find((e) => e.eventId === entry.eventId)!.data as InvoiceFinalized);
  for (const jobId of [...state.teamless]) readJobTeam(state, jobId, events.find((e) => e.type === 'JobSubmitted' && (e.data as JobSubmitted).jobId === jobId));
}

/** A deterministic UUID-shaped id from a counter. */
export function fixtureEventId(n: number): string {
  const hex = n.toString(16).padStart(12, '0');
  return `00000000-0000-4000-8000-${hex}`;
}

/** An append-only list of stored events. */
export class FixtureLog {
  readonly events: StoredEvent[] = [];
  private next = 1;
  /** Store clock for `recordedAt`, epoch ms; tests move it. */
  now = Date.parse('2025-06-01T00:00:00.000Z');

  append(type: string, data: unknown, options: { team?: string; recordedAt?: number } = {}): StoredEvent {
    const n = this.next++;
    const event: StoredEvent = {
      eventId: fixtureEventId(n),
      type,
      data,
      position: BigInt(n),
      recordedAt: new Date(options.recordedAt ?? this.now).toISOString(),
      metadata: options.team === undefined ? {} : { team: options.team },
    };
    this.events.push(event);
    return event;
  }

  prices(version: number, rates: Record<string, number>, options: { effectiveFrom?: string; defaultRate?: number; minimum?: number; currency?: string } = {}): StoredEvent {
    const data: PriceListPublished = {
      version,
      currency: options.currency ?? 'EUR',
      effectiveFrom: options.effectiveFrom ?? '1970-01-01T00:00:00.000Z',
      ratesMicrosPerGpuHour: rates,
      publishedAt: new Date(this.now).toISOString(),
    };
    if (options.defaultRate !== undefined) data.defaultRateMicrosPerGpuHour = options.defaultRate;
    if (options.minimum !== undefined) data.minimumChargeMicros = options.minimum;
    return this.append('PriceListPublished', data);
  }

  held(a: { jobId: string; attemptId: string; nodeId: string; gpuIndices: number[]; gpuModel?: string; heldAt: string; team?: string }): StoredEvent {
    const data: ComputeHeld = { jobId: a.jobId, attemptId: a.attemptId, nodeId: a.nodeId, gpuIndices: a.gpuIndices, gpuModel: a.gpuModel ?? 'sim-gpu', gpus: a.gpuIndices.length, heldAt: a.heldAt };
    return this.append('ComputeHeld', data, a.team === undefined ? {} : { team: a.team });
  }

  finished(a: { jobId: string; attemptId: string; nodeId: string; finishedAt: string; outcome?: JobOutcome; team?: string }): StoredEvent {
    const outcome = a.outcome ?? 'completed';
    const data: JobFinished = { jobId: a.jobId, attemptId: a.attemptId, nodeId: a.nodeId, outcome, exitCode: outcome === 'completed' ? 0 : null, signal: null, finishedAt: a.finishedAt };
    return this.append('JobFinished', data, a.team === undefined ? {} : { team: a.team });
  }

  lost(nodeId: string, attempts: { jobId: string; attemptId: string }[]): StoredEvent {
    const data: NodeLost = { nodeId, reason: 'heartbeat_timeout', lastSeenAt: new Date(this.now).toISOString(), detectedAt: new Date(this.now).toISOString(), affectedAttempts: attempts };
    return this.append('NodeLost', data);
  }
}
