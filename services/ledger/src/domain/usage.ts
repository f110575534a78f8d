/**
 * One usage line per run attempt: billable time is ComputeHeld.heldAt → JobFinished.finishedAt,
 * both stamped by the same agent, priced at the rate in force when compute was held. Pure: the
 * price versions, the team and the recording time are handed in.
 */
import type { ComputeHeld, JobFinished, JobOutcome, UsageRecorded, WAIVER_REASONS } from '#contracts';
import { IllegalStateError } from '#errors';
import { epochMs } from './price-list.js';
import { billableMs, lineAmountMicros, rateAt, ROUNDING_RULE, type PriceListVersion } from './pricing.js';

export type WaiverReason = (typeof WAIVER_REASONS)[number];

/**
 * Outcomes that are the platform's fault and therefore not charged (ARCHITECTURE.md: "an attempt
 * ended by a platform fault is not billed, by default"). Their line is still recorded, with
 * billableMs 0, amount 0 and the reason, so an audit sees the attempt and why it cost nothing.
 */
export const WAIVED_OUTCOMES: Readonly<Partial<Record<JobOutcome, WaiverReason>>> = { node_lost: 'platform_fault' };

/** What the ledger adds to the two agent events. */
export interface UsageContext {
  /** The team that pays: the job's owner. */
  team: string;
  /** When the ledger computes the line (its clock). */
  recordedAt: string;
  /**
   * Placement declared the attempt's node lost (NodeLost listed the attempt) before this
   * JobFinished: the attempt was requeued and ran again elsewhere, so whatever the late report
   * says, it is waived like `node_lost` (the line keeps the reported outcome, for the audit).
   */
  nodeLost?: boolean;
}

/** ComputeHeld and JobFinished do not describe the same attempt on the same node. Terminal. */
export class AttemptMismatchError extends IllegalStateError {
  constructor(
    readonly field: 'jobId' | 'attemptId' | 'nodeId',
    readonly held: string,
    readonly finished: string,
  ) {
    super(`ComputeHeld and JobFinished disagree on ${field}: ${held} vs ${finished}; billable time needs both stamps from one attempt`);
  }
}

/** The first ComputeHeld event among the events of an attempt stream, if the attempt ever held compute. */
export function computeHeldOf<E extends { type: string; data: unknown }>(attemptEvents: readonly E[]): (E & { data: ComputeHeld }) | undefined {
  return attemptEvents.find((e) => e.type === 'ComputeHeld') as (E & { data: ComputeHeld }) | undefined;
}

/**
 * The usage line of one attempt, or undefined when the attempt never held compute (nothing to
 * bill: the job ended before the agent reserved GPUs).
 *
 * Throws AttemptMismatchError when the two events are of different attempts, NoPriceError when
 * no price covers the GPU model at `heldAt`.
 */
export function usageFor(
  held: ComputeHeld | undefined,
  finished: JobFinished,
  prices: readonly PriceListVersion[],
  context: UsageContext,
): UsageRecorded | undefined {
  if (!held) return undefined;
  for (const field of ['jobId', 'attemptId', 'nodeId'] as const) {
    if (held[field] !== finished[field]) throw new AttemptMismatchError(field, held[field], finished[field]);
  }
  const heldMs = epochMs(held.heldAt, 'heldAt');
  const finishedMs = epochMs(finished.finishedAt, 'finishedAt');
  const rate = rateAt(prices, held.gpuModel, heldMs);
  const waivedReason = WAIVED_OUTCOMES[finished.outcome] ?? (context.nodeLost ? WAIVED_OUTCOMES.node_lost : undefined);
  const ms = waivedReason ? 0 : billableMs(heldMs, finishedMs);
  const line: UsageRecorded = {
    jobId: held.jobId,
    attemptId: held.attemptId,
    team: context.team,
    nodeId: held.nodeId,
    gpuModel: held.gpuModel,
    gpus: held.gpus,
    outcome: finished.outcome,
    heldFrom: held.heldAt,
    finishedAt: finished.finishedAt,
    billableMs: ms,
    rateMicrosPerGpuHour: rate.rateMicrosPerGpuHour,
    amountMicros: waivedReason ? 0 : lineAmountMicros(held.gpus, ms, rate.rateMicrosPerGpuHour, rate.minimumChargeMicros).amountMicros,
    currency: rate.currency,
    priceListVersion: rate.priceListVersion,
    rounding: ROUNDING_RULE,
    recordedAt: context.recordedAt,
  };
  if (waivedReason) line.waivedReason = waivedReason;
  return line;
}
