import type { Msg, NatsConnection, Subscription } from '@nats-io/transport-node';
import { createWriteStream, type WriteStream } from 'node:fs';
import type { BusContract, BusRecord } from './bus-contract.js';

const utf8 = new TextDecoder();

/**
 * The bus tap of the e2e suite: records every message on gpunet's subjects (`gpunet.>`) and on
 * the blob buckets' (`$O.>`), and the reply to every request the contract answers, one JSON line
 * each, for {@link BusContract} to check at the end of the run (the default export of
 * `bus-contract.ts`, the e2e project's globalTeardown). Blob chunks are recorded without their
 * bytes. The connection is the operator's (allowed to read everything).
 *
 * Not a subscription on `>`: one on the inboxes would be interest on every JetStream pull
 * request's reply subject, so the server would keep delivering to a pull whose consumer process
 * is gone (a restarted agent's first messages went to its dead predecessor's inbox, held until
 * the ack wait ran out). A reply is caught by a one-message subscription on that request's own
 * reply subject, made when the request is seen; a reply faster than that subscription is missed
 * (not checked), never misjudged. The tap is still interest on the request subjects, so a request
 * nobody answers times out instead of failing at once with "no responders": both are retried.
 */
export class BusTap {
  private readonly out: WriteStream;
  private readonly subs: Subscription[];
  private done: Promise<void> | undefined;
  recorded = 0;

  constructor(
    private readonly nc: NatsConnection,
    readonly file: string,
    private readonly contract: BusContract,
  ) {
    this.out = createWriteStream(file, { flags: 'a' });
    this.subs = ['gpunet.>', '$O.>'].map((subject) => nc.subscribe(subject, { callback: (err, msg) => (err ? undefined : this.record(msg)) }));
  }

  private record(msg: Msg, inReplyTo?: string): void {
    const r: BusRecord = { subject: msg.subject, size: msg.data.length };
    if (msg.reply) r.reply = msg.reply;
    if (inReplyTo !== undefined) r.inReplyTo = inReplyTo;
    else if (msg.reply && this.contract.hasReply(msg.subject)) {
      const request = msg.subject;
      this.nc.subscribe(msg.reply, { max: 1, timeout: 120_000, callback: (err, reply) => (err ? undefined : this.record(reply, request)) });
    }
    if (msg.headers) {
      const h: Record<string, string[]> = {};
      for (const [k, v] of msg.headers) h[k] = v;
      // A status-only message has no named headers and is the protocol's.
      if (Object.keys(h).length > 0) r.headers = h;
    }
    if (!msg.subject.startsWith('$O.') || msg.subject.split('.')[2] !== 'C') r.body = utf8.decode(msg.data);
    this.recorded++;
    this.out.write(`${JSON.stringify(r)}\n`);
  }

  /** Flushes what arrived so far (the connection's buffered messages included) and closes the file. */
  close(): Promise<void> {
    return (this.done ??= (async () => {
      await this.nc.flush().catch(() => undefined);
      for (const sub of this.subs) sub.unsubscribe();
      await new Promise<void>((resolve, reject) => this.out.end((err?: Error | null) => (err ? reject(err) : resolve())));
    })());
  }
}
