import type { Msg, MsgHdrs, NatsConnection, Subscription } from '@nats-io/transport-node';
import { HEADERS, acceptedSchemaVersions, findRequestBySubject } from '#contracts';
import { extractHeaders, inSpan, SpanKind, tracingEnabled } from '#telemetry';
import { ValidationError } from '#errors';
import { Headers } from '../conventions.js';
import { defaultMessagingLogger, messageLogger, type Logger } from '../logging.js';
import { checkSchemaVersion } from '../schema-version.js';
import { toFieldIssues } from '../zod-issues.js';
import { errorReply, type QueryContract, type QueryReply } from './envelope.js';

export interface QueryContext {
  readonly subject: string;
  readonly headers: MsgHdrs | undefined;
  /** Bound with the caller's `correlationId` (and `jobId` when the request header carries one). */
  readonly logger: Logger;
  readonly message: Msg;
}

/** Answers one query; throw a GpunetError to answer `ok: false` with its code. */
export type QueryHandler = (request: unknown, ctx: QueryContext) => unknown;

export interface ServeQueryOptions {
  /** Queue group, so that several instances of a service share the load. Default: none. */
  queue?: string;
  /** Default: the messaging pino logger. */
  logger?: Logger;
}

const utf8 = new TextDecoder();

/**
 * Serves a query over core NATS request/reply. A `Gpunet-Schema-Version` header naming a version
 * the message does not accept is refused first (`unsupported_schema_version`, naming the header
 * and the accepted versions). The request is validated by the contract's
 * `request` schema (`ok: false`, `validation_failed` with field issues when it does not match);
 * the handler's answer by its `response` schema (a mismatch is this side's bug: `internal`).
 */
export function serveQuery(nc: NatsConnection, subject: string, contract: QueryContract, handler: QueryHandler, options: ServeQueryOptions = {}): Subscription {
  const logger = (options.logger ?? defaultMessagingLogger()).child({ query: subject });
  return nc.subscribe(subject, {
    ...(options.queue ? { queue: options.queue } : {}),
    callback: (err, msg) => {
      if (err) {
        logger.error({ err }, 'query subscription failed');
        return;
      }
      void answer(msg, contract, handler, logger);
    },
  });
}

/** Computes and sends the reply to one request. Never throws. */
export async function answer(msg: Msg, contract: QueryContract, handler: QueryHandler, parentLogger: Logger): Promise<void> {
  const log = messageLogger(parentLogger, {
    correlationId: msg.headers?.get(Headers.CorrelationId) || undefined,
    jobId: msg.headers?.get(Headers.JobId) || undefined,
    subject: msg.subject,
  });
  // A request that carries a trace context is a server span of that trace; others (health checks,
  // callers that do not trace) open no span.
  const traced = tracingEnabled() && msg.headers?.get('traceparent');
  const reply = traced
    ? await inSpan(`answer ${msg.subject}`, { parent: extractHeaders(msg.headers), kind: SpanKind.SERVER, attributes: { 'messaging.system': 'nats', 'messaging.destination.name': msg.subject, 'gpunet.job_id': msg.headers?.get(Headers.JobId) || undefined } }, () => computeReply(msg, contract, handler, log))
    : await computeReply(msg, contract, handler, log);
  if (!reply.ok) {
    const level = reply.error.code === 'internal' ? 'error' : 'info';
    log[level]({ code: reply.error.code, issues: reply.error.issues }, 'query answered with an error');
  }
  if (!msg.reply) return;
  try {
    msg.respond(JSON.stringify(reply));
  } catch (err) {
    log.error({ err }, 'cannot send query reply');
  }
}

async function computeReply(msg: Msg, contract: QueryContract, handler: QueryHandler, log: Logger): Promise<QueryReply> {
  try {
    // First: a body of another version is not read with this version's schema.
    const name = contract.name ?? findRequestBySubject(msg.subject)?.name;
    const accepted = contract.versions ?? (name !== undefined ? acceptedSchemaVersions(name) : undefined) ?? [1];
    checkSchemaVersion(name ?? msg.subject, accepted, msg.headers?.get(HEADERS.schemaVersion));
    let request: unknown;
    try {
      request = msg.data.length === 0 ? undefined : JSON.parse(utf8.decode(msg.data));
    } catch (err) {
      throw new ValidationError('request body is not JSON', [{ path: '', message: 'not JSON', fix: 'send a JSON body' }], { cause: err });
    }
    if (contract.request) {
      const parsed = contract.request.safeParse(request);
      if (!parsed.success) throw new ValidationError('request does not match its schema', toFieldIssues(parsed.error));
      request = parsed.data;
    }
    let data = await handler(request, { subject: msg.subject, headers: msg.headers, logger: log, message: msg });
    if (contract.response) {
      const parsed = contract.response.safeParse(data);
      if (!parsed.success) {
        log.error({ issues: toFieldIssues(parsed.error) }, 'query handler answered outside its response schema');
        return { ok: false, error: { code: 'internal', message: 'internal error', retryable: false } };
      }
      data = parsed.data;
    }
    return { ok: true, data: data ?? null };
  } catch (err) {
    const reply = errorReply(err);
    if (reply.error.code === 'internal') log.error({ err }, 'query handler failed');
    return reply;
  }
}
