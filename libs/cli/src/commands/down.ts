/** `gpunet down`: stops what `gpunet up` started — services and agents first, nats-server last. */
import { parseDuration } from '#contracts';
import type { CommandContext } from '../context.js';
import { UsageError } from '../errors.js';
import { EXIT, type ExitCode } from '../exit-codes.js';
import { table } from '../format.js';
import { stopProcesses, type StopResult } from '../local/processes.js';
import { removeState } from '../local/state.js';

export interface DownOptions {
  timeout: string;
}

export async function down(ctx: CommandContext, opts: DownOptions): Promise<ExitCode> {
  const graceMs = parseDuration(opts.timeout);
  if (graceMs === undefined) throw new UsageError(`--timeout must be a duration such as 30s, got \`${opts.timeout}\``, [{ path: '--timeout', message: 'must be a duration', fix: 'write e.g. `--timeout 30s`' }]);
  const state = await ctx.state();
  if (!state) {
    ctx.out.doc({ dataDir: ctx.dataDir, stopped: [] });
    ctx.out.line(`nothing to stop: no ${ctx.statePath}`);
    return EXIT.ok;
  }
  // Services drain their consumers and flush their relays through NATS, so NATS goes last.
  const workers = await stopProcesses(state.processes.filter((p) => p.role !== 'nats'), { graceMs });
  const nats = await stopProcesses(state.processes.filter((p) => p.role === 'nats'), { graceMs: Math.min(graceMs, 10_000) });
  await removeState(ctx.dataDir);
  const results: StopResult[] = [...workers, ...nats];
  ctx.out.doc({ dataDir: ctx.dataDir, stopped: results });
  const describe = (r: StopResult) => (r.result === 'stopped' ? `stopped in ${(r.ms / 1000).toFixed(1)} s` : r.result === 'killed' ? `killed (SIGKILL) after ${(r.ms / 1000).toFixed(1)} s` : 'was not running');
  ctx.out.line(table(['PROCESS', 'PID', 'RESULT'], results.map((r) => [r.name, String(r.pid), describe(r)]), ['l', 'r', 'l']));
  const killed = results.filter((r) => r.result === 'killed').length;
  ctx.out.line(`gpunet is down${killed > 0 ? ` (${killed} had to be killed: see ${ctx.dataDir}/logs/)` : ''}`);
  return EXIT.ok;
}
