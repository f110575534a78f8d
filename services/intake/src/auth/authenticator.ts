import { HEADERS } from '#contracts';
import type { MsgHdrs } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import { RefusedKeyError, type ApiKeyRing, type Principal } from './api-keys.js';

/**
 * Who is calling, for both transports: the `Authorization: Bearer <key>` header of an HTTP
 * request or of a NATS message. The ring is built before either transport takes a request (a bad
 * key file stops the start) and follows the store's key events afterwards.
 *
 * Every refused key is a `warn` line in intake's log (`api key refused`): the reason, the
 * transport, and for a revoked, expired or disabled key its id (never the key). Not an event:
 * anyone can send a wrong key, and the store is not for whoever knocks.
 */
export class Authenticator {
  constructor(
    readonly ring: ApiKeyRing,
    private readonly logger?: Logger,
  ) {}

  /** From an HTTP `Authorization` header value. */
  fromHttp(authorization: string | undefined, where?: { ip?: string | undefined; url?: string | undefined }): Principal {
    return this.check(authorization, 'http', where);
  }

  /** From the headers of a NATS request. */
  fromNats(headers: MsgHdrs | undefined): Principal {
    return this.check(headers?.get(HEADERS.authorization) || undefined, 'nats');
  }

  private check(authorization: string | undefined, transport: 'http' | 'nats', where: { ip?: string | undefined; url?: string | undefined } = {}): Principal {
    try {
      return this.ring.authenticate(authorization);
    } catch (err) {
      const fields = { transport, ...where, reason: err instanceof RefusedKeyError ? err.state : !authorization ? 'no_key' : 'unknown_or_malformed', ...(err instanceof RefusedKeyError ? { keyId: err.keyId } : {}) };
      this.logger?.warn(fields, 'api key refused');
      throw err;
    }
  }
}
