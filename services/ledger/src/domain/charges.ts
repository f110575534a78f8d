/**
 * The charges read model: usage lines folded from `UsageRecorded`, answering per job and per team
 * with the lines, the sum per currency and the billable time. Pure.
 *
 * One line per attempt per node: a line for an (attempt, node) already known is ignored (the first recorded wins,
 * as the store's position order says), so folding a history with redeliveries gives the same
 * answer as folding it de-duplicated.
 *
 * The state is folded in place (`evolve` returns the same object): a read model is owned by the
 * one fold that builds it, and copying maps per event would make a replay of a million lines
 * quadratic. Credit notes and invoices (later) fold into the same state as further event types.
 */
import type { UsageRecorded } from '#contracts';

export interface UsageRecordedEvent {
  type: 'UsageRecorded';
  data: UsageRecorded;
}

/** Events the charges model folds. */
export type ChargesEvent = UsageRecordedEvent;

export interface ChargesState {
  /** Lines by `<attemptId>@<nodeId>` (a multi-node attempt has a line per node), in the order they were folded. */
  readonly lines: Map<string, UsageRecorded>;
  /** Line keys per job, in fold order. */
  readonly byJob: Map<string, string[]>;
  /** Line keys per team, in fold order. */
  readonly byTeam: Map<string, string[]>;
}

/** An empty model. */
export function initialCharges(): ChargesState {
  return { lines: new Map(), byJob: new Map(), byTeam: new Map() };
}

function push(index: Map<string, string[]>, key: string, lineKey: string): void {
  const ids = index.get(key);
  if (ids) ids.push(lineKey);
  else index.set(key, [lineKey]);
}

/** Folds one event into the model (in place) and returns it. */
export function evolve(state: ChargesState, event: ChargesEvent): ChargesState {
  switch (event.type) {
    case 'UsageRecorded': {
      const line = event.data;
      const key = `${line.attemptId}@${line.nodeId}`;
      if (state.lines.has(key)) return state;
      state.lines.set(key, line);
      push(state.byJob, line.jobId, key);
      push(state.byTeam, line.team, key);
      return state;
    }
  }
}

/** Which charges to answer: a team's, optionally one job's, optionally a window on finishedAt. */
export interface ChargesQuery {
  team: string;
  jobId?: string;
  /** Only attempts finished at or after this UTC ISO time. */
  from?: string;
  /** Only attempts finished before this UTC ISO time. */
  to?: string;
}

export interface CurrencyTotal {
  currency: string;
  amountMicros: number;
}

/** The answer: the shape of `GetChargesReply`. */
export interface Charges {
  team: string;
  lines: UsageRecorded[];
  /** Sum of amountMicros per currency, currencies in the order their first line appears. */
  totals: CurrencyTotal[];
  /** Sum of billableMs. */
  billableMs: number;
}

/** A sum left the safe integer range (about 9 × 10^9 units). */
export class ChargesOverflowError extends RangeError {
  constructor(what: string) {
    super(`${what} exceeds the safe integer range; narrow the query (e.g. a time window)`);
    this.name = 'ChargesOverflowError';
  }
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function toSafe(n: bigint, what: string): number {
  if (n > BigInt(Number.MAX_SAFE_INTEGER)) throw new ChargesOverflowError(what);
  return Number(n);
}

/**
 * The lines of a team (or of one of its jobs: a job of another team has none) within the window,
 * with exact totals. Timestamps are compared as epoch ms, so `…Z` times of any precision work.
 */
export function chargesFor(state: ChargesState, query: ChargesQuery): Charges {
  const ids = query.jobId === undefined ? state.byTeam.get(query.team) : state.byJob.get(query.jobId);
  const from = query.from === undefined ? -Infinity : Date.parse(query.from);
  const to = query.to === undefined ? Infinity : Date.parse(query.to);
  const lines: UsageRecorded[] = [];
  for (const id of ids ?? []) {
    const line = state.lines.get(id)!;
    if (line.team !== query.team) continue;
    const finished = Date.parse(line.finishedAt);
    if (finished < from || finished >= to) continue;
    lines.push(line);
  }
  // In order of finishedAt, then attempt, then node: what happened when, whatever the order the
  // ledger happened to record the lines in (a line held back by a retry comes later).
  lines.sort((a, b) => Date.parse(a.finishedAt) - Date.parse(b.finishedAt) || compare(a.attemptId, b.attemptId) || compare(a.nodeId, b.nodeId));
  const sums = new Map<string, bigint>();
  let ms = 0n;
  for (const line of lines) {
    sums.set(line.currency, (sums.get(line.currency) ?? 0n) + BigInt(line.amountMicros));
    ms += BigInt(line.billableMs);
  }
  return {
    team: query.team,
    lines,
    totals: [...sums].map(([currency, sum]) => ({ currency, amountMicros: toSafe(sum, `the ${currency} total`) })),
    billableMs: toSafe(ms, 'the billable time'),
  };
}
