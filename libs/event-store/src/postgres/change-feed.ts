import pg from 'pg';

/**
 * Wakes waiting subscriptions when events may have been appended: on a PostgreSQL NOTIFY
 * (appends by any process), or at once when this process appended. A wake-up is only a hint
 * to read again; subscriptions also poll, so a lost notification or a broken LISTEN
 * connection costs latency, never events.
 *
 * One dedicated connection per store, opened with the first subscription.
 */
export class ChangeFeed {
  /** Bumped on every wake-up; a waiter that saw an older value does not wait. */
  private version = 0;
  /** Highest position some append is known to have committed (notification payloads, own appends). */
  private known = 0n;
  private waiters = new Set<() => void>();
  private client: pg.Client | undefined;
  private connecting: Promise<void> | undefined;
  private nextAttemptAt = 0;
  private closed = false;

  constructor(
    private readonly connectionString: string,
    private readonly channel: string,
    /** After a failed LISTEN connection, wait this long before trying again. */
    private readonly retryAfterMs = 2_000,
  ) {}

  /** The current version, to pass to `wait` after reading. */
  get current(): number {
    return this.version;
  }

  /**
   * Highest position known to be committed. A reader whose visibility frontier is not past it
   * knows an event is on its way (held back by an older transaction still in flight).
   */
  get knownPosition(): bigint {
    return this.known;
  }

  /** Wakes every waiter; `position`: the last position of the append that committed, when known. */
  bump(position?: bigint): void {
    if (position !== undefined && position > this.known) this.known = position;
    this.version++;
    const waiters = this.waiters;
    this.waiters = new Set();
    for (const wake of waiters) wake();
  }

  /**
   * Resolves on the first wake-up after `seen`, after `timeoutMs`, or when `signal` aborts,
   * whichever comes first. Never rejects.
   */
  async wait(seen: number, timeoutMs: number, signal: AbortSignal): Promise<void> {
    this.ensureListening();
    if (this.version !== seen || signal.aborted || this.closed) return;
    await new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        this.waiters.delete(done);
        resolve();
      };
      const timer = setTimeout(done, timeoutMs);
      signal.addEventListener('abort', done, { once: true });
      this.waiters.add(done);
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    this.bump();
    await this.connecting?.catch(() => undefined);
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => undefined);
  }

  private ensureListening(): void {
    if (this.closed || this.client || this.connecting || Date.now() < this.nextAttemptAt) return;
    const client = new pg.Client({ connectionString: this.connectionString });
    const lost = () => {
      if (this.client === client) this.client = undefined;
      this.nextAttemptAt = Date.now() + this.retryAfterMs;
      client.end().catch(() => undefined);
      // Whatever was appended while the connection was down is found by reading again.
      this.bump();
    };
    this.connecting = (async () => {
      try {
        await client.connect();
        client.on('notification', (n) => this.bump(/^\d+$/.test(n.payload ?? '') ? BigInt(n.payload!) : undefined));
        client.on('error', lost);
        client.on('end', lost);
        await client.query(`LISTEN ${this.channel}`);
        if (this.closed) await client.end();
        else this.client = client;
      } catch {
        // Polling carries on; try LISTEN again later.
        this.nextAttemptAt = Date.now() + this.retryAfterMs;
        await client.end().catch(() => undefined);
      } finally {
        this.connecting = undefined;
      }
    })();
  }
}

/**
 * Sends the NOTIFY that wakes other processes' subscriptions, after an append has committed and
 * at most once per round trip plus `windowMs`: the first append notifies at once, appends during
 * that NOTIFY or the window after it share one more. Not in the append's transaction: there,
 * PostgreSQL serializes every notifying commit of the database behind one lock, so concurrent
 * appenders would stop sharing WAL flushes (docs/decisions/0003-postgres-global-order.md).
 */
export class ChangeNotifier {
  private inFlight: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private pending = false;
  /** Highest position appended and not yet notified. */
  private position = 0n;

  constructor(
    /** Sends one NOTIFY whose payload is the position given. */
    private readonly send: (position: bigint) => Promise<unknown>,
    private readonly windowMs = 5,
  ) {}

  /** Asks for a NOTIFY soon; never throws (a lost notification costs a poll interval). */
  poke(position: bigint): void {
    if (position > this.position) this.position = position;
    if (this.inFlight || this.timer) {
      this.pending = true;
      return;
    }
    this.fire();
  }

  /** Sends a last pending NOTIFY and stops. */
  async close(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.inFlight;
    if (this.pending) {
      this.pending = false;
      await this.send(this.position).catch(() => undefined);
    }
  }

  private fire(): void {
    this.pending = false;
    this.inFlight = this.send(this.position)
      .then(
        () => undefined,
        () => undefined,
      )
      .finally(() => {
        this.inFlight = undefined;
        this.timer = setTimeout(() => {
          this.timer = undefined;
          if (this.pending) this.fire();
        }, this.windowMs);
        this.timer.unref();
      });
  }
}
