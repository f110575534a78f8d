import { HEADERS } from '#contracts';
import type { MsgHdrs } from '@nats-io/transport-node';
import type { ApiKeyRing, Principal } from './api-keys.js';

/**
 * Who is calling, for both transports: the `Authorization: Bearer <key>` header of an HTTP
 * request or of a NATS message. The key file is read once at start (a bad file stops the start),
 * before either transport takes a request.
 */
export class Authenticator {
  constructor(private readonly ring: ApiKeyRing) {}

  /** From an HTTP `Authorization` header value. */
  fromHttp(authorization: string | undefined): Principal {
    return this.ring.authenticate(authorization);
  }

  /** From the headers of a NATS request. */
  fromNats(headers: MsgHdrs | undefined): Principal {
    return this.ring.authenticate(headers?.get(HEADERS.authorization) || undefined);
  }
}
