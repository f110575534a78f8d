/** Finding things on this machine: the checkout with its built services, nats-server, free ports. */
import { accessSync, constants, existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createServer } from 'node:net';
import { randomInt } from 'node:crypto';
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

/** Ports this process has handed out: never handed out twice, though a closed one is free again. */
const handedOut = new Set<number>();

/**
 * Ports handed out on this machine by any process, a file each: two `up`s (or test networks)
 * started at once each kept only their own ports apart, so both could pick the same free port and
 * the second process to bind it failed with EADDRINUSE.
 */
const RESERVED_DIR = join(tmpdir(), 'gpunet-ports');
/** How long a handed-out port stays reserved: ample for its process to start and bind it, then the port itself says it is taken. */
const RESERVED_FOR_MS = 5 * 60_000;

/**
 * Reserves `port` machine-wide for this process: false when another process reserved it in the
 * last {@link RESERVED_FOR_MS}. Where the directory cannot be written, the reservation is skipped
 * (true): the port is still checked free before it is handed out.
 */
export function reservePort(port: number, dir = RESERVED_DIR): boolean {
  const file = join(dir, String(port));
  const claim = () => writeFileSync(file, String(process.pid), { flag: 'wx' });
  try {
    mkdirSync(dir, { recursive: true });
    claim();
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') return true;
  }
  try {
    if (Date.now() - statSync(file).mtimeMs < RESERVED_FOR_MS) return false;
    rmSync(file, { force: true });
    claim();
    return true;
  } catch {
    return false;
  }
}

/** Lowest port of the range `up` picks from; the range ends just below the kernel's ephemeral ports. */
const PICK_FROM = 20_000;

/**
 * The ports the kernel hands out by itself (`listen(0)`, and the local end of every outgoing
 * connection): `/proc/sys/net/ipv4/ip_local_port_range`, else Linux's default.
 */
function ephemeralRange(): [number, number] {
  try {
    const [low, high] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
    if (Number.isSafeInteger(low) && Number.isSafeInteger(high)) return [low!, high!];
  } catch {
    // not Linux
  }
  return [32_768, 60_999];
}

/**
 * A TCP port free on 127.0.0.1 right now, for a process `up` starts a moment later. Picked at
 * random below the kernel's ephemeral range, where the kernel never assigns one by itself: a port
 * the OS picked for a probe was free only until the next outgoing connection on the machine took
 * it, and a process that bound it seconds later (a busy machine starts Node slowly) failed with
 * EADDRINUSE. Never one this process, or another in the last few minutes ({@link reservePort}),
 * handed out before; the OS picks when no range is left below.
 */
export async function freePort(): Promise<number> {
  const [low] = ephemeralRange();
  const span = low - PICK_FROM;
  for (let tries = 0; span > 0 && tries < 200; tries++) {
    const port = PICK_FROM + randomInt(span);
    if (handedOut.has(port) || !reservePort(port) || !(await canListen(port))) continue;
    handedOut.add(port);
    return port;
  }
  for (;;) {
    const port = await probePort(0);
    if (handedOut.has(port)) continue;
    handedOut.add(port);
    return port;
  }
}

function canListen(port: number): Promise<boolean> {
  return probePort(port).then(
    () => true,
    () => false,
  );
}

function probePort(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      const address = server.address();
      const bound = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(bound));
    });
  });
}
