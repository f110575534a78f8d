import {
  budgetStreamId,
  budgetTotals,
  ClearBudget,
  emptyBudgetAccount,
  evolveBudget,
  GetBudget,
  reservationFits,
  Queries,
  SetBudget,
  type BudgetAccount,
  type BudgetFigures,
  type BudgetSet,
  type BudgetView,
  type ListPriceListsReply,
  type QuoteReply,
} from '#contracts';
import { IssuesError, ValidationError } from '#errors';
import { WrongExpectedVersionError, type EventStore } from '#event-store';
import { requestQuery } from '#messaging';
import { CLOCK, EVENT_STORE, EVENT_WRITER, LOGGER, NATS_CONNECTION, type Clock, type EventWriter } from '#service-kit';
import type { NatsConnection } from '@nats-io/transport-node';
import { Inject, Injectable, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import type { Logger } from 'pino';
import type { Principal } from '../auth/api-keys.js';
import { allows, authorize } from '../auth/permissions.js';
import { ForbiddenError } from '../common/errors.js';
import { budgetFigures, decideAdmission, decideRelease, type Admission, type BudgetStreamEvent, type WorstCase } from '../domain/budget.js';
import { JobViewsFeed } from '../jobs/job-views.feed.js';
import { parsed } from '../common/parsed.js';

/** Appends a budget decision retries when another intake decided on the same account first. */
const DECIDE_ATTEMPTS = 50;

/** The job's worst case would take its team past a hard budget (HTTP 402, NATS `budget_exceeded`). Terminal until the budget or the spend changes. */
export class BudgetExceededError extends IssuesError {
  readonly code = 'budget_exceeded';
  constructor(
    message: string,
    readonly figures: BudgetFigures,
  ) {
    super(message, [{ path: 'request', message, fix: 'lower request.gpus or request.timeLimit, or ask a key with role billing to raise the budget or set `--on-exceed hold`' }]);
  }
}

/** What a submit asks the budget for. */
export interface BudgetRequest {
  gpus: number;
  gpuModel?: string | undefined;
  timeLimitMs: number;
}

/**
 * Team budgets: the single writer of `intake-budget-<team>` (decision 0026). Every decision —
 * set, clear, reserve, refuse, release — is taken on the account folded from that stream and
 * appended with the revision it was folded at; within one intake a team's decisions queue behind
 * each other, across intakes the store's expected revision makes the later one decide again. So
 * no two reservations ever see the same account, and a replay of the stream re-derives them all.
 */
@Injectable()
export class BudgetsService implements OnModuleInit, OnModuleDestroy {
  private readonly accounts = new Map<string, BudgetAccount>();
  private readonly locks = new Map<string, Promise<unknown>>();
  private stopListening: (() => void) | undefined;

  constructor(
    @Inject(EVENT_STORE) private readonly store: EventStore,
    @Inject(EVENT_WRITER) private readonly writer: EventWriter,
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(LOGGER) private readonly logger: Logger,
    private readonly feed: JobViewsFeed,
  ) {}

  /** Releases a reservation as soon as the job's `JobEnded` reaches the views. */
  onModuleInit(): void {
    this.stopListening = this.feed.listen((event) => {
      if (event.type === 'JobEnded' && event.metadata.team) {
        const team = event.metadata.team;
        void this.sweep(team).catch((err: unknown) => this.logger.warn({ err, team, jobId: event.metadata.jobId }, 'budget reservation not released yet; the next decision of the team releases it'));
      }
    });
  }

  onModuleDestroy(): void {
    this.stopListening?.();
  }

  // ── use cases ──────────────────────────────────────────────────────────────────────────

  /** A team's budget and this month's figures: its own team for every role, any team for `billing`. */
  async get(principal: Principal, body: unknown): Promise<BudgetView> {
    authorize(principal, 'budgets:read');
    const team = parsed(GetBudget, body ?? {}, 'request').team ?? principal.team;
    this.assertScope(principal, team, 'read the budget');
    await this.sweep(team);
    return this.view(await this.catchUp(team));
  }

  /** Sets a team's budget (role `billing`); the currency defaults to the price list's in force. */
  async set(principal: Principal, body: unknown, trace: { correlationId?: string | undefined } = {}): Promise<BudgetView> {
    authorize(principal, 'budgets:manage');
    const request = parsed(SetBudget, body ?? {}, 'budget');
    const team = request.team ?? principal.team;
    const currency = request.currency ?? (await this.currentCurrency(trace));
    const data: BudgetSet = {
      team,
      monthlyMicros: request.monthlyMicros,
      currency,
      onExceed: request.onExceed,
      thresholdsPercent: [...request.thresholdsPercent].sort((a, b) => a - b),
      setBy: { keyId: principal.keyId, team: principal.team },
      setAt: this.clock.now().toISOString(),
    };
    const account = await this.decide(team, () => [{ type: 'BudgetSet', data }], trace);
    this.logger.info({ team, monthlyMicros: data.monthlyMicros, currency, onExceed: data.onExceed, keyId: principal.keyId, correlationId: trace.correlationId }, 'budget set');
    return this.view(account);
  }

  /** Removes a team's budget (role `billing`). */
  async clear(principal: Principal, body: unknown, trace: { correlationId?: string | undefined } = {}): Promise<BudgetView> {
    authorize(principal, 'budgets:manage');
    const team = parsed(ClearBudget, body ?? {}, 'request').team ?? principal.team;
    const account = await this.decide(team, (a) => (a.budget ? [{ type: 'BudgetCleared', data: { team, clearedBy: { keyId: principal.keyId, team: principal.team }, clearedAt: this.clock.now().toISOString() } }] : []), trace);
    this.logger.info({ team, keyId: principal.keyId, correlationId: trace.correlationId }, 'budget cleared');
    return this.view(account);
  }

  /**
   * Reserves a new job's worst case before its `JobSubmitted` is recorded: undefined without a
   * budget; the figures when reserved (`held` under `hold`); BudgetExceededError under `refuse`
   * (the refusal is recorded too, so a replay finds it).
   */
  async admit(team: string, jobId: string, request: BudgetRequest, trace: { correlationId?: string | undefined } = {}): Promise<BudgetFigures | undefined> {
    await this.sweep(team);
    if (!(await this.catchUp(team)).budget) return undefined;
    const worst = await this.worstCase(request, trace);
    let admission: Admission = { kind: 'unbudgeted' };
    await this.decide(
      team,
      (account) => {
        admission = decideAdmission(account, { jobId, worst, now: this.clock.now() });
        return admission.kind === 'reserve' || admission.kind === 'refuse' ? admission.events : [];
      },
      { ...trace, jobId },
    );
    const a = admission as Admission;
    switch (a.kind) {
      case 'unbudgeted':
        return undefined;
      case 'currency_mismatch':
        throw new ValidationError(a.message, [{ path: 'budget.currency', message: a.message, fix: 'set the budget again in the price list\'s currency' }]);
      case 'refuse':
        this.logger.info({ team, jobId, ...a.figures, correlationId: trace.correlationId }, 'submit refused by the budget');
        throw new BudgetExceededError(a.message, a.figures);
      default:
        return a.figures;
    }
  }

  /** Takes back a reservation whose `JobSubmitted` could not be recorded (charged 0). */
  async withdraw(team: string, jobId: string): Promise<void> {
    await this.decide(team, (account) => decideRelease(account, { jobId, chargedMicros: 0, now: this.clock.now() }), { jobId });
  }

  /** What a job would reserve and leave of the team's budget now; undefined without a budget. Records nothing. */
  async estimate(team: string, request: BudgetRequest, trace: { correlationId?: string | undefined } = {}): Promise<BudgetFigures | undefined> {
    const account = await this.catchUp(team);
    if (!account.budget) return undefined;
    const worst = await this.worstCase(request, trace);
    const figures = budgetFigures(account, worst, this.clock.now());
    return { ...figures, held: account.budget.onExceed === 'hold' && (figures.remainingMicros ?? 0) < 0 };
  }

  // ── the single writer ───────────────────────────────────────────────────────────────────

  /**
   * Releases the reservation of every job of the team whose `JobEnded` the views hold, with what
   * it was billed in the budget's currency. Idempotent: a job released is no longer reserved.
   */
  private async sweep(team: string): Promise<void> {
    const account = await this.catchUp(team);
    const views = await this.feed.getMany([...account.reservations.keys()]);
    const ended = [...account.reservations.keys()].filter((jobId) => views.get(jobId)?.ended !== undefined);
    if (ended.length === 0) return;
    await this.decide(team, (a) => {
      const events: BudgetStreamEvent[] = [];
      let next = a;
      for (const jobId of ended) {
        const billed = views.get(jobId)?.ended?.billed;
        const charged = billed?.totals.find((t) => t.currency === a.budget?.currency)?.amountMicros ?? 0;
        for (const e of decideRelease(next, { jobId, chargedMicros: charged, now: this.clock.now() })) {
          events.push(e);
          next = evolveBudget(next, e);
        }
      }
      return events;
    });
  }

  /**
   * One decision on a team's account: in turn with the other decisions of this intake, on the
   * account caught up with the store, appended at the revision it was folded at. When another
   * intake appended first, decides again on the newer account.
   */
  private decide(team: string, decision: (account: BudgetAccount) => readonly BudgetStreamEvent[] | readonly { type: 'BudgetSet' | 'BudgetCleared'; data: unknown }[], ctx: { correlationId?: string | undefined; jobId?: string } = {}): Promise<BudgetAccount> {
    return this.locked(team, async () => {
      for (let attempt = 1; ; attempt++) {
        const account = await this.catchUp(team);
        const events = decision(account);
        if (events.length === 0) return account;
        try {
          await this.writer.append(budgetStreamId(team), events as never, {
            expectedRevision: account.revision < 0n ? 'no_stream' : account.revision,
            team,
            ...(ctx.jobId !== undefined ? { jobId: ctx.jobId } : {}),
            ...(ctx.correlationId !== undefined ? { correlationId: ctx.correlationId } : {}),
          });
        } catch (err) {
          if (err instanceof WrongExpectedVersionError && attempt < DECIDE_ATTEMPTS) continue;
          throw err;
        }
        return this.catchUp(team);
      }
    });
  }

  private async locked<T>(team: string, work: () => Promise<T>): Promise<T> {
    const before = this.locks.get(team) ?? Promise.resolve();
    const run = before.then(work, work);
    const tail = run.catch(() => undefined);
    this.locks.set(team, tail);
    try {
      return await run;
    } finally {
      if (this.locks.get(team) === tail) this.locks.delete(team);
    }
  }

  /** The team's account caught up with its stream in the store. */
  private async catchUp(team: string): Promise<BudgetAccount> {
    let account = this.accounts.get(team) ?? emptyBudgetAccount(team);
    const events = await this.store.readStream(budgetStreamId(team), { fromRevision: account.revision + 1n });
    for (const e of events) account = evolveBudget(account, e, e.revision);
    this.accounts.set(team, account);
    return account;
  }

  // ── helpers ─────────────────────────────────────────────────────────────────────────────

  private assertScope(principal: Principal, team: string, what: string): void {
    if (team !== principal.team && !allows(principal, 'budgets:manage')) {
      throw new ForbiddenError(`API key \`${principal.keyId}\` (role ${principal.role}) acts for team ${principal.team} only and may not ${what} of team ${team}; that needs a key with role billing`);
    }
  }

  /** The job's charge at most, priced by the ledger: its whole time limit on its model (or the dearest one when it names none). */
  private async worstCase(request: BudgetRequest, trace: { correlationId?: string | undefined }): Promise<WorstCase> {
    const q = Queries.Quote;
    const quote = await requestQuery<QuoteReply>(
      this.nc,
      q.subject,
      { gpus: request.gpus, durationMs: request.timeLimitMs, at: this.clock.now().toISOString(), ...(request.gpuModel !== undefined ? { gpuModel: request.gpuModel } : {}) },
      { request: q.schema, response: q.replySchema },
      trace.correlationId !== undefined ? { correlationId: trace.correlationId } : {},
    );
    return { worstCaseMicros: quote.amountMicros, currency: quote.currency, gpus: request.gpus, timeLimitMs: request.timeLimitMs, rateMicrosPerGpuHour: quote.rateMicrosPerGpuHour, priceListVersion: quote.priceListVersion };
  }

  private async currentCurrency(trace: { correlationId?: string | undefined }): Promise<string> {
    const q = Queries.ListPriceLists;
    const lists = await requestQuery<ListPriceListsReply>(this.nc, q.subject, {}, { request: q.schema, response: q.replySchema }, trace.correlationId !== undefined ? { correlationId: trace.correlationId } : {});
    const current = lists.versions.find((v) => v.version === lists.current) ?? lists.versions.at(-1);
    if (!current) throw new ValidationError('currency: no price list is published yet to take it from', [{ path: 'currency', message: 'no price list in force', fix: 'give the currency, e.g. `currency: EUR`' }]);
    return current.currency;
  }

  private async view(account: BudgetAccount): Promise<BudgetView> {
    const now = this.clock.now();
    const jobs = await this.feed.getMany([...account.reservations.keys()]);
    // Whether a job has had an attempt placed (it holds or held compute): placement never holds it back for the budget.
    const holdsCompute = (jobId: string) => {
      const job = jobs.get(jobId);
      return job !== undefined && (job.attempts.length > 0 || job.ended !== undefined);
    };
    const { month, spentMicros, reservedMicros } = budgetTotals(account, now);
    const view: BudgetView = {
      team: account.team,
      month,
      spentMicros,
      reservedMicros,
      remainingMicros: account.budget ? account.budget.monthlyMicros - spentMicros - reservedMicros : 0,
      heldJobs: [...account.reservations.keys()].filter((jobId) => !holdsCompute(jobId) && !reservationFits(account, jobId, now, holdsCompute)),
      thresholdsCrossed: [...(account.crossed.get(month) ?? [])],
      revision: account.revision.toString(),
    };
    if (account.budget) view.budget = account.budget;
    return view;
  }
}
