/**
 * Container work on a real agent: `kind: container` jobs run through Debian's podman (runc,
 * cgroupfs) from an image built on this machine with no registry (`support/container-image.ts`).
 * The same behaviour and assertions as script work where they apply — inputs read-only, outputs
 * collected, exit codes and outcomes, the warning signal and the time limit, cancel while
 * running, checkpoints saved and restored, logs streamed — then the confinement, each part proven
 * by a container that tries to get past it.
 */
import type { JobFinished, JobStarted, NodeRegistered, OutputsStored } from '#contracts';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { BlobStore } from '#blobs';
import { busyboxImage, type TestImage } from '../support/container-image.js';
import { settle } from '../support/jobs.js';
import { TestNetwork, withLogsOnFailure, NETWORK_START_HOOK_MS } from '../support/network.js';
import { until } from '../support/poll.js';

const run = promisify(execFile);
const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const BIN = join(ROOT, 'bin', 'gpunet.js');
const MiB = 1024 * 1024;

let net: TestNetwork | undefined;
let image: TestImage;
let dir: string;
const network = () => net!;
const e2e = (body: () => Promise<void>) => withLogsOnFailure(() => net, body);
const data = <T>(events: { type: string; data: unknown }[], type: string) => events.filter((e) => e.type === type).map((e) => e.data as T);

beforeAll(async () => {
  image = await busyboxImage();
  net = await TestNetwork.start({
    agents: 1,
    gpus: 2,
    env: { GPUNET_KILL_GRACE_MS: '1000', GPUNET_SECRET_FOR_TEST: 'agent-secret-123', GPUNET_JOB_MAX_PROCESSES: '64', GPUNET_DISK_CHECK_MS: '250' },
  });
  dir = await mkdtemp(join(tmpdir(), 'gpunet-containers-e2e-'));
}, NETWORK_START_HOOK_MS);

afterAll(async () => {
  await net?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
}, 60_000);

/** A container job running `script` with the image's `/bin/sh`. */
function containerJob(script: string, opts: { name?: string; timeLimit?: string; gpus?: number; extra?: Record<string, unknown> } = {}) {
  return {
    ...(opts.name && { name: opts.name }),
    work: { kind: 'container', image: image.ref, command: ['/bin/sh', '-c', script] },
    request: { gpus: opts.gpus ?? 1, timeLimit: opts.timeLimit ?? '1m' },
    ...opts.extra,
  } as never;
}

/** The job's log lines (stdout only, or every stream with agent notices). */
async function logLines(jobId: string, stream?: 'stdout'): Promise<string[]> {
  const lines: string[] = [];
  for await (const l of network().client().logs(jobId)) if (stream === undefined || l.stream === stream) lines.push(l.line);
  return lines;
}

/** Containers podman still holds for an attempt (running or stopped): none once it is over. */
async function containersOf(attemptId: string): Promise<string[]> {
  const { stdout } = await run('podman', ['ps', '--all', '--format', '{{.Names}}']);
  return stdout.split('\n').filter((n) => n === `gpunet-${attemptId}`);
}

/** `gpunet … --json` against the test network, from the spec's temp dir (for `from:` inputs). */
function gpunet(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args, '--data-dir', network().dataDir, '--json'], { cwd: dir, env: { ...process.env, GPUNET_URL: '', GPUNET_API_KEY: '' }, maxBuffer: 16 * MiB }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr });
    });
  });
}

describe('container jobs on a real agent (podman)', () => {
  it(
    'registers podman as the node’s container runtime',
    e2e(async () => {
      const regs = (await network().events({ types: ['NodeRegistered'] })).map((e) => e.data as NodeRegistered);
      expect(regs.at(-1)!.containerRuntimes).toEqual(['podman']);
    }),
  );

  it(
    'reads its inputs read-only, writes outputs that are collected, and JobStarted records the image digest and the GPUs handed over',
    e2e(async () => {
      await writeFile(join(dir, 'words.txt'), 'alpha\nbeta\ngamma\n');
      const script = [
        'wc -l < "$GPUNET_INPUT_DIR/data/words.txt" > "$GPUNET_OUTPUT_DIR/count.txt"',
        'if touch "$GPUNET_INPUT_DIR/data/planted" 2>/dev/null || rm "$GPUNET_INPUT_DIR/data/words.txt" 2>/dev/null; then echo inputs=writable; else echo inputs=read-only; fi',
        'echo "gpus=$CUDA_VISIBLE_DEVICES nvidia=$NVIDIA_VISIBLE_DEVICES cwd=$(pwd) home=$HOME"',
      ].join('; ');
      await writeFile(
        join(dir, 'container.yaml'),
        [
          'name: counted',
          `work: { kind: container, image: "${image.ref}", command: ["/bin/sh", "-c", ${JSON.stringify(script)}] }`,
          'data:',
          '  inputs:',
          '    - { name: words, path: data/words.txt, from: ./words.txt }',
          'request: { gpus: 2, timeLimit: 1m }',
          'outputs: { globs: [count.txt] }',
        ].join('\n'),
      );
      const submitted = await gpunet(['submit', 'container.yaml']);
      expect(submitted.code).toBe(0);
      const { jobId } = JSON.parse(submitted.stdout) as { jobId: string };
      const { views, events } = await settle(network(), [jobId]);
      expect(views.get(jobId)!.state).toBe('completed');

      const out = await logLines(jobId, 'stdout');
      expect(out).toContain('inputs=read-only');
      expect(out).toContain('gpus=0,1 nvidia=0,1 cwd=/gpunet/work home=/gpunet/work');
      const [started] = data<JobStarted>(events, 'JobStarted');
      // No NVIDIA device or CDI spec on this machine: the declared slots, by the environment only.
      expect(started!.work).toEqual({ kind: 'container', digest: image.id, runtime: 'podman', image: image.ref, gpus: { mode: 'slots', devices: ['0', '1'] } });
      const [finished] = data<JobFinished>(events, 'JobFinished');
      expect([finished!.outcome, finished!.exitCode]).toEqual(['completed', 0]);

      const [stored] = data<OutputsStored>(events, 'OutputsStored');
      const count = stored!.files.find((f) => f.path === 'count.txt')!;
      const blobs = await BlobStore.open(await network().nats());
      expect(Buffer.from(await blobs.readBytes(network().team, count.sha256, { size: count.size })).toString('utf8').trim()).toBe('3');
      expect(await containersOf(finished!.attemptId)).toEqual([]);
    }),
    120_000,
  );

  it(
    'ends failed with the container’s exit code',
    e2e(async () => {
      const { jobId } = await network().client().submit(containerJob('echo about to fail >&2; exit 3', { name: 'fails' }));
      const { views, events } = await settle(network(), [jobId]);
      expect(views.get(jobId)!.state).toBe('failed');
      const [finished] = data<JobFinished>(events, 'JobFinished');
      expect([finished!.outcome, finished!.exitCode]).toEqual(['failed', 3]);
      expect(await logLines(jobId)).toContain('about to fail');
    }),
    90_000,
  );

  it(
    'gets the warning signal before its time limit, then SIGTERM, then SIGKILL when it ignores both: timeout, and the container is gone',
    e2e(async () => {
      const script = 'trap "echo warned" USR1; trap "echo ignoring TERM" TERM; echo started; while true; do sleep 0.2; done';
      const spec = containerJob(script, { name: 'stubborn', extra: { request: { gpus: 1, timeLimit: '6s', warning: { signal: 'SIGUSR1', before: '3s' } } } });
      const { jobId } = await network().client().submit(spec);
      const { views, events } = await settle(network(), [jobId], { timeoutMs: 60_000 });
      expect(views.get(jobId)!.state).toBe('timeout');
      const lines = await logLines(jobId);
      // Sent to the container once it runs (its client would drop a signal before): what is left of the limit then.
      expect(lines.some((l) => /^\[gpunet\] SIGUSR1 sent: time limit in \d+ ms$/.test(l))).toBe(true);
      expect(lines).toContain('warned');
      expect(lines.indexOf('started')).toBeLessThan(lines.indexOf('warned'));
      expect(lines).toContain('ignoring TERM');
      const [started] = data<JobStarted>(events, 'JobStarted');
      const [finished] = data<JobFinished>(events, 'JobFinished');
      expect(finished!.outcome).toBe('timeout');
      const ranMs = Date.parse(finished!.finishedAt) - Date.parse(started!.startedAt);
      expect(ranMs).toBeGreaterThanOrEqual(6_000);
      expect(ranMs).toBeLessThan(6_000 + 1_000 + 10_000); // limit + grace + the client's own exit
      expect(await containersOf(finished!.attemptId)).toEqual([]);
    }),
    90_000,
  );

  it(
    'streams its log while it runs, and is cancelled while running: cancelled, the container gone',
    e2e(async () => {
      const client = network().client();
      const { jobId } = await client.submit(containerJob('i=0; while true; do i=$((i + 1)); echo "tick $i"; sleep 0.2; done', { name: 'cancelled', timeLimit: '2m' }));
      // A line read while the job still runs: streamed, not replayed at the end.
      await until(
        'a log line of the running container',
        async () => {
          const abort = new AbortController();
          const timer = setTimeout(() => abort.abort(), 1_000);
          try {
            for await (const l of client.logs(jobId, { follow: true, signal: abort.signal })) if (l.line === 'tick 3') return true;
          } catch {
            // aborted: not yet
          } finally {
            clearTimeout(timer);
          }
          return false;
        },
        { timeoutMs: 60_000, intervalMs: 200 },
      );
      expect((await client.getJob(jobId)).state).toBe('running');
      await client.cancel(jobId);
      const { views, events } = await settle(network(), [jobId]);
      expect(views.get(jobId)!.state).toBe('cancelled');
      const [finished] = data<JobFinished>(events, 'JobFinished');
      expect(finished!.outcome).toBe('cancelled');
      expect(await containersOf(finished!.attemptId)).toEqual([]);
    }),
    120_000,
  );

  it(
    'saves its checkpoint at exit and resumes from it in the next attempt (retry by exit code)',
    e2e(async () => {
      const script = [
        'step=0',
        '[ -f "$GPUNET_CHECKPOINT_DIR/step" ] && step=$(cat "$GPUNET_CHECKPOINT_DIR/step")',
        'step=$((step + 1))',
        'echo "$step" > "$GPUNET_CHECKPOINT_DIR/step"',
        'echo "at step $step"',
        '[ "$step" -ge 2 ] || exit 75',
      ].join('\n');
      const { jobId } = await network().client().submit(containerJob(script, { name: 'resumes', extra: { retry: { exitCodes: [75], maxAttempts: 3 } } }));
      const { views, events } = await settle(network(), [jobId], { timeoutMs: 90_000 });
      expect(views.get(jobId)!.state).toBe('completed');
      expect(data<JobFinished>(events, 'JobFinished').map((f) => [f.outcome, f.exitCode])).toEqual([
        ['failed', 75],
        ['completed', 0],
      ]);
      expect(data<{ sequence: number }>(events, 'JobCheckpointed').map((c) => c.sequence)).toEqual([1, 2]);
      expect(data<JobStarted>(events, 'JobStarted')[1]!.resumedFromCheckpoint).toBe(1);
      const lines = await logLines(jobId);
      expect(lines).toContain('at step 1');
      expect(lines).toContain('at step 2');
    }),
    120_000,
  );
});

describe('container jobs and a crashed agent', () => {
  it(
    'an agent SIGKILLed while its container runs: after restart the attempt is node_lost, its container is gone, and the job runs again',
    e2e(async () => {
      const client = network().client();
      const script = 'case "$GPUNET_ATTEMPT_ID" in *-a1) echo "first attempt sleeps"; sleep 120;; *) echo "attempt $GPUNET_ATTEMPT_ID finishes";; esac';
      const { jobId } = await client.submit(containerJob(script, { name: 'crash', timeLimit: '5m' }));
      const attemptId = `${jobId}-a1`;
      await until('the first attempt’s container to run', async () => (await containersOf(attemptId)).length === 1 && (await client.getJob(jobId)).state === 'running', {
        timeoutMs: 60_000,
        intervalMs: 200,
      });
      const nodeId = network().nodeIds[0]!;
      await network().kill(nodeId, 'SIGKILL');
      expect(await containersOf(attemptId)).toEqual([`gpunet-${attemptId}`]); // it outlived its agent: recovery must deal with it

      await network().restart(nodeId);
      const { views, events } = await settle(network(), [jobId], { timeoutMs: 150_000 });
      const finished = data<JobFinished>(events, 'JobFinished');
      expect(finished.find((f) => f.attemptId === attemptId)?.outcome).toBe('node_lost');
      expect(await containersOf(attemptId)).toEqual([]);
      expect(views.get(jobId)!.state).toBe('completed');
      expect(await logLines(jobId, 'stdout')).toContain(`attempt ${jobId}-a2 finishes`);
    }),
    240_000,
  );
});

describe('images as data (`gpunet image push`, `work.archive`)', () => {
  /** The agent's log lines of a job with this message. */
  async function agentLine(jobId: string, msg: string): Promise<Record<string, unknown>> {
    const text = await readFile(join(network().dataDir, 'logs', `${network().nodeIds[0]}.log`), 'utf8');
    const line = text
      .split('\n')
      .filter((l) => l.includes(`"${msg}"`) && l.includes(jobId))
      .at(-1);
    if (!line) throw new Error(`no "${msg}" line for ${jobId} in the agent's log`);
    return JSON.parse(line) as Record<string, unknown>;
  }

  it(
    'pushes an image once per team, stages it like a dataset before compute is held, loads it once per node, and records the archive and image digest',
    e2e(async () => {
      const archivePath = join(dir, 'busybox.tar');
      await run('podman', ['save', '--format', 'oci-archive', '--output', archivePath, image.ref]);
      const first = await gpunet(['image', 'push', 'busybox.tar']);
      expect(first.code).toBe(0);
      const pushed = JSON.parse(first.stdout) as { archive: { sha256: string; size: number }; bytesUploaded: number };
      expect(pushed.bytesUploaded).toBe(pushed.archive.size);
      const again = JSON.parse((await gpunet(['image', 'push', 'busybox.tar'])).stdout) as { archive: { sha256: string }; bytesUploaded: number };
      expect(again).toMatchObject({ archive: { sha256: pushed.archive.sha256 }, bytesUploaded: 0 }); // content-addressed: once per team
      // This node has never loaded the archive (an earlier run's tag is dropped; the image itself may stay).
      await run('podman', ['rmi', `localhost/gpunet-image:${pushed.archive.sha256}`]).catch(() => undefined);

      const client = network().client();
      const job = (name: string) =>
        ({
          name,
          work: { kind: 'container', image: 'busybox-from-archive', archive: { ...pushed.archive, keep: '1h' }, command: ['/bin/sh', '-c', 'echo "ran from the archive"'] },
          request: { gpus: 1, timeLimit: '1m' },
        }) as never;
      const { jobId: a } = await client.submit(job('archive-1'));
      await settle(network(), [a]);
      const { jobId: b } = await client.submit(job('archive-2'));
      const { views, events } = await settle(network(), [a, b]);
      expect(views.get(a)!.state).toBe('completed');
      expect(views.get(b)!.state).toBe('completed');
      expect(await logLines(b, 'stdout')).toContain('ran from the archive');

      // Staged (and so checked) before the hold, like every input.
      for (const jobId of [a, b]) {
        const types = events.filter((e) => (e.data as { jobId: string }).jobId === jobId).map((e) => e.type);
        expect(types.indexOf('InputsStaged')).toBeLessThan(types.indexOf('ComputeHeld'));
      }
      const started = data<JobStarted>(events, 'JobStarted');
      for (const s of started) expect(s.work).toMatchObject({ kind: 'container', runtime: 'podman', image: 'busybox-from-archive', archive: pushed.archive.sha256, digest: expect.stringMatching(/^sha256:[0-9a-f]{64}$/) });
      // The first job loaded it; the second found it on the node: no byte fetched, nothing loaded.
      expect(await agentLine(a, 'container image ready')).toMatchObject({ loaded: true });
      expect(await agentLine(b, 'container image ready')).toMatchObject({ loaded: false });
      expect(await agentLine(b, 'inputs staged')).toMatchObject({ downloadedBytes: 0 });
      const placedB = data<{ jobId: string; reason?: string }>(events, 'JobPlaced').find((p) => p.jobId === b);
      expect(placedB!.reason).toMatch(/already holds input gpunet-image .* in its cache/);
      // Saving an archive is not byte-for-byte repeatable, so each run pushes a new one: its tag goes (the image stays for the next run).
      await run('podman', ['rmi', `localhost/gpunet-image:${pushed.archive.sha256}`]).catch(() => undefined);
    }),
    180_000,
  );

  it(
    'removes the image loaded from an archive when the node\'s cache lets the archive go (no keep, no job needs it)',
    e2e(async () => {
      const archivePath = join(dir, 'busybox-no-keep.tar');
      await run('podman', ['save', '--format', 'oci-archive', '--output', archivePath, image.ref]);
      const pushed = JSON.parse((await gpunet(['image', 'push', 'busybox-no-keep.tar'])).stdout) as { archive: { sha256: string; size: number } };
      const tag = `localhost/gpunet-image:${pushed.archive.sha256}`;
      const exists = () => run('podman', ['image', 'exists', tag]).then(() => true, () => false);
      const client = network().client();
      const { jobId } = await client.submit({
        name: 'archive-no-keep',
        work: { kind: 'container', image: 'busybox-from-archive', archive: pushed.archive, command: ['/bin/sh', '-c', 'echo "ran once"'] },
        request: { gpus: 1, timeLimit: '1m' },
      } as never);
      const { views } = await settle(network(), [jobId]);
      expect(views.get(jobId)!.state).toBe('completed');
      expect(await agentLine(jobId, 'container image ready')).toMatchObject({ loaded: true });
      // Released with no keep: the node removes the cached archive (DataRemoved, node_cache) and the image loaded from it.
      await until(`${tag} removed`, async () => !(await exists()), { timeoutMs: 60_000 });
      // The node's record of it reaches the store after the image is gone (its journal, then the recorder).
      const removal = await until('the node_cache DataRemoved of the archive', async () =>
        (await network().events({ types: ['DataRemoved'] })).find((e) => {
          const d = e.data as { scope: string; blobs: { sha256: string }[] };
          return d.scope === 'node_cache' && d.blobs.some((b) => b.sha256 === pushed.archive.sha256);
        }),
      { timeoutMs: 60_000 });
      expect(removal.data).toMatchObject({ scope: 'node_cache', reason: 'job_released' });
    }),
    180_000,
  );

  it(
    'refuses a job whose image archive was never pushed before anything is placed or held, saying how to push it',
    e2e(async () => {
      const client = network().client();
      const { jobId } = await client.submit({
        work: { kind: 'container', image: 'never-pushed', archive: { sha256: 'e'.repeat(64), size: 1234 } },
        request: { gpus: 1, timeLimit: '1m' },
      } as never);
      const view = await client.waitFor(jobId, { timeoutMs: 60_000 });
      expect(['rejected', 'failed']).toContain(view.state);
      const events = await network().events({});
      const types = events.filter((e) => (e.data as { jobId?: string })?.jobId === jobId).map((e) => e.type);
      expect(types).not.toContain('JobPlaced');
      expect(types).not.toContain('ComputeHeld');
      const failed = events.find((e) => e.type === 'StagingFailed' && (e.data as { jobId: string }).jobId === jobId)!.data as { message: string };
      expect(failed.message).toMatch(/container image archive \(`work.archive`\).*not in the object store.*gpunet image push/s);
    }),
    90_000,
  );
});

describe('confinement of container jobs: each part tried by a container', () => {
  /** Runs `attempts` (shell tests that succeed only when the attack works) in one container; every one must be refused. */
  async function attack(name: string, attempts: string[], extra: Record<string, unknown> = {}): Promise<{ lines: string[]; jobId: string }> {
    const script = attempts.map((t, i) => `if ${t} >/dev/null 2>&1; then echo "BROKE-OUT ${i}"; else echo "refused ${i}"; fi`).join('\n');
    const { jobId } = await network().client().submit(containerJob(script, { name, extra }));
    const { views } = await settle(network(), [jobId]);
    expect(views.get(jobId)!.state).toBe('completed');
    const lines = await logLines(jobId, 'stdout');
    expect(lines.filter((l) => l.startsWith('BROKE-OUT'))).toEqual([]);
    expect(lines.filter((l) => l.startsWith('refused'))).toHaveLength(attempts.length);
    return { lines, jobId };
  }

  it(
    'runs as its own unprivileged uid, without the agent’s environment, and without network',
    e2e(async () => {
      const intake = new URL(network().url);
      const probe = [
        'echo "uid=$(id -u)"',
        'echo "leaked=$(env | grep -c -E "GPUNET_(NATS|STORE|SECRET|API)|agent-secret")"',
        'echo "interfaces=$(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d " " | tr "\\n" " ")"',
        `if nc -w 2 ${intake.hostname} ${intake.port} </dev/null 2>/dev/null; then echo net=yes; else echo net=no; fi`,
        'if wget -q -T 2 -O /dev/null http://10.88.0.1/ 2>/dev/null; then echo bridge=yes; else echo bridge=no; fi',
      ].join('\n');
      const { jobId } = await network().client().submit(containerJob(probe, { name: 'who-am-i' }));
      const { views } = await settle(network(), [jobId]);
      expect(views.get(jobId)!.state).toBe('completed');
      const out = await logLines(jobId, 'stdout');
      expect(out.find((l) => l.startsWith('uid='))).toMatch(/^uid=61\d{3}$/);
      expect(out).toContain('leaked=0');
      expect(out).toContain('interfaces=lo ');
      expect(out).toContain('net=no');
      expect(out).toContain('bridge=no');
    }),
    90_000,
  );

  it(
    'has no capabilities, gains no privileges, cannot write the image and sees no device but the basic ones',
    e2e(async () => {
      await attack('privileges', [
        'mount -t tmpfs none /mnt',
        'mknod /tmp/disk b 8 0',
        'chown 0:0 "$GPUNET_WORK_DIR"',
        'touch /bin/planted',
        // A user namespace of its own is allowed (as for script work) but gives no privilege outside it:
        'unshare -r sh -c "mknod /tmp/disk b 8 0 || cat /proc/kcore | head -c 1 | grep -q . || echo 1 > /proc/sys/kernel/sysrq"',
        'nsenter -t 1 -m true',
        'grep -q -E "^Cap(Eff|Prm|Bnd):\\s*0*[1-9a-f]" /proc/self/status',
        'grep -q -E "^NoNewPrivs:\\s*0$" /proc/self/status',
        'ls /dev/nvidia0 /dev/nvidiactl',
        '[ -n "$(find /dev -type b)" ]',
        '[ -e /dev/kmsg ] || [ -e /dev/mem ] || [ -e /dev/sda ] || [ -e /dev/vda ]',
        'cat /proc/kcore',
        'echo 1 > /proc/sys/kernel/sysrq',
      ]);
    }),
    90_000,
  );

  it(
    'is killed at its memory cap, and cannot start more processes than its cap',
    e2e(async () => {
      const client = network().client();
      const { jobId: hog } = await client.submit(containerJob('echo hogging; awk \'BEGIN { s = "xxxxxxxxxxxxxxxx"; while (1) s = s s }\'', { name: 'memory-hog', extra: { resources: { memory: '64MiB' } } }));
      // Counted with shell builtins only: once the cap is reached, nothing more can be forked.
      // (sh gives up at the first fork it cannot make, so the bomb runs in a shell of its own.)
      // The parent writes how many forks succeeded after each one: a count the children wrote
      // themselves missed those not yet scheduled when it was read (9 on a loaded machine).
      const bomb = 'sh -c \'i=0; while [ $i -lt 200 ]; do (exec sleep 30) & i=$((i + 1)); echo $i > /tmp/forked; done\' 2>/dev/null; read n < /tmp/forked; echo "running=$n"; exit 0';
      const { jobId: forks } = await client.submit(containerJob(bomb, { name: 'fork-bomb' }));
      const { views, events } = await settle(network(), [hog, forks]);
      expect(views.get(hog)!.state).toBe('failed');
      const [hogEnd] = data<JobFinished>(events.filter((e) => (e.data as { jobId: string }).jobId === hog), 'JobFinished');
      expect(hogEnd!.exitCode).toBe(137); // SIGKILLed by the kernel at the cgroup's limit
      const running = (await logLines(forks, 'stdout')).find((l) => l.startsWith('running='));
      expect(Number(running?.slice('running='.length))).toBeGreaterThan(10); // it did fork, up to its cap
      expect(Number(running?.slice('running='.length))).toBeLessThanOrEqual(64); // GPUNET_JOB_MAX_PROCESSES
    }),
    120_000,
  );

  it(
    'is stopped at its disk cap in its work directory, and its /tmp is bounded',
    e2e(async () => {
      const client = network().client();
      const { jobId: fills } = await client.submit(
        containerJob('i=0; while true; do dd if=/dev/zero of="$GPUNET_WORK_DIR/fill.$i" bs=1M count=4 2>/dev/null; i=$((i + 1)); sleep 0.05; done', { name: 'disk-filler', extra: { resources: { disk: '16MiB' } } }),
      );
      const { jobId: tmp } = await client.submit(
        containerJob('dd if=/dev/zero of=/tmp/big bs=1M count=64 2>/dev/null; echo "tmp=$(du -m /tmp/big | cut -f1)"', { name: 'tmp-filler', extra: { resources: { disk: '16MiB' } } }),
      );
      const { views, events } = await settle(network(), [fills, tmp]);
      expect(views.get(fills)!.state).toBe('failed');
      const [end] = data<JobFinished & { limit?: string }>(events.filter((e) => (e.data as { jobId: string }).jobId === fills), 'JobFinished');
      expect(end!.limit).toBe('disk_limit');
      const written = (await logLines(tmp, 'stdout')).find((l) => l.startsWith('tmp='));
      expect(Number(written?.slice('tmp='.length))).toBeLessThanOrEqual(16);
    }),
    120_000,
  );

  it(
    'cannot reach another job’s files, nor the agent’s directories',
    e2e(async () => {
      const client = network().client();
      const { jobId: victim } = await client.submit(containerJob('echo secret-of-victim > "$GPUNET_WORK_DIR/secret"; echo ready; sleep 30', { name: 'victim' }));
      await until('the victim to run', async () => (await logLines(victim, 'stdout').catch(() => [] as string[])).includes('ready'), { timeoutMs: 60_000, intervalMs: 250 });
      // The victim's file as the host sees it: the attacker is given its real path.
      const { stdout: found } = await run('find', [network().dataDir, '-path', `*/runs/${victim}/*/work/secret`]);
      const secret = found.trim().split('\n')[0]!;
      expect(secret).toMatch(/\/work\/secret$/);
      await attack('attacker', [
        `cat ${secret}`,
        `ls ${dirname(dirname(secret))}`,
        `ls ${network().dataDir}`,
        'grep -r -q secret-of-victim /gpunet /tmp /run /var /etc /bin',
        `[ -e ${ROOT} ]`,
      ]);
      await client.cancel(victim);
      await settle(network(), [victim]);
    }),
    120_000,
  );
});
