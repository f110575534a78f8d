/**
 * Job log lines as execution agents publish them on `gpunet.logs.<team>.<jobId>` (stream GPUNET_LOGS).
 * Not events: they are kept for a while for `gpunet logs`, and stored with the outputs at the end.
 */
import { z } from 'zod';
import { AttemptId, Timestamp } from './primitives.js';

export const LogLine = z
  .object({
    ts: Timestamp.describe('Agent clock: when the line was read.'),
    stream: z.enum(['stdout', 'stderr', 'agent']).describe('`stdout`/`stderr` of the job, or `agent` for the agent\'s own notices (time limit, kill).'),
    line: z.string().describe('The line, without its newline; long lines are cut.'),
    attemptId: AttemptId,
  })
  .describe('One line of a job\'s output.');
export type LogLine = z.output<typeof LogLine>;
