import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ValidationError } from '#errors';
import { prepareRunDirs, removeRunDirs, type RunDirs } from './dirs.js';
import { ResourceLimitsUnavailableError } from './errors.js';
import type { LogStream } from './log-capture.js';
import { isProcessAlive } from './process-group.js';
import { runProcess, type RunOptions, type RunSpec } from './run-process.js';

// Real processes: bash scripts written into each run's work directory. Time limits are kept
// to a few hundred ms so the file stays fast on a 2-core machine.

let root: string;
let dirs: RunDirs;
let seq = 0;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'gpunet-run-'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});
beforeEach(async () => {
  dirs = await prepareRunDirs(root, 'job-test', `attempt-${++seq}`);
});
afterEach(async () => {
  await removeRunDirs(dirs);
});

/** Writes an executable bash script into the work directory and returns its relative command. */
async function script(body: string, name = 'job.sh'): Promise<string> {
  await writeFile(join(dirs.work, name), `#!/bin/bash\n${body}\n`);
  await chmod(join(dirs.work, name), 0o755);
  return `./${name}`;
}

function spec(command: string, more: Partial<RunSpec> = {}): RunSpec {
  return { jobId: 'job-test', attemptId: `attempt-${seq}`, dirs, command, timeLimitMs: 10_000, graceMs: 500, ...more };
}

/** Runs and collects every log line the listener saw. */
async function run(s: RunSpec, opts: RunOptions = {}) {
  const lines: [string, LogStream][] = [];
  const t0 = performance.now();
  const result = await runProcess(s, { onLog: (line, stream) => lines.push([line, stream]), ...opts });
  const elapsedMs = performance.now() - t0;
  const log = await readFile(result.logFile, 'utf8');
  return { result, lines, log, elapsedMs, out: lines.filter(([, st]) => st === 'stdout').map(([l]) => l) };
}

async function readPid(file: string): Promise<number> {
  return Number((await readFile(join(dirs.work, file), 'utf8')).trim());
}

describe('runProcess: environment and directories', () => {
  const secretNames = ['GPUNET_TEST_AGENT_SECRET', 'AWS_SECRET_ACCESS_KEY'];
  beforeAll(() => {
    process.env.GPUNET_TEST_AGENT_SECRET = 'hunter2';
    process.env.AWS_SECRET_ACCESS_KEY = 'wJalrXUtnFEMI';
  });
  afterAll(() => {
    for (const n of secretNames) delete process.env[n];
  });

  it('gives the job only the allow-listed environment, never the agent’s own', async () => {
    const { result, out } = await run(spec('env', { env: { EPOCHS: '3' }, gpus: [3, 1] }));
    expect(result.outcome).toBe('completed');
    expect(result.noneLeftOfJobUser).toBeUndefined(); // no job user: nothing is said about one
    const env = Object.fromEntries(out.map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));
    expect(Object.keys(env).sort()).toEqual(
      [
        'PATH', 'LANG', 'HOME', 'TMPDIR', 'TZ', 'EPOCHS', 'CUDA_VISIBLE_DEVICES', 'GPUNET_JOB_ID', 'GPUNET_ATTEMPT_ID',
        'GPUNET_INPUT_DIR', 'GPUNET_OUTPUT_DIR', 'GPUNET_CHECKPOINT_DIR', 'GPUNET_WORK_DIR', 'GPUNET_NODE_RANK', 'GPUNET_NUM_NODES',
      ].sort(),
    );
    // A one-node run is rank 0 of 1 (multi-node gangs add GPUNET_NODES).
    expect([env.GPUNET_NODE_RANK, env.GPUNET_NUM_NODES]).toEqual(['0', '1']);
    expect(out.join('\n')).not.toMatch(/hunter2|wJalrXUtnFEMI/);
    expect(env.CUDA_VISIBLE_DEVICES).toBe('3,1');
    expect(env.HOME).toBe(dirs.work);
    expect(env.TZ).toBe('UTC');
    expect(env.GPUNET_JOB_ID).toBe('job-test');
    expect(env.GPUNET_ATTEMPT_ID).toBe(`attempt-${seq}`);
  });

  it('runs in the work directory and finds its inputs, outputs and checkpoints through GPUNET_* variables', async () => {
    await writeFile(join(dirs.inputs, 'data.txt'), 'dataset\n');
    const cmd = await script(
      [
        'set -e',
        'pwd',
        'cat "$GPUNET_INPUT_DIR/data.txt"',
        'echo model > "$GPUNET_OUTPUT_DIR/model.bin"',
        'echo step-1 > "$GPUNET_CHECKPOINT_DIR/ckpt"',
        'echo "gpus=$CUDA_VISIBLE_DEVICES"',
        'echo "$1 $2"',
      ].join('\n'),
    );
    const { result, out } = await run(spec(cmd, { gpus: [0], args: ['two words', 'x'] }));
    expect(result).toMatchObject({ outcome: 'completed', exitCode: 0, signal: null, terminatedBy: null, killed: false, survivors: [] });
    expect(out).toEqual([dirs.work, 'dataset', 'gpus=0', 'two words x']);
    expect(await readFile(join(dirs.outputs, 'model.bin'), 'utf8')).toBe('model\n');
    expect(await readFile(join(dirs.checkpoints, 'ckpt'), 'utf8')).toBe('step-1\n');
  });

  it('stamps start and end with the injected clock', async () => {
    let t = 0;
    const { result } = await run(spec('true'), { clock: { now: () => (t += 1000) } });
    expect(result).toMatchObject({ startedAt: 1000, endedAt: 2000 });
  });

  it('tells onSpawn the group id and start time before the job\'s first line is read', async () => {
    const seen: string[] = [];
    const { result } = await run(spec(await script('echo "pgid $(ps -o pgid= $$ | tr -d \' \')"')), {
      onSpawn: (pid, startedAt) => seen.push(`spawn ${pid} ${startedAt}`),
      onLog: (line) => seen.push(line),
    });
    expect(seen).toEqual([`spawn ${result.pid} ${result.startedAt}`, `pgid ${result.pid}`]);
  });

  it('does not call onSpawn for a command that cannot be started', async () => {
    let called = false;
    const { result } = await run(spec('no-such-command-gpunet'), { onSpawn: () => (called = true) });
    expect(result.outcome).toBe('failed');
    expect(called).toBe(false);
  });

  it('refuses a command path outside the run before starting anything', async () => {
    await expect(runProcess(spec('/bin/true'))).rejects.toThrow(ValidationError);
    await expect(runProcess(spec('../../../../../bin/true'))).rejects.toThrow(ValidationError);
    await expect(runProcess(spec('true', { env: { GPUNET_OUTPUT_DIR: '/' } }))).rejects.toThrow(ValidationError);
    await expect(runProcess(spec('true', { warnSignal: 'SIGUSR1', warnBeforeMs: 20_000 }))).rejects.toThrow(ValidationError);
  });
});

describe('runProcess: exit status', () => {
  it('a nonzero exit is failed with its code', async () => {
    const { result } = await run(spec(await script('echo oops >&2\nexit 3')));
    expect(result).toMatchObject({ outcome: 'failed', exitCode: 3, signal: null });
  });

  it('a command that cannot be started is failed, with the reason in the result and the log', async () => {
    const { result, log } = await run(spec('no-such-command-gpunet'));
    expect(result).toMatchObject({ outcome: 'failed', exitCode: null, pid: null });
    expect(result.error).toMatch(/ENOENT/);
    expect(log).toMatch(/could not start no-such-command-gpunet/);
  });
});

describe('runProcess: logs', () => {
  it('captures stdout and stderr line-wise into the log file and the listener', async () => {
    const { result, lines, log } = await run(spec(await script('echo one\necho two >&2\nprintf "no newline"')));
    expect(lines).toEqual([
      ['one', 'stdout'],
      ['two', 'stderr'],
      ['no newline', 'stdout'],
    ]);
    expect(log).toBe('one\ntwo\nno newline\n');
    expect(result).toMatchObject({ logBytes: Buffer.byteLength(log), outputBytes: 18, truncated: false });
  });

  it('caps the log with a visible marker and keeps draining so the job is never blocked', async () => {
    const cmd = await script('for i in $(seq 1 20000); do echo "line $i"; done\necho done >&2');
    const { result, log, out } = await run(spec(cmd), { maxLogBytes: 1000 });
    expect(result.outcome).toBe('completed');
    expect(result.truncated).toBe(true);
    expect(result.outputBytes).toBe(
      Array.from({ length: 20000 }, (_, i) => `line ${i + 1}\n`).join('').length + 'done\n'.length,
    );
    const logLines = log.trimEnd().split('\n');
    expect(logLines[0]).toBe('line 1');
    expect(log).toMatch(/\[gpunet\] log truncated: it reached its cap of 1000 bytes/);
    expect(log).toMatch(/bytes of job output were discarded/);
    expect(log).not.toMatch(/line 20000/);
    expect(result.logBytes).toBe(Buffer.byteLength(log));
    expect(result.logBytes).toBeLessThan(1300);
    expect(out.length).toBeLessThan(200);
  });

  it('keeps all of a large output below the cap, with backpressure to the file', async () => {
    // 4 MB in 40 000 lines of 100 bytes, written as fast as the pipe allows; fold ends without a
    // newline, and the log terminates that last line.
    const cmd = await script("head -c 4000000 /dev/zero | tr '\\0' x | fold -w 100");
    const { result, log } = await run(spec(cmd), { onLog: undefined });
    expect(result).toMatchObject({ outcome: 'completed', truncated: false, outputBytes: 4_039_999, logBytes: 4_040_000 });
    expect(log.length).toBe(4_040_000);
  });

  it('goes on when the log file fails mid-run (disk full), and says so in the result', async () => {
    const cmd = await script("head -c 2000000 /dev/zero | tr '\\0' x | fold -w 100\necho finished > \"$GPUNET_OUTPUT_DIR/done\"");
    const lines: string[] = [];
    const result = await runProcess(spec(cmd), { logFile: '/dev/full', onLog: (l) => lines.push(l) });
    expect(result).toMatchObject({ outcome: 'completed', outputBytes: 2_019_999 });
    expect(result.logError).toMatch(/ENOSPC/);
    expect(lines).toHaveLength(20_000); // the live listener still saw everything
    expect(await readFile(join(dirs.outputs, 'done'), 'utf8')).toBe('finished\n');
  });
});

describe('runProcess: time limit', () => {
  it('SIGTERM then SIGKILL to the whole group: a child that ignores SIGTERM is gone afterwards', async () => {
    const cmd = await script(
      [
        "trap '' TERM", // leader ignores TERM too, so only SIGKILL ends it
        "bash -c 'trap \"\" TERM; echo $$ > child.pid; while :; do sleep 0.05; done' &",
        'echo started',
        'wait',
      ].join('\n'),
    );
    const { result, log, elapsedMs } = await run(spec(cmd, { timeLimitMs: 400, graceMs: 300 }));
    const child = await readPid('child.pid');
    expect(result).toMatchObject({ outcome: 'timeout', terminatedBy: 'time_limit', killed: true, signal: 'SIGKILL', exitCode: null, survivors: [] });
    // process.kill(pid, 0) alone would still succeed for a zombie, which a non-reaping PID 1 keeps forever.
    expect(isProcessAlive(child)).toBe(false);
    expect(isProcessAlive(result.pid!)).toBe(false);
    expect(log).toMatch(/time limit of 400 ms reached: SIGTERM sent, SIGKILL in 300 ms/);
    expect(log).toMatch(/SIGKILL sent to the process group/);
    // Not before the limit and its grace; no ceiling: only the SIGKILL can end this run (Jest's timeout guards).
    expect(elapsedMs).toBeGreaterThanOrEqual(650);
  });

  it('a SIGTERM handler gets its grace to checkpoint, and the run does not wait for the full grace', async () => {
    const cmd = await script(
      [
        'on_term() { sleep 0.1; echo saved > "$GPUNET_CHECKPOINT_DIR/last"; echo checkpointed; exit 0; }',
        'trap on_term TERM',
        'sleep 30 & wait $!',
        'wait $!',
      ].join('\n'),
    );
    // A grace of a minute: ending well inside it shows the run followed the process's exit, not
    // the grace's timer, however slow a loaded machine makes the handler.
    const { result, out, elapsedMs } = await run(spec(cmd, { timeLimitMs: 300, graceMs: 60_000 }));
    expect(result).toMatchObject({ outcome: 'timeout', exitCode: 0, killed: false });
    expect(out).toContain('checkpointed');
    expect(await readFile(join(dirs.checkpoints, 'last'), 'utf8')).toBe('saved\n');
    expect(elapsedMs).toBeLessThan(30_000);
  });

  it('sends the warning signal before the limit', async () => {
    const cmd = await script(
      ["trap 'echo warned' USR1", "trap 'echo stopping; exit 143' TERM", 'while :; do sleep 0.02; done'].join('\n'),
    );
    const { result, log, out } = await run(spec(cmd, { timeLimitMs: 600, warnSignal: 'SIGUSR1', warnBeforeMs: 300 }));
    expect(result).toMatchObject({ outcome: 'timeout', exitCode: 143, killed: false });
    expect(out).toEqual(['warned', 'stopping']);
    expect(log.indexOf('SIGUSR1 sent: time limit in 300 ms')).toBeLessThan(log.indexOf('warned'));
    expect(log.indexOf('warned')).toBeLessThan(log.indexOf('time limit of 600 ms reached'));
  });

  it('hands the warning to deliverWarning instead of the group, and logs it once it was delivered', async () => {
    // The script exits at the warning; the hook delivers it only once the script has said where
    // it is (a condition, not a guess at how long a start takes).
    const cmd = await script(["trap 'echo warned; exit 0' USR1", 'echo $$ > warn.pid.tmp; mv warn.pid.tmp warn.pid', 'while :; do sleep 0.02; done'].join('\n'));
    const calls: NodeJS.Signals[] = [];
    let doneSeen: AbortSignal | undefined;
    const deliverWarning = async (sig: NodeJS.Signals, done: AbortSignal) => {
      calls.push(sig);
      doneSeen = done;
      let pid = 0;
      while (pid === 0) pid = await readPid('warn.pid').catch(() => sleep(10).then(() => 0));
      process.kill(pid, sig);
    };
    const { result, log, out } = await run(spec(cmd, { timeLimitMs: 60_000, warnSignal: 'SIGUSR1', warnBeforeMs: 59_900 }), { deliverWarning });
    expect(result).toMatchObject({ outcome: 'completed', exitCode: 0, terminatedBy: null });
    expect(calls).toEqual(['SIGUSR1']);
    // Once: the group was not signalled besides the hook.
    expect(out).toEqual(['warned']);
    expect(log).toMatch(/SIGUSR1 sent: time limit in \d+ ms/);
    expect(doneSeen?.aborted).toBe(true);
  });

  it('drops a warning still on its way when the process ends, and says nothing of it', async () => {
    const cmd = await script(['until [ -e warning-asked ]; do sleep 0.01; done', 'exit 3'].join('\n'));
    const deliverWarning = async (_sig: NodeJS.Signals, done: AbortSignal) => {
      await writeFile(join(dirs.work, 'warning-asked'), '');
      await new Promise((_res, rej) => done.addEventListener('abort', () => rej(new Error('aborted')), { once: true }));
    };
    const { result, log } = await run(spec(cmd, { timeLimitMs: 60_000, warnSignal: 'SIGUSR1', warnBeforeMs: 59_900 }), { deliverWarning });
    expect(result).toMatchObject({ outcome: 'failed', exitCode: 3 });
    expect(log).not.toMatch(/SIGUSR1/);
  });

  it('stops what the main process left behind when it exits on its own', async () => {
    // The main process exits once the orphan has recorded its pid (not after a guessed 0.1 s).
    const cmd = await script(["bash -c 'trap \"\" TERM; echo $$ > orphan.pid.tmp; mv orphan.pid.tmp orphan.pid; exec sleep 600' &", 'until [ -s orphan.pid ]; do sleep 0.01; done', 'exit 0'].join('\n'));
    const { result, log } = await run(spec(cmd, { graceMs: 200 }));
    expect(result).toMatchObject({ outcome: 'completed', exitCode: 0, terminatedBy: null, killed: true });
    expect(log).toMatch(/main process exited; stopping 1 remaining process/);
    expect(isProcessAlive(await readPid('orphan.pid'))).toBe(false);
  });
});

describe('runProcess: cancellation', () => {
  it('an abort takes the same TERM → grace → KILL path', async () => {
    const cmd = await script(["bash -c 'trap \"\" TERM; echo $$ > child.pid.tmp; mv child.pid.tmp child.pid; exec sleep 600' &", 'sleep 600 & wait $!'].join('\n'));
    const ac = new AbortController();
    // Aborted once the child that ignores SIGTERM is up (a fixed 250 ms could come before it).
    const childUp = (async () => {
      while (!(await readFile(join(dirs.work, 'child.pid'), 'utf8').catch(() => ''))) await sleep(10);
      ac.abort();
    })();
    const { result, log } = await run(spec(cmd, { graceMs: 250 }), { signal: ac.signal });
    await childUp;
    // Only the abort can end this run: both processes sleep ten minutes (Jest's timeout guards).
    expect(result).toMatchObject({ outcome: 'cancelled', terminatedBy: 'cancel', signal: 'SIGTERM', killed: true });
    expect(isProcessAlive(await readPid('child.pid'))).toBe(false);
    expect(log).toMatch(/cancelled: SIGTERM sent/);
  });

  it('an already aborted run does not start', async () => {
    const cmd = await script('touch started');
    const { result, log } = await run(spec(cmd), { signal: AbortSignal.abort() });
    expect(result).toMatchObject({ outcome: 'cancelled', pid: null });
    expect(log).toMatch(/cancelled before the process started/);
    await expect(readFile(join(dirs.work, 'started'))).rejects.toMatchObject({ code: 'ENOENT' });
  });
});

describe('runProcess: escape and resource limits', () => {
  it('does not hang on a process that left the group while holding the output pipe', async () => {
    const cmd = await script('setsid bash -c \'echo $$ > escaped.pid.tmp; mv escaped.pid.tmp escaped.pid; exec sleep 600\' &\nuntil [ -s escaped.pid ]; do sleep 0.01; done\necho bye');
    const { result, log, elapsedMs } = await run(spec(cmd), { drainMs: 200 });
    const escaped = await readPid('escaped.pid');
    try {
      expect(result.outcome).toBe('completed');
      expect(log).toMatch(/output is still held open by a process outside the run/);
      // The escaped process holds the pipe for ten minutes: ending at all is the drain bound at work.
      expect(elapsedMs).toBeLessThan(60_000);
    } finally {
      process.kill(escaped, 'SIGKILL');
    }
  });

  it('applies limits through prlimit, which the job cannot raise', async () => {
    const cmd = await script(
      ['echo "nofile=$(ulimit -n) as=$(ulimit -v) fsize=$(ulimit -f) core=$(ulimit -c)"', 'ulimit -n 1024 2>/dev/null || echo "cannot raise"', 'exec 40</dev/null || echo "fd 40 refused"'].join('\n'),
    );
    const { result, out } = await run(
      spec(cmd, { limits: { maxOpenFiles: 32, maxAddressSpaceBytes: 4 * 1024 ** 3, maxFileSizeBytes: 1024 * 1024, maxCoreFileBytes: 0 } }),
    );
    expect(result.outcome).toBe('completed');
    // ulimit -v and -f report KiB (bash counts -f in 1024-byte blocks).
    expect(out).toEqual(['nofile=32 as=4194304 fsize=1024 core=0', 'cannot raise', 'fd 40 refused']);
  });

  it('enforces the file size limit', async () => {
    const cmd = await script('head -c 200000 /dev/zero > "$GPUNET_OUTPUT_DIR/big"');
    const { result } = await run(spec(cmd, { limits: { maxFileSizeBytes: 100_000 } }));
    expect(result).toMatchObject({ outcome: 'failed' });
    expect((await readFile(join(dirs.outputs, 'big'))).length).toBe(100_000);
  });

  it('refuses limits it cannot apply instead of running without them', async () => {
    await expect(runProcess(spec('true', { limits: { maxOpenFiles: 64 } }), { prlimitPath: '/nonexistent/prlimit' })).rejects.toThrow(
      ResourceLimitsUnavailableError,
    );
  });
});
