/**
 * The billing state's rows in the store's database (decision 0053): `projection_billing_lines`.
 *
 * The table is the billing fold up to its position, whole: every line, settled or open, every
 * job's team and the headers (price lists, finalized invoices, credit notes). A process holds
 * the headers in memory and reads the rows of lines only for the events it folds and for the
 * derivations it answers, so its memory does not grow with the jobs billed.
 *
 * Every read of rows is checked against the position this process holds: the table moved by
 * another ledger (a standby answering queries, a deposed leader) is {@link BillingTableMovedError},
 * and the caller loads the headers again at the new position and folds on from there. Rows are
 * written with the position in one transaction, by compare and set, so no fold is ever half in
 * the table or folded twice into it.
 */
import { trustedCheckpoint, type EventStore, type ProjectionCheckpoint, type ProjectionCondition, type ProjectionTable, type ProjectionTableHost, type ProjectionTableSpec } from '#event-store';
import { BILLING_HEADER_KINDS, billingFromRows, billingView, jobKey, takeBillingRows, teamlessJobs, type BillingRow, type BillingState } from '../domain/index.js';

export const BILLING_TABLE: ProjectionTableSpec = {
  name: 'billing_lines',
  version: 1,
  columns: [
    { name: 'kind', type: 'text' },
    { name: 'team', type: 'text' },
    { name: 'month', type: 'text' },
  ],
  indexes: [
    ['kind', 'team', 'month'],
    ['kind', 'month'],
  ],
};

/** Keys read per query (one parameter holds them all: a JSON array in SQLite, an array in PostgreSQL). */
const KEYS_PER_READ = 5_000;

/** Another ledger moved the table since this process last read or wrote it. */
export class BillingTableMovedError extends Error {
  constructor(held: bigint, now: bigint) {
    super(`the billing table moved from position ${held} to ${now}`);
    this.name = 'BillingTableMovedError';
  }
}

/**
 * Which open lines a derivation needs; `{}`: every one (a rebuild's comparison). A line is on the
 * month it finished in or a later one (a late line), so those of a month's invoice are among the
 * lines finished before the next month.
 */
export interface LinesNeeded {
  /** Only this team's, with those whose agent events name no team (their job's row tells it). */
  team?: string;
  /** Only those finished before this month (`YYYY-MM`). */
  finishedBefore?: string;
}

export class BillingTable {
  private constructor(
    private readonly table: ProjectionTable,
    /** Where this process last found or left the table. */
    private held: ProjectionCheckpoint,
  ) {}

  /** Opens the table; a position the store does not hold empties it first (`untrusted` is told). */
  static async open(store: EventStore, host: ProjectionTableHost, untrusted: (held: ProjectionCheckpoint, found: string | null) => void | Promise<void>): Promise<BillingTable> {
    const table = await host.openProjectionTable(BILLING_TABLE);
    const held = await trustedCheckpoint(store, table, untrusted);
    return new BillingTable(table, held);
  }

  get position(): bigint {
    return this.held.position;
  }

  /** The state the table holds: its headers, at its position (read in one snapshot). */
  async load(): Promise<BillingState> {
    const answer = await this.table.query({ where: [{ column: 'kind', op: 'in', values: BILLING_HEADER_KINDS }], orderBy: ['key'] });
    this.held = answer.checkpoint;
    return billingFromRows(answer.checkpoint.position, answer.rows);
  }

  /** Rows by key, all read at the position this process holds (else {@link BillingTableMovedError}). */
  async rows(keys: readonly string[]): Promise<{ key: string; doc: string }[]> {
    const out: { key: string; doc: string }[] = [];
    for (let i = 0; i < keys.length; i += KEYS_PER_READ) out.push(...(await this.query([{ column: 'key', op: 'in', values: keys.slice(i, i + KEYS_PER_READ) }])));
    return out;
  }

  /** Writes a page's rows and moves the table to `to`, from the position this process holds (else {@link BillingTableMovedError}). */
  async commit(to: ProjectionCheckpoint, rows: readonly BillingRow[]): Promise<void> {
    if (to.position <= this.held.position) return;
    if (!(await this.table.commit(this.held, to, rows))) throw new BillingTableMovedError(this.held.position, (await this.table.checkpoint()).position);
    this.held = to;
  }

  /** Empties the table (a rebuild that found the rows differ from a fold from zero); from the position held. */
  async reset(): Promise<void> {
    if (!(await this.table.reset(this.held))) throw new BillingTableMovedError(this.held.position, (await this.table.checkpoint()).position);
    this.held = { position: 0n, eventId: null };
  }

  /** `state` (at the table's position) with the open lines a derivation needs, and their jobs' teams. */
  async view(state: BillingState, needed: LinesNeeded): Promise<BillingState> {
    const where: ProjectionCondition[] = [
      { column: 'kind', op: '=', value: 'a' },
      needed.finishedBefore === undefined ? { column: 'month', op: 'not null' } : { column: 'month', op: '<', value: needed.finishedBefore },
    ];
    if (needed.team !== undefined) where.push({ column: 'team', op: 'in', values: [needed.team, ''] });
    const view = billingView(state, await this.query(where));
    const teamless = teamlessJobs(view);
    if (teamless.length > 0) takeBillingRows(view, await this.rows(teamless.map(jobKey)));
    return view;
  }

  private async query(where: readonly ProjectionCondition[]): Promise<{ key: string; doc: string }[]> {
    const answer = await this.table.query({ where });
    if (answer.checkpoint.position !== this.held.position || answer.checkpoint.eventId !== this.held.eventId) throw new BillingTableMovedError(this.held.position, answer.checkpoint.position);
    return answer.rows;
  }
}
