import { HEADERS } from '#contracts';
import { SERVICE_CONFIG } from '#service-kit';
import type { MsgHdrs } from '@nats-io/transport-node';
import { Inject, Injectable, type OnModuleInit } from '@nestjs/common';
import type { IntakeConfig } from '../config.js';
import { ApiKeyRing, type Principal } from './api-keys.js';

/**
 * Who is calling, for both transports: the `Authorization: Bearer <key>` header of an HTTP
 * request or of a NATS message. The key file is read once at start; a bad file stops the start.
 */
@Injectable()
export class Authenticator implements OnModuleInit {
  private ring: ApiKeyRing | undefined;

  constructor(@Inject(SERVICE_CONFIG) private readonly config: IntakeConfig) {}

  async onModuleInit(): Promise<void> {
    this.ring = await ApiKeyRing.load(this.config.GPUNET_API_KEYS_FILE);
  }

  /** From an HTTP `Authorization` header value. */
  fromHttp(authorization: string | undefined): Principal {
    return this.keys().authenticate(authorization);
  }

  /** From the headers of a NATS request. */
  fromNats(headers: MsgHdrs | undefined): Principal {
    return this.keys().authenticate(headers?.get(HEADERS.authorization) || undefined);
  }

  private keys(): ApiKeyRing {
    if (!this.ring) throw new Error('API keys not loaded yet');
    return this.ring;
  }
}
