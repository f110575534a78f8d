/**
 * The bus tap of the e2e suite: a NATS subscription on `>` (an identity allowed to read
 * everything: the operator's) that appends every message, and every reply to a request the
 * contract answers, to a JSON-lines file, for {@link BusContract} to check at the end of the run
 * (the default export of `bus-contract.ts`, the e2e project's globalTeardown). Blob chunks are recorded without their bytes.
 */
import type { Msg, NatsConnection, Subscription } from '@nats-io/transport-node';
import { createWriteStream, type WriteStream } from 'node:fs';
import type { BusContract, BusRecord } from './bus-contract.js';

const utf8 = new TextDecoder();

export class BusTap {
  private readonly out: WriteStream;
  private readonly sub: Subscription;
  /** Reply subject → subject of the request it answers (requests the document gives a reply). */
  private readonly pending = new Map<string, string>();
  private done: Promise<void> | undefined;
  recorded = 0;

  constructor(
    nc: NatsConnection,
    readonly file: string,
    private readonly contract: BusContract,
  ) {
    this.out = createWriteStream(file, { flags: 'a' });
    this.sub = nc.subscribe('>', { callback: (err, msg) => (err ? undefined : this.record(msg)) });
  }

  private record(msg: Msg): void {
    const r: BusRecord = { subject: msg.subject, size: msg.data.length };
    if (msg.reply) r.reply = msg.reply;
    const request = this.pending.get(msg.subject);
    if (request !== undefined) {
      this.pending.delete(msg.subject);
      r.inReplyTo = request;
    } else if (msg.reply && this.contract.hasReply(msg.subject)) {
      this.pending.set(msg.reply, msg.subject);
    }
    if (msg.headers) {
      const h: Record<string, string[]> = {};
      for (const [k, v] of msg.headers) h[k] = v;
      // A status-only message (a JetStream pull's 404/408) has no named headers and is the protocol's.
      if (Object.keys(h).length > 0) r.headers = h;
    }
    if (!msg.subject.startsWith('$O.') || msg.subject.split('.')[2] !== 'C') r.body = utf8.decode(msg.data);
    this.recorded++;
    this.out.write(`${JSON.stringify(r)}\n`);
  }

  /** Flushes what arrived so far (the connection's buffered messages included) and closes the file. */
  close(nc: NatsConnection): Promise<void> {
    return (this.done ??= (async () => {
      await nc.flush().catch(() => undefined);
      this.sub.unsubscribe();
      await new Promise<void>((resolve, reject) => this.out.end((err?: Error | null) => (err ? reject(err) : resolve())));
    })());
  }
}
