/**
 * GPU quotas per team and GPU model, in the manner of Kueue's ClusterQueue (a nominal quota and
 * whether the team may borrow idle capacity beyond it) and Slurm's `GrpTRES` / `GrpTRESMins`:
 *
 * - `gpus`: GPUs of the model the team's attempts may hold at once (concurrent);
 * - `gpuHours`: GPU-hours of the model its attempts may hold per calendar month (UTC), counted
 *   from the held time (ComputeHeld → JobFinished, integer ms) of its attempts in that month;
 * - `borrow`: past `gpus`, the team may use GPUs of the model nobody else with quota room waits for.
 *
 * A quota is set by a `billing` key (the network's billing staff, as price lists are) and recorded
 * as `QuotaSet` in intake's stream `intake-quota-<team>`; placement folds it and honours it in
 * every pass. A team without a quota for a model is not limited on it. See decision 0027.
 */
import { z } from 'zod';
import { fieldError, strictObject } from './issues.js';
import { defineCommand, defineEvent, defineQuery } from './message.js';
import { GpuModel, TeamId, Timestamp } from './primitives.js';

const gpusError = fieldError('gpus', 'must be a whole number from 0 to 100000, or null for no limit', 'write e.g. `gpus: 16`');
const gpuHoursError = fieldError('gpuHours', 'must be a whole number of GPU-hours from 0 to 100000000, or null for no limit', 'write e.g. `gpuHours: 2000`');
const borrowError = fieldError('borrow', 'must be true or false', 'write `borrow: true` to let the team use idle GPUs past its quota');

/** GPUs held at once: a whole number, null for no limit. */
export const QuotaGpus = z.int({ error: gpusError }).min(0, { error: gpusError }).max(100_000, { error: gpusError }).nullable();
/** GPU-hours per calendar month (UTC): a whole number, null for no limit. */
export const QuotaGpuHours = z.int({ error: gpuHoursError }).min(0, { error: gpuHoursError }).max(100_000_000, { error: gpuHoursError }).nullable();

/** A calendar month (UTC), `YYYY-MM`. */
export const QuotaMonth = z.string().regex(/^\d{4}-(0[1-9]|1[0-2])$/).describe('A calendar month (UTC), e.g. `2026-12`.');

// ── event ─────────────────────────────────────────────────────────────────────────────────

export const QuotaSet = z.object({
  team: TeamId,
  gpuModel: GpuModel,
  gpus: QuotaGpus.describe('GPUs of the model the team\'s attempts may hold at once; null: no limit.'),
  gpuHours: QuotaGpuHours.describe('GPU-hours of the model the team\'s attempts may hold per calendar month (UTC); null: no limit.'),
  borrow: z.boolean().describe('Past `gpus`, the team may use GPUs of the model that no other team with quota room waits for (never past `gpuHours`).'),
  by: z.object({ keyId: z.string().min(1).describe('Id of the key (never the key itself).'), team: TeamId, role: z.string().min(1).describe('The key\'s role (`billing`).') }).describe('The API key that set it (id, team, role), never the key.'),
  setAt: Timestamp,
});
export type QuotaSet = z.output<typeof QuotaSet>;

export const quotaEvents = [
  defineEvent({
    name: 'QuotaSet',
    version: 1,
    producers: ['intake'],
    description: 'A team\'s GPU quota for one model was set (replacing the last): concurrent GPUs, GPU-hours per month, borrowing. Placement honours it from its next pass; running work is never stopped by it.',
    schema: QuotaSet,
  }),
] as const;

// ── command and queries ───────────────────────────────────────────────────────────────────

export const SetQuota = strictObject(
  {
    team: TeamId.describe('The team the quota is for.'),
    gpuModel: GpuModel.describe('The GPU model it limits.'),
    gpus: QuotaGpus.optional().describe('GPUs held at once; null or absent: no limit.'),
    gpuHours: QuotaGpuHours.optional().describe('GPU-hours per calendar month (UTC); null or absent: no limit.'),
    borrow: z.boolean({ error: borrowError }).optional().describe('Use idle GPUs past `gpus`. Default false.'),
  },
  'SetQuota',
).describe('Set a team\'s GPU quota for one model (role `billing`). Replaces the previous one for that team and model.');
export type SetQuota = z.output<typeof SetQuota>;

export const QuotaUsage = z
  .object({
    team: TeamId,
    gpuModel: GpuModel,
    gpus: QuotaGpus.describe('Concurrent GPU quota; null: no limit.'),
    gpuHours: QuotaGpuHours.describe('GPU-hours per month; null: no limit.'),
    borrow: z.boolean().describe('Whether the team may borrow idle GPUs past `gpus`.'),
    inUse: z.int().min(0).describe('GPUs of the model the team\'s attempts hold now (placed until released), borrowed ones included.'),
    borrowed: z.int().min(0).describe('Of those, GPUs held by attempts placed as borrowed (past the quota).'),
    heldMs: z.int().min(0).describe('GPU-ms of the model the team\'s attempts held this month (UTC) so far, running ones up to now.'),
    waiting: z.int().min(0).describe('The team\'s queued jobs of the model held back by this quota now.'),
    setAt: Timestamp.optional().describe('When the quota was set; absent for a team with usage but no quota.'),
  })
  .describe('One team\'s quota for one GPU model, and its use.');
export type QuotaUsage = z.output<typeof QuotaUsage>;

export const GetQuotas = strictObject(
  { team: TeamId.optional().describe('Only this team. Keys other than `billing` see their own team only.') },
  'GetQuotas',
).describe('GPU quotas and their use this month.');
export type GetQuotas = z.output<typeof GetQuotas>;

export const QuotasReply = z
  .object({
    month: QuotaMonth,
    quotas: z.array(QuotaUsage).describe('By team, then model: every quota set, and every team with GPUs in use on a model.'),
    at: Timestamp.describe('When this answer was made (placement clock).'),
  })
  .describe('GPU quotas and their use.');
export type QuotasReply = z.output<typeof QuotasReply>;

/** Internal (behind intake): placement's quota figures, for one team or every team. */
export const Quotas = strictObject({ team: TeamId.optional().describe('Only this team; absent: every team.') }, 'Quotas').describe('Internal: quotas and their use, from placement\'s state.');
export type Quotas = z.output<typeof Quotas>;

export const quotaCommands = [
  defineCommand({ name: 'SetQuota', version: 1, handler: 'intake', description: 'Set a team\'s GPU quota for one model (role `billing`). Same as `POST /v1/quotas`.', schema: SetQuota, replySchema: QuotaUsage }),
] as const;

export const quotaQueries = [
  defineQuery({ name: 'GetQuotas', version: 1, service: 'intake', description: 'GPU quotas and their use (own team; `billing`: any). Same as `GET /v1/quotas`.', schema: GetQuotas, replySchema: QuotasReply }),
  defineQuery({ name: 'Quotas', version: 1, service: 'placement', description: 'Internal: quotas and their use from the live state (intake answers `GetQuotas` and `gpunet capacity` with it).', schema: Quotas, replySchema: QuotasReply }),
] as const;
