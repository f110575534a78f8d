import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A real `nats-server -js` of this test run's own: random port, temporary data directory. */
export interface TestNatsServer {
  readonly url: string;
  readonly port: number;
  readonly storeDir: string;
  /** The server's process id (a test may pause it: SIGSTOP, SIGCONT). */
  readonly pid: number;
  /** Everything the server logged so far (refusals: "Permissions Violation", "authentication error"). */
  log(): string;
  /** Stops the server (SIGTERM) and removes its data directory. */
  stop(): Promise<void>;
}

const NATS_BIN = process.env.GPUNET_NATS_SERVER_BIN ?? 'nats-server';

/**
 * Starts a JetStream-enabled nats-server on a random loopback port.
 * Fails loudly when the binary is missing: tests never skip a backend.
 */
export async function startNatsServer(opts: { storeDir?: string; port?: number; config?: (storeDir: string) => string } = {}): Promise<TestNatsServer> {
  const storeDir = opts.storeDir ?? (await mkdtemp(join(tmpdir(), 'gpunet-nats-')));
  const args = ['-js', '-a', '127.0.0.1', '-p', String(opts.port ?? -1), '-sd', storeDir];
  if (opts.config) {
    // A config file (e.g. libs/bus-auth's, with its jetstream block); address and port from the flags, which win.
    const file = join(storeDir, 'nats.conf');
    await writeFile(file, opts.config(storeDir), { mode: 0o600 });
    args.splice(0, args.length, '-c', file, '-a', '127.0.0.1', '-p', String(opts.port ?? -1));
  }
  const child: ChildProcess = spawn(NATS_BIN, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`nats-server did not start within 10s:\n${log}`)), 10_000);
    const onData = (chunk: Buffer) => {
      log += chunk.toString();
      const m = /Listening for client connections on [^\s]+:(\d+)/.exec(log);
      if (m && /Server is ready/.test(log)) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(new Error(`cannot run ${NATS_BIN}: ${err.message}. Install it: apt-get install nats-server`, { cause: err }));
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`nats-server exited with ${code} before it was ready:\n${log}`));
    });
  });
  return {
    url: `nats://127.0.0.1:${port}`,
    port,
    storeDir,
    pid: child.pid!,
    log: () => log,
    async stop() {
      if (child.exitCode === null) {
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGCONT'); // a paused server cannot act on SIGTERM
        child.kill('SIGTERM');
        await exited;
      }
      if (!opts.storeDir) await rm(storeDir, { recursive: true, force: true });
    },
  };
}
