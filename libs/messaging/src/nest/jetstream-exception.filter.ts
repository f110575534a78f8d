import { Catch, Module, type RpcExceptionFilter } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { throwError, type Observable } from 'rxjs';

/**
 * Hands a handler's error to the JetStream transport unchanged. Without it Nest replaces every
 * error that is not an RpcException with `{ status: 'error', message: 'Internal server error' }`,
 * and the transport can no longer tell a terminal error (dead-letter now) from a retryable one
 * (nak with backoff): it then treats the failure as retryable, bounded by `maxDeliveries`.
 */
@Catch()
export class JetStreamExceptionFilter implements RpcExceptionFilter<unknown> {
  catch(exception: unknown): Observable<never> {
    return throwError(() => exception);
  }
}

/** Import into a service's root module to install JetStreamExceptionFilter globally. */
@Module({ providers: [{ provide: APP_FILTER, useClass: JetStreamExceptionFilter }] })
export class JetStreamTransportModule {}
