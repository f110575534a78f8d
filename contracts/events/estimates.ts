/**
 * Events of an estimate given before a job exists (`gpunet estimate`, `POST /v1/estimate`):
 * intake records what it answered in the estimate's own stream (`intake-estimate-<estimateId>`),
 * and, when a submit names the estimate, which job it was used by. The job's JobSubmitted then
 * carries the estimate as its `quote`, so the estimate's error is known when the job starts and ends.
 */
import { z } from 'zod';
import { defineEvent } from '../message.js';
import { Currency, DurationMs, EstimateId, GpuCount, GpuModel, JobId, Micros, TeamId, Timestamp } from '../primitives.js';

export const EstimateGiven = z.object({
  estimateId: EstimateId,
  team: TeamId.describe('The team the estimate was given to: only it may submit on it.'),
  requestedBy: z.string().optional().describe('Id of the API key (not the key itself) that asked.'),
  request: z
    .object({
      gpus: GpuCount,
      gpuModel: GpuModel.optional().describe('The GPU model the spec requires; absent: any model.'),
      timeLimitMs: DurationMs.min(1).describe('The spec\'s time limit, in ms.'),
    })
    .describe('The request part of the spec estimated: a submit on this estimate must ask for exactly this.'),
  gpuModel: GpuModel.describe('The GPU model the plan would run it on.'),
  expectedStart: Timestamp.describe('When the plan expected the job to start.'),
  expectedEnd: Timestamp.describe('Its expected start plus the time limit: the latest the plan expected it to end.'),
  quotedAt: Timestamp.describe('When intake gave the estimate.'),
  deadlineAt: Timestamp.optional().describe('The spec\'s deadline as an instant, if it had one.'),
  charge: z
    .object({
      amountMicros: Micros.describe('The charge of the whole time limit at the expected start: an upper bound.'),
      currency: Currency,
      rateMicrosPerGpuHour: Micros.describe('The rate applied.'),
      priceListVersion: z.int().min(1).describe('The price list version the rate came from.'),
    })
    .optional()
    .describe('The charge quoted with it, as the ledger priced it; absent when none was quoted.'),
});
export type EstimateGiven = z.output<typeof EstimateGiven>;

export const EstimateUsed = z.object({
  estimateId: EstimateId,
  team: TeamId,
  usedBy: JobId.describe('The job submitted on the estimate: the only one it is a promise to.'),
  usedAt: Timestamp.describe('When intake accepted the submit that named it.'),
});
export type EstimateUsed = z.output<typeof EstimateUsed>;

export const estimateEvents = [
  defineEvent({
    name: 'EstimateGiven',
    version: 1,
    producers: ['intake'],
    description:
      'Intake answered an estimate of a job not yet submitted with a start the plan expects (recorded before the answer, stream `intake-estimate-<estimateId>`): ' +
      'the request, the expected start and end, the charge quoted. A submit naming the estimate (`estimateId`) carries it as its JobSubmitted `quote`.',
    schema: EstimateGiven,
  }),
  defineEvent({
    name: 'EstimateUsed',
    version: 1,
    producers: ['intake'],
    description: 'A submit named the estimate and was accepted: the job it is the promise of. Appended once per estimate (at the revision read), so an estimate is one job\'s promise.',
    schema: EstimateUsed,
  }),
] as const;
