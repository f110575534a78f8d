/** `gpunet wait ID`: follows a job through its states; exit 0 only when it completed. */
import { parseDuration, type JobView } from '#contracts';
import { WaitTimeoutError, type GpunetClient } from '#sdk';
import type { CommandContext } from '../context.js';
import { UsageError } from '../errors.js';
import { exitCodeForState, EXIT, type ExitCode } from '../exit-codes.js';
import { clockTime } from '../format.js';
import { spinner } from '../progress.js';
import { stateText } from '../render.js';

export interface WaitFlags {
  timeout?: string;
}

/** The `--timeout` of `wait` and `submit --wait`, in ms; undefined: no limit. */
export function waitTimeoutMs(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const ms = parseDuration(text);
  if (ms === undefined || ms <= 0) throw new UsageError(`--timeout must be a duration such as 10m, got \`${text}\``, [{ path: '--timeout', message: 'must be a duration', fix: 'write e.g. `--timeout 10m`' }]);
  return ms;
}

/**
 * Waits for the job, printing each state it passes through (with the time the job's own
 * events state), and returns its final view. A spinner shows the current state on a terminal.
 */
export async function followJob(ctx: CommandContext, client: GpunetClient, jobId: string, timeoutMs: number | undefined): Promise<JobView> {
  const spin = spinner(ctx.out, `${jobId}: waiting`);
  let printed = 0;
  try {
    const final = await client.waitFor(jobId, {
      ...(timeoutMs !== undefined ? { timeoutMs } : {}),
      onUpdate: (view, previous) => {
        // One line per new event of the timeline: the states a job passes through quickly
        // (placed → running in a few ms) show even when a poll missed them.
        if (!previous || previous.state !== view.state) spin.text(`${jobId}: ${view.state}`);
        for (const t of view.timeline.slice(printed)) {
          if (!ctx.out.json) spin.log(`${clockTime(t.at)}  ${t.type}`);
        }
        printed = view.timeline.length;
      },
    });
    spin.stop();
    return final;
  } catch (err) {
    spin.stop();
    throw err;
  }
}

export async function wait(ctx: CommandContext, jobId: string, flags: WaitFlags): Promise<ExitCode> {
  const timeoutMs = waitTimeoutMs(flags.timeout);
  const client = await ctx.client();
  try {
    const view = await followJob(ctx, client, jobId, timeoutMs);
    ctx.out.doc(view);
    ctx.out.line(`${jobId}: ${stateText(view)}`);
    return exitCodeForState(view.state);
  } catch (err) {
    if (err instanceof WaitTimeoutError) {
      ctx.out.doc({ jobId, state: err.lastState, timedOut: true });
      ctx.out.line(`${jobId}: still ${err.lastState ?? 'unknown'} after ${flags.timeout}`);
      return EXIT.failure;
    }
    throw err;
  }
}
