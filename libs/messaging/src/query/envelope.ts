import { GpunetError, IllegalStateError, IssuesError, NotFoundError, ValidationError, type FieldIssue } from '#errors';
import { z } from 'zod';
import { MalformedMessageError, RemoteQueryError } from '../errors.js';

/** What a query responder sends back: the answer, or an error that names its code (and field issues). */
export type QueryReply<T = unknown> = { ok: true; data: T } | { ok: false; error: QueryReplyError };

/** Same shape as `ReplyError` in contracts. */
export interface QueryReplyError {
  code: string;
  message: string;
  /** Whether the same request may succeed later. */
  retryable?: boolean;
  issues?: FieldIssue[];
}

/** Schemas of one query: its request and its answer (`data`). */
export interface QueryContract {
  request?: z.ZodType | undefined;
  response?: z.ZodType | undefined;
  /** Message name, for errors. Default: the registry's entry for the subject (contracts' `findRequestBySubject`). */
  name?: string | undefined;
  /** Schema versions accepted in `Gpunet-Schema-Version`. Default: the registry's for `name` (`acceptedSchemaVersions`), else `[1]`. */
  versions?: readonly number[] | undefined;
}

const replySchema = z.discriminatedUnion('ok', [
  z.object({ ok: z.literal(true), data: z.unknown() }),
  z.object({
    ok: z.literal(false),
    error: z.object({
      code: z.string(),
      message: z.string(),
      retryable: z.boolean().optional(),
      issues: z.array(z.object({ path: z.string(), message: z.string(), fix: z.string().optional() })).optional(),
    }),
  }),
]);

/**
 * THE mapping from a query handler's failure to the error part of a reply (one place): a
 * GpunetError keeps its code, message and field issues; anything else becomes `internal` with a
 * generic message (the detail goes to the responder's log, not to the caller).
 */
export function errorReply(err: unknown): { ok: false; error: QueryReplyError } {
  if (err instanceof GpunetError) {
    const error: QueryReplyError = { code: err.code, message: err.message, retryable: err.retryable };
    if (err instanceof IssuesError) error.issues = [...err.issues];
    return { ok: false, error };
  }
  return { ok: false, error: { code: 'internal', message: 'internal error', retryable: false } };
}

/** Parses a reply body; a body that is not a reply envelope is a MalformedMessageError. */
export function parseReply(subject: string, body: string): QueryReply {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch (err) {
    throw new MalformedMessageError(`reply on ${subject} is not JSON`, [], { cause: err });
  }
  const parsed = replySchema.safeParse(json);
  if (!parsed.success) throw new MalformedMessageError(`reply on ${subject} is not a reply envelope`);
  return parsed.data as QueryReply;
}

/** The caller-side error for an `ok: false` reply: the family class where the code has one, else RemoteQueryError. */
export function replyToError(subject: string, error: QueryReplyError): GpunetError {
  switch (error.code) {
    case 'validation_failed':
      return new ValidationError(error.message, error.issues ?? []);
    case 'not_found':
      return new NotFoundError(error.message);
    case 'illegal_state':
      return new IllegalStateError(error.message);
    default:
      return new RemoteQueryError(error.code, error.message, subject, error.issues ?? [], error.retryable);
  }
}
