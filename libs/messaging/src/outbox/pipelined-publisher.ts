import { createInbox, type MsgHdrs, type NatsConnection, type Subscription } from '@nats-io/transport-node';
import type { PubAck } from '@nats-io/jetstream';
import { GpunetError } from '#errors';

/** JetStream refused a publish, or no stream captures its subject. Retryable: the relay resumes. */
export class PublishFailedError extends GpunetError {
  readonly code = 'publish_failed';
  readonly retryable = true;
  constructor(
    message: string,
    readonly subject: string,
    /** The JetStream API error code when the server gave one (e.g. 10077 for a full stream). */
    readonly apiErrorCode?: number,
  ) {
    super(message);
  }
}

/** No PubAck within the timeout. Retryable. */
export class PublishTimeoutError extends GpunetError {
  readonly code = 'publish_timeout';
  readonly retryable = true;
  constructor(
    readonly subject: string,
    readonly timeoutMs: number,
  ) {
    super(`no PubAck for a publish on ${subject} within ${timeoutMs} ms`);
  }
}

interface Pending {
  subject: string;
  sentAt: number;
  onAck: (ack: PubAck) => void;
  onError: (err: Error) => void;
}

const utf8 = new TextDecoder();

/**
 * Publishes to JetStream with many PubAcks outstanding, for the outbox relay's hot path. The
 * stock `js.publish` is a full request per message (its own timer, promise, mux entry and, on
 * completion, an Error object); here every publish carries a reply subject `<inbox>.<n>` under
 * one subscription, and one interval checks the oldest outstanding publish for a timeout.
 * Messages go out in call order on one connection, so the stream stores them in that order.
 */
export class PipelinedPublisher {
  private readonly prefix: string;
  private readonly sub: Subscription;
  private readonly pending = new Map<number, Pending>();
  private readonly timer: NodeJS.Timeout;
  private next = 0;

  constructor(
    private readonly nc: NatsConnection,
    /** Default 5000 ms. */
    private readonly timeoutMs = 5_000,
  ) {
    // Under the connection's own inbox prefix: an identity may subscribe to its own replies only.
    this.prefix = `${createInbox((nc as unknown as { options?: { inboxPrefix?: string } }).options?.inboxPrefix)}.`;
    this.sub = nc.subscribe(`${this.prefix}*`, {
      callback: (err, msg) => {
        if (err) {
          for (const p of this.pending.values()) p.onError(err);
          this.pending.clear();
          return;
        }
        const id = Number(msg.subject.slice(this.prefix.length));
        const p = this.pending.get(id);
        if (!p) return; // already timed out
        this.pending.delete(id);
        if (msg.data.length === 0) {
          // A status message: 503 means no stream captures the subject.
          p.onError(new PublishFailedError(`no stream captures ${p.subject} (status ${msg.headers?.code ?? '?'})`, p.subject));
          return;
        }
        let ack: PubAck & { error?: { code: number; err_code?: number; description: string } };
        try {
          ack = JSON.parse(utf8.decode(msg.data));
        } catch {
          p.onError(new PublishFailedError(`unreadable PubAck for ${p.subject}`, p.subject));
          return;
        }
        if (ack.error) p.onError(new PublishFailedError(`JetStream refused a publish on ${p.subject}: ${ack.error.description}`, p.subject, ack.error.err_code));
        else p.onAck(ack);
      },
    });
    this.timer = setInterval(() => this.expire(), Math.max(50, Math.floor(timeoutMs / 4)));
    this.timer.unref();
  }

  /** Publishes; exactly one of `onAck` / `onError` is called later. Set `Nats-Msg-Id` in `headers` for de-duplication. */
  publish(subject: string, payload: string | Uint8Array, headers: MsgHdrs, onAck: (ack: PubAck) => void, onError: (err: Error) => void): void {
    const id = this.next++;
    this.pending.set(id, { subject, sentAt: Date.now(), onAck, onError });
    try {
      this.nc.publish(subject, payload, { headers, reply: `${this.prefix}${id}` });
    } catch (err) {
      this.pending.delete(id);
      onError(err as Error);
    }
  }

  /** Publishes awaiting their PubAck. */
  get outstanding(): number {
    return this.pending.size;
  }

  /** Fails the publishes older than the timeout (the Map iterates oldest first). */
  private expire(): void {
    const limit = Date.now() - this.timeoutMs;
    for (const [id, p] of this.pending) {
      if (p.sentAt > limit) break;
      this.pending.delete(id);
      p.onError(new PublishTimeoutError(p.subject, this.timeoutMs));
    }
  }

  /** Stops listening; publishes still outstanding fail with PublishTimeoutError. */
  close(): void {
    clearInterval(this.timer);
    this.sub.unsubscribe();
    for (const p of this.pending.values()) p.onError(new PublishTimeoutError(p.subject, 0));
    this.pending.clear();
  }
}
