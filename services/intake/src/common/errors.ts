/** Intake's own errors: who may call. Mapped to 401 / 403 over HTTP and to their codes on NATS replies. */
import { GpunetError } from '#errors';

/** How to authenticate, said in every 401. */
export const HOW_TO_AUTHENTICATE = 'send your team API key as `Authorization: Bearer <key>` (HTTP header, or NATS message header)';

/** No API key, a malformed `Authorization` header, or a key this intake does not know. Terminal. */
export class UnauthorizedError extends GpunetError {
  readonly code = 'unauthorized';
  readonly retryable = false;
}

/** The key is valid but may not do this: another team's job, or an action its role does not allow. Terminal. */
export class ForbiddenError extends GpunetError {
  readonly code = 'forbidden';
  readonly retryable = false;
}
