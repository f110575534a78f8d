import { LOGGER } from '#service-kit';
import { Catch, Inject, type ArgumentsHost, type ExceptionFilter } from '@nestjs/common';
import type { Request, Response } from 'express';
import type { Logger } from 'pino';
import { throwError, type Observable } from 'rxjs';
import { toHttpError } from './http-errors.js';

/**
 * Every error of an HTTP request becomes its answer here, by `toHttpError` (the one mapping).
 * Errors of NATS handlers pass through unchanged: the JetStream transport turns them into
 * `{ ok: false, error }` replies by their code (its own one mapping).
 */
@Catch()
export class ErrorFilter implements ExceptionFilter {
  constructor(@Inject(LOGGER) private readonly logger: Logger) {}

  catch(exception: unknown, host: ArgumentsHost): Observable<never> | void {
    if (host.getType() !== 'http') return throwError(() => exception);
    const http = host.switchToHttp();
    const req = http.getRequest<Request>();
    const res = http.getResponse<Response>();
    const answer = toHttpError(exception);
    const fields = { method: req.method, url: req.originalUrl, status: answer.status, code: answer.body.error.code };
    if (answer.internal) this.logger.error({ ...fields, err: exception }, 'request failed');
    else this.logger.debug(fields, 'request refused');
    if (res.headersSent) {
      // A stream already under way cannot change its status: cut it, so the client sees it incomplete.
      res.destroy();
      return;
    }
    res.status(answer.status).set(answer.headers).json(answer.body);
  }
}
