import { ValidationError } from '#errors';
import { headers as natsHeaders, RequestError, TimeoutError, type MsgHdrs, type NatsConnection } from '@nats-io/transport-node';
import { injectHeaders, tracingEnabled } from '#telemetry';
import { Headers } from '../conventions.js';
import { MalformedMessageError, QueryTimeoutError, QueryUnavailableError } from '../errors.js';
import { toFieldIssues } from '../zod-issues.js';
import { parseReply, replyToError, type QueryContract } from './envelope.js';

export interface QueryOptions {
  /** Default 5000 ms. */
  timeoutMs?: number;
  /** Sent as `Gpunet-Correlation-Id`. */
  correlationId?: string;
  /** Sent as `Gpunet-Job-Id`. */
  jobId?: string;
  headers?: MsgHdrs;
}

const utf8 = new TextDecoder();

/**
 * Sends a query over NATS request/reply and returns the answer's `data`, validated by the
 * contract's `response` schema. The request is validated before it leaves (ValidationError).
 * Failures: QueryTimeoutError, QueryUnavailableError (no responder), the error named by an
 * `ok: false` reply (see `replyToError`), MalformedMessageError for a reply outside the contract.
 */
export async function requestQuery<T = unknown>(nc: NatsConnection, subject: string, request: unknown, contract: QueryContract = {}, options: QueryOptions = {}): Promise<T> {
  let body = request;
  if (contract.request) {
    const parsed = contract.request.safeParse(request);
    if (!parsed.success) throw new ValidationError(`request to ${subject} does not match its schema`, toFieldIssues(parsed.error));
    body = parsed.data;
  }
  const h = options.headers ?? natsHeaders();
  if (options.correlationId) h.set(Headers.CorrelationId, options.correlationId);
  if (options.jobId) h.set(Headers.JobId, options.jobId);
  // The responder's work joins the caller's trace (nothing is added without an active span).
  if (tracingEnabled()) injectHeaders(h);
  const timeoutMs = options.timeoutMs ?? 5_000;
  let replyBody: string;
  try {
    const msg = await nc.request(subject, body === undefined ? '' : JSON.stringify(body), { timeout: timeoutMs, headers: h });
    replyBody = utf8.decode(msg.data);
  } catch (err) {
    if (err instanceof TimeoutError || (err instanceof RequestError && err.cause instanceof TimeoutError)) throw new QueryTimeoutError(subject, timeoutMs, { cause: err });
    if (err instanceof RequestError && err.isNoResponders()) throw new QueryUnavailableError(subject, { cause: err });
    throw err;
  }
  const reply = parseReply(subject, replyBody);
  if (!reply.ok) throw replyToError(subject, reply.error);
  if (!contract.response) return reply.data as T;
  const parsed = contract.response.safeParse(reply.data);
  if (!parsed.success) throw new MalformedMessageError(`reply on ${subject} does not match its schema`, toFieldIssues(parsed.error, 'data'));
  return parsed.data as T;
}
