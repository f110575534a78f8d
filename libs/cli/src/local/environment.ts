/** Finding things on this machine: the checkout with its built services, nats-server, free ports. */
import { accessSync, constants, existsSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SERVICE_NAMES, type ServiceName } from '#contracts';
import { UsageError } from '../errors.js';

/** The gpunet checkout this CLI belongs to (the directory of its package.json). */
export function repoRoot(from = dirname(fileURLToPath(import.meta.url))): string {
  for (let dir = from; ; dir = dirname(dir)) {
    const pkg = join(dir, 'package.json');
    if (existsSync(pkg)) {
      try {
        if ((JSON.parse(readFileSync(pkg, 'utf8')) as { name?: string }).name === 'gpunet') return dir;
      } catch {
        // not ours: keep climbing
      }
    }
    if (dirname(dir) === dir) throw new UsageError(`cannot find the gpunet checkout above ${from}`);
  }
}

/** The built entry point of a service: `dist/services/<name>/src/main.js`. */
export function serviceEntry(root: string, service: ServiceName): string {
  return join(root, 'dist', 'services', service, 'src', 'main.js');
}

/** The built entry point of the execution service's recorder: `dist/services/execution/src/recorder/main.js`. */
export function recorderEntry(root: string): string {
  return join(root, 'dist', 'services', 'execution', 'src', 'recorder', 'main.js');
}

/** Every service entry point, or a UsageError naming the missing ones and `npm run build`. */
export function checkServicesBuilt(root: string): Record<ServiceName, string> {
  const entries = Object.fromEntries(SERVICE_NAMES.map((s) => [s, serviceEntry(root, s)])) as Record<ServiceName, string>;
  const missing = SERVICE_NAMES.filter((s) => !existsSync(entries[s]));
  if (missing.length > 0) {
    throw new UsageError(`the services are not built: ${missing.map((s) => entries[s]).join(', ')} missing`, [
      { path: 'dist/', message: `no build of ${missing.join(', ')}`, fix: 'run `npm run build`' },
    ]);
  }
  return entries;
}

/** nats-server: `GPUNET_NATS_SERVER_BIN`, else on PATH, else Debian's /usr/sbin and friends. */
export function findNatsServer(env: Readonly<Record<string, string | undefined>>): string {
  const executable = (p: string) => {
    try {
      accessSync(p, constants.X_OK);
      return true;
    } catch {
      return false;
    }
  };
  const explicit = env.GPUNET_NATS_SERVER_BIN;
  if (explicit) {
    if (executable(explicit)) return explicit;
    throw new UsageError(`GPUNET_NATS_SERVER_BIN=${explicit} is not an executable`, [{ path: 'GPUNET_NATS_SERVER_BIN', message: 'not executable', fix: 'point it at a nats-server 2.9+ binary, or unset it' }]);
  }
  const dirs = [...(env.PATH ?? '').split(delimiter).filter(Boolean), '/usr/sbin', '/usr/local/sbin', '/usr/local/bin'];
  for (const dir of dirs) if (executable(join(dir, 'nats-server'))) return join(dir, 'nats-server');
  throw new UsageError('nats-server is not installed', [
    { path: 'nats-server', message: 'not found on PATH or in /usr/sbin', fix: 'install it (`sudo apt-get install -y nats-server`), set GPUNET_NATS_SERVER_BIN, or pass `--nats URL` of a running server' },
  ]);
}

/** Ports this process has handed out: the OS may give a port back again once its probe socket closed. */
const handedOut = new Set<number>();

/**
 * A TCP port free on 127.0.0.1 right now (the OS picks it), never one this process handed out
 * before: `up` picks a port for nats-server, intake and every process's metrics in a row, and a
 * port closed after its probe can be picked again at once (two processes then fail with EADDRINUSE).
 */
export async function freePort(): Promise<number> {
  for (;;) {
    const port = await probePort();
    if (handedOut.has(port)) continue;
    handedOut.add(port);
    return port;
  }
}

function probePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}
