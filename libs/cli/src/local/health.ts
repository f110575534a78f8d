/**
 * Waiting for a local network to be ready: every service answers `gpunet.qry.<service>.Health`
 * over NATS, and every execution agent answers as its own instance (agents share the
 * `execution` subject, so their answers are told apart by `instance`).
 */
import { HealthReply, querySubject, replyEnvelope, type ServiceName } from '#contracts';
import { natsAuthOptions } from '#identity';
import { connect, type NatsConnection } from '@nats-io/transport-node';

const HealthEnvelope = replyEnvelope(HealthReply);
const utf8 = new TextDecoder();

/** What must answer: services by name, agents by node id. */
export interface HealthTargets {
  services: readonly ServiceName[];
  agents: readonly string[];
}

/** Names (service names and agent node ids) that answered healthy (`ok` or `degraded`). */
export async function probeHealth(nc: NatsConnection, targets: HealthTargets, timeoutMs = 1_000): Promise<Set<string>> {
  const healthy = new Set<string>();
  const accept = (data: Uint8Array): HealthReply | undefined => {
    try {
      const reply = HealthEnvelope.safeParse(JSON.parse(utf8.decode(data)));
      return reply.success && reply.data.ok && reply.data.data.status !== 'failing' ? reply.data.data : undefined;
    } catch {
      return undefined;
    }
  };
  const services = targets.services.filter((s) => s !== 'execution').map(async (service) => {
    try {
      const msg = await nc.request(querySubject(service, 'Health'), '{}', { timeout: timeoutMs });
      if (accept(msg.data)) healthy.add(service);
    } catch {
      // no responder yet, or too slow: not healthy this round
    }
  });
  const agents = (async () => {
    if (targets.agents.length === 0) return;
    try {
      const replies = await nc.requestMany(querySubject('execution', 'Health'), '{}', { strategy: 'timer', maxWait: Math.min(timeoutMs, 500) });
      for await (const msg of replies) {
        const reply = accept(msg.data);
        if (reply?.instance && targets.agents.includes(reply.instance)) healthy.add(reply.instance);
      }
    } catch {
      // no agent answers yet
    }
  })();
  await Promise.all([...services, agents]);
  return healthy;
}

/** Options of {@link waitHealthy}. */
export interface WaitHealthyOptions {
  /**
   * How long to wait for the next process to answer: the wait goes on while processes keep
   * becoming healthy, so fifty agents starting on a busy machine are waited for, and gives up
   * once none has for this long.
   */
  timeoutMs: number;
  /** Called after each round with the names still missing. */
  onRound?: (missing: string[], healthy: number, total: number) => void;
  /** Called each round before probing; throw to give up (e.g. a process exited). */
  check?: () => void;
  pollMs?: number;
  /** The NKey seed file to connect with (the operator's, on a network `gpunet up` started). */
  keyFile?: string;
  /** How long one attempt to open the health connection may take before the next starts. Default 10 s. */
  connectAttemptMs?: number;
}

/**
 * Resolves once everything answered healthy; rejects with the names still missing once none
 * became healthy for `timeoutMs`.
 */
export async function waitHealthy(natsUrl: string, targets: HealthTargets, options: WaitHealthyOptions): Promise<void> {
  const nc = await connectForHealth(natsUrl, options);
  const all = [...targets.services.filter((s) => s !== 'execution'), ...targets.agents];
  const done = new Set<string>();
  let deadline = Date.now() + options.timeoutMs;
  try {
    for (;;) {
      options.check?.();
      const pending: HealthTargets = {
        services: targets.services.filter((s) => !done.has(s)),
        agents: targets.agents.filter((a) => !done.has(a)),
      };
      const answered = await probeHealth(nc, pending);
      for (const name of answered) done.add(name);
      if (answered.size > 0) deadline = Date.now() + options.timeoutMs;
      const missing = all.filter((n) => !done.has(n));
      options.onRound?.(missing, all.length - missing.length, all.length);
      if (missing.length === 0) return;
      if (Date.now() >= deadline) throw new HealthTimeoutError(missing, options.timeoutMs);
      await new Promise((r) => setTimeout(r, options.pollMs ?? 250));
    }
  } finally {
    await nc.close().catch(() => undefined);
  }
}

/** How long one attempt to open the health connection may take before the next one starts. */
const HEALTH_CONNECT_ATTEMPT_MS = 10_000;

/**
 * Opens the connection `waitHealthy` asks on. One handshake can stall on a server busy accepting
 * fifty agents at once; a fresh attempt then goes through where the stalled one would have waited
 * out the whole budget. Gives up after `timeoutMs` without a connection, with the last attempt's error.
 */
async function connectForHealth(natsUrl: string, options: WaitHealthyOptions): Promise<NatsConnection> {
  const auth = await natsAuthOptions(options.keyFile);
  const deadline = Date.now() + options.timeoutMs;
  let attempts = 0;
  for (;;) {
    options.check?.();
    attempts++;
    const attemptMs = options.connectAttemptMs ?? HEALTH_CONNECT_ATTEMPT_MS;
    const timeout = Math.max(Math.min(1_000, attemptMs), Math.min(attemptMs, deadline - Date.now()));
    try {
      return await connect({ ...auth, servers: natsUrl.split(','), name: 'gpunet-cli-health', noAsyncTraces: true, maxReconnectAttempts: 5, timeout });
    } catch (err) {
      if (Date.now() >= deadline) {
        throw new Error(`cannot connect to NATS at ${natsUrl} to ask for health within ${options.timeoutMs} ms (${attempts} attempts): ${(err as Error).message}`, { cause: err });
      }
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}

/** Some processes did not answer their health query in time. */
export class HealthTimeoutError extends Error {
  constructor(
    readonly missing: readonly string[],
    readonly timeoutMs: number,
  ) {
    super(`none became healthy for ${timeoutMs} ms: ${missing.join(', ')}`);
    this.name = 'HealthTimeoutError';
  }
}

/** Resolves once a NATS server accepts connections at `url`, or rejects after `timeoutMs`. */
export async function waitForNats(url: string, options: { timeoutMs: number; check?: () => void; keyFile?: string }): Promise<void> {
  const deadline = Date.now() + options.timeoutMs;
  const auth = await natsAuthOptions(options.keyFile);
  for (;;) {
    options.check?.();
    try {
      // Each probe may take up to 5 s (an NKey handshake on a loaded machine), never past the deadline.
      const timeout = Math.max(1_000, Math.min(5_000, deadline - Date.now()));
      const nc = await connect({ ...auth, servers: url, name: 'gpunet-cli-probe', timeout, reconnect: false });
      await nc.close();
      return;
    } catch (err) {
      if (Date.now() >= deadline) throw new Error(`no NATS server answers at ${url} after ${options.timeoutMs} ms: ${(err as Error).message}`, { cause: err });
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}
