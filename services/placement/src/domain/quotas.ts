/**
 * GPU quotas per team and model (decision 0027), in the manner of Kueue's ClusterQueue nominal
 * quota with borrowing and Slurm's `GrpTRES` / `GrpTRESMins`. Pure: the clock is an argument.
 *
 * - **Concurrent GPUs** (`gpus`): the GPUs of the model the team's attempts hold (placed until
 *   released). A job that would take the team past it waits with `QuotaExceeded`, unless the
 *   quota allows borrowing and no job of another team that has quota room on the model waits:
 *   then it starts, marked `borrowed`. Nothing is preempted to take borrowed GPUs back: the
 *   borrowing job runs to its end, and no new borrowing starts while another team waits.
 * - **GPU-hours per month** (`gpuHours`): GPU-ms the team's attempts of the model held in the
 *   calendar month (UTC) — ended attempts from ComputeHeld to their end, split at month
 *   boundaries, running ones up to now. At the limit the team's new jobs of the model wait with
 *   `QuotaExceeded`; running ones are never stopped. Borrowing never passes it.
 *
 * A job that asks for no model may run on any model its team has room on.
 */
import { type JobRecord, type PlacementState, type QuotaRecord } from './state.js';

/** ms in one GPU-hour. */
export const GPU_HOUR_MS = 3_600_000;

/** The calendar month (UTC) of `ms`, `YYYY-MM`. */
export function monthOf(ms: number): string {
  return new Date(ms).toISOString().slice(0, 7);
}

/** Epoch ms of the start of the calendar month (UTC) holding `ms`. */
export function monthStartOf(ms: number): number {
  const d = new Date(ms);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
}

/** Epoch ms of the start of the next calendar month (UTC) after the one holding `ms`. */
export function nextMonthStartOf(ms: number): number {
  const d = new Date(ms);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
}

const key = (team: string, model: string) => `${team}\u0000${model}`;
const monthKey = (team: string, model: string, month: string) => `${team}\u0000${model}\u0000${month}`;

/** The team's quota for `model`, if one is set. */
export function quotaOf(state: PlacementState, team: string, model: string): QuotaRecord | undefined {
  return state.quotas.get(team)?.get(model);
}

/**
 * Adds `gpus` GPUs held from `from` to `to` (epoch ms, integers) to the team's held GPU-ms of
 * `model`, split over the calendar months the span crosses.
 */
export function addHeld(state: PlacementState, team: string, model: string, from: number, to: number, gpus: number): void {
  let at = from;
  while (at < to) {
    const end = Math.min(to, nextMonthStartOf(at));
    const k = monthKey(team, model, monthOf(at));
    state.heldMs.set(k, (state.heldMs.get(k) ?? 0) + (end - at) * gpus);
    at = end;
  }
}

/** GPU-ms of `model` the team's attempts held in the month of `now`: ended attempts, plus running ones up to `now`. */
export function heldMsInMonth(state: PlacementState, team: string, model: string, now: number): number {
  let ms = state.heldMs.get(monthKey(team, model, monthOf(now))) ?? 0;
  const start = monthStartOf(now);
  for (const live of state.live.values()) {
    if (live.finished || live.heldAt === undefined || live.team !== team || live.gpuModel !== model) continue;
    ms += Math.max(0, now - Math.max(live.heldAt, start)) * live.gpus;
  }
  return ms;
}

/** GPUs each team holds per model now (placed until released), and how many of them are borrowed. */
export function gpusInUse(state: PlacementState): Map<string, { gpus: number; borrowed: number }> {
  const out = new Map<string, { gpus: number; borrowed: number }>();
  for (const live of state.live.values()) {
    if (live.team === undefined || live.gpuModel === undefined) continue;
    const k = key(live.team, live.gpuModel);
    const u = out.get(k) ?? { gpus: 0, borrowed: 0 };
    u.gpus += live.gpus;
    if (live.borrowed) u.borrowed += live.gpus;
    out.set(k, u);
  }
  return out;
}

/** A quota check: the job may start on the model (borrowing or not), or waits, with the figures. */
export type QuotaCheck = { ok: true; borrowed: boolean } | { ok: false; detail: string };

const OK: QuotaCheck = Object.freeze({ ok: true, borrowed: false });

/**
 * The quotas during one pass: what each team holds per model, updated as the pass starts jobs,
 * and which teams with quota room still wait for each model (they keep borrowers off it).
 */
export class QuotaGate {
  private readonly inUse: Map<string, { gpus: number; borrowed: number }>;
  private readonly held = new Map<string, number>();
  /** Model → team → jobs of that team with quota room waiting for the model (`*`: jobs that take any model). */
  private readonly waiting = new Map<string, Map<string, number>>();
  private readonly counted = new Map<JobRecord, string>();

  /** `waiting`: the pass's candidates (jobs not started yet). */
  constructor(
    private readonly state: PlacementState,
    private readonly now: number,
    waiting: readonly JobRecord[],
  ) {
    this.inUse = gpusInUse(state);
    for (const job of waiting) {
      const model = job.request.gpuModel;
      if (model !== undefined && !this.within(job, model).ok) continue;
      const m = model ?? '*';
      const teams = this.waiting.get(m) ?? new Map<string, number>();
      teams.set(job.team, (teams.get(job.team) ?? 0) + 1);
      this.waiting.set(m, teams);
      this.counted.set(job, m);
    }
  }

  /** Is any quota set at all? Without one, a pass needs no gate. */
  static needed(state: PlacementState): boolean {
    return state.quotas.size > 0;
  }

  /** GPU-ms of `model` the team held this month, at the pass time (cached per pass). */
  heldMs(team: string, model: string): number {
    const k = key(team, model);
    let ms = this.held.get(k);
    if (ms === undefined) this.held.set(k, (ms = heldMsInMonth(this.state, team, model, this.now)));
    return ms;
  }

  /** GPUs (and borrowed GPUs) of `model` the team holds, with this pass's starts. */
  used(team: string, model: string): { gpus: number; borrowed: number } {
    return this.inUse.get(key(team, model)) ?? { gpus: 0, borrowed: 0 };
  }

  /** Within its nominal quota (no borrowing)? */
  private within(job: JobRecord, model: string): QuotaCheck {
    const q = quotaOf(this.state, job.team, model);
    if (!q) return OK;
    if (q.gpuHours !== null) {
      const held = this.heldMs(job.team, model);
      if (held >= q.gpuHours * GPU_HOUR_MS) {
        return { ok: false, detail: `team ${job.team} used ${gpuHours(held)} of its ${q.gpuHours} ${model} GPU-hours in ${monthOf(this.now)}; they renew on ${new Date(nextMonthStartOf(this.now)).toISOString().slice(0, 10)}` };
      }
    }
    if (q.gpus === null) return OK;
    const inUse = this.used(job.team, model).gpus;
    if (inUse + job.request.gpus <= q.gpus) return OK;
    return { ok: false, detail: `team ${job.team} holds ${inUse} of its ${q.gpus} ${model} GPUs and the job asks for ${job.request.gpus}` };
  }

  /** May `job` start on `model` now, and would it borrow? */
  check(job: JobRecord, model: string): QuotaCheck {
    const nominal = this.within(job, model);
    if (nominal.ok) return nominal;
    const q = quotaOf(this.state, job.team, model)!;
    // Borrowing is for concurrent GPUs only: an exhausted month stays exhausted.
    const hoursLeft = q.gpuHours === null || this.heldMs(job.team, model) < q.gpuHours * GPU_HOUR_MS;
    if (!q.borrow || !hoursLeft) return { ok: false, detail: `${nominal.detail}${hoursLeft ? '; borrowing is off' : ''}` };
    const other = this.otherWaiting(job.team, model);
    if (other !== undefined) return { ok: false, detail: `${nominal.detail}; it may borrow only idle GPUs, and team ${other} waits for ${model} within its quota` };
    return { ok: true, borrowed: true };
  }

  /** A team other than `team` with a job waiting for `model` (or any model) within its quota. */
  private otherWaiting(team: string, model: string): string | undefined {
    for (const m of [model, '*']) {
      for (const [t, n] of this.waiting.get(m) ?? []) if (t !== team && n > 0) return t;
    }
    return undefined;
  }

  /** Records that `job` starts on `model` in this pass. */
  started(job: JobRecord, model: string, borrowed: boolean): void {
    const k = key(job.team, model);
    const u = this.inUse.get(k) ?? { gpus: 0, borrowed: 0 };
    u.gpus += job.request.gpus;
    if (borrowed) u.borrowed += job.request.gpus;
    this.inUse.set(k, u);
    const m = this.counted.get(job);
    if (m !== undefined) {
      const teams = this.waiting.get(m)!;
      teams.set(job.team, teams.get(job.team)! - 1);
      this.counted.delete(job);
    }
  }
}

/** GPU-ms as GPU-hours for people: whole hours, or one decimal below 10. */
function gpuHours(ms: number): string {
  const h = ms / GPU_HOUR_MS;
  return h >= 10 ? String(Math.floor(h)) : (Math.floor(h * 10) / 10).toString();
}

/** One team's quota for one model and its use, as `gpunet capacity` and `gpunet quota show` show it. */
export interface QuotaUsageView {
  team: string;
  gpuModel: string;
  gpus: number | null;
  gpuHours: number | null;
  borrow: boolean;
  inUse: number;
  borrowed: number;
  heldMs: number;
  waiting: number;
  setAt?: string;
}

/**
 * Every quota set (and every team holding GPUs of a model, with or without one) with its use at
 * `now`, by team then model; only `team`'s when given. `waiting` counts the team's placeable jobs
 * of that model the quota holds back now (a job that takes any model, under each quota that holds it back).
 */
export function quotaUsage(state: PlacementState, now: number, placeable: readonly JobRecord[], team?: string): QuotaUsageView[] {
  const gate = new QuotaGate(state, now, placeable);
  const rows = new Map<string, QuotaUsageView>();
  const row = (t: string, model: string): QuotaUsageView => {
    const k = key(t, model);
    let r = rows.get(k);
    if (!r) {
      const q = quotaOf(state, t, model);
      const used = gate.used(t, model);
      r = { team: t, gpuModel: model, gpus: q?.gpus ?? null, gpuHours: q?.gpuHours ?? null, borrow: q?.borrow ?? false, inUse: used.gpus, borrowed: used.borrowed, heldMs: Math.round(gate.heldMs(t, model)), waiting: 0, ...(q ? { setAt: q.setAt } : {}) };
      rows.set(k, r);
    }
    return r;
  };
  for (const [t, models] of state.quotas) if (team === undefined || t === team) for (const model of models.keys()) row(t, model);
  for (const live of state.live.values()) if (live.team !== undefined && live.gpuModel !== undefined && (team === undefined || live.team === team)) row(live.team, live.gpuModel);
  for (const job of placeable) {
    if (team !== undefined && job.team !== team) continue;
    const quotas = state.quotas.get(job.team);
    if (!quotas) continue;
    // A job that takes any model counts under each of its team's quotas that holds it back.
    const models = job.request.gpuModel !== undefined ? [job.request.gpuModel] : [...quotas.keys()];
    for (const model of models) if (quotas.has(model) && !gate.check(job, model).ok) row(job.team, model).waiting++;
  }
  return [...rows.values()].sort((a, b) => (a.team < b.team ? -1 : a.team > b.team ? 1 : a.gpuModel < b.gpuModel ? -1 : a.gpuModel > b.gpuModel ? 1 : 0));
}
