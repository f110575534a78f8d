import type { JsMsg } from '@nats-io/jetstream';
import type { Msg, MsgHdrs } from '@nats-io/transport-node';
import { BaseRpcContext } from '@nestjs/microservices';
import type { BusEvent } from '../bus-event.js';
import type { EventContext } from '../consumer/consumer-runner.js';
import type { Logger } from '../logging.js';
import type { QueryContext } from '../query/query-responder.js';

/** What `@Ctx()` gives an `@EventPattern` handler: the whole event envelope and its delivery. */
export class JetStreamContext extends BaseRpcContext<[BusEvent, EventContext]> {
  /** The event: id, type, metadata (jobId, correlationId, ...), store position; `data` is what `@Payload()` gives. */
  getEvent(): BusEvent {
    return this.args[0];
  }
  getJobId(): string | undefined {
    return this.args[0].metadata.jobId;
  }
  getCorrelationId(): string {
    return this.args[0].metadata.correlationId;
  }
  getSubject(): string {
    return this.args[1].subject;
  }
  getHeaders(): MsgHdrs | undefined {
    return this.args[1].headers;
  }
  /** 1 on the first delivery. */
  getDeliveryCount(): number {
    return this.args[1].deliveryCount;
  }
  getConsumer(): string {
    return this.args[1].consumer;
  }
  /** Messages of the same key in hand behind this one (see EventContext.behind). */
  getBehind(): number {
    return this.args[1].behind;
  }
  /** A pino logger with jobId and correlationId bound. */
  getLogger(): Logger {
    return this.args[1].logger;
  }
  /** The raw message; the transport acks, naks or dead-letters it from the handler's outcome. */
  getMessage(): JsMsg {
    return this.args[1].message;
  }
}

/** What `@Ctx()` gives a `@MessagePattern` (query) handler. */
export class NatsQueryContext extends BaseRpcContext<[QueryContext]> {
  getSubject(): string {
    return this.args[0].subject;
  }
  getHeaders(): MsgHdrs | undefined {
    return this.args[0].headers;
  }
  /** A pino logger with the caller's correlationId bound. */
  getLogger(): Logger {
    return this.args[0].logger;
  }
  getMessage(): Msg {
    return this.args[0].message;
  }
}
