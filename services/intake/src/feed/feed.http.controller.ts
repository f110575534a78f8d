import { DecimalString, type FeedEntry } from '#contracts';
import { ValidationError } from '#errors';
import { Controller, Get, Req, Res } from '@nestjs/common';
import type { Request, Response } from 'express';
import { once } from 'node:events';
import { Authenticator } from '../auth/authenticator.js';
import { endsJob } from '../domain/feed.js';
import { jobIdParam, single } from '../http/request.js';
import { FeedService } from './feed.service.js';

/** Entries read from the store per page while catching up. */
const PAGE = 500;
/** A comment line this often keeps proxies from closing an idle stream, and shows a dead client. */
const KEEPALIVE_MS = 15_000;
/** Live entries held for a client that reads slower than they come; past this it is let go (it resumes with `Last-Event-ID`). */
const MAX_BACKLOG = 10_000;

/**
 * `GET /v1/feed[?jobId=][&after=]`: the caller's team feed as Server-Sent Events. Each event is
 * `id: <store position>`, `event: <type>`, `data: <FeedEntry JSON>`. It starts after
 * `Last-Event-ID` (what a reconnecting EventSource sends), else after `?after=`, else from the
 * start; it catches up from the store, then stays open with live entries. With `jobId` (one of
 * the team's jobs) only that job's entries come, and the stream ends after its `JobEnded`.
 */
@Controller('v1/feed')
export class FeedHttpController {
  constructor(
    private readonly auth: Authenticator,
    private readonly feed: FeedService,
  ) {}

  @Get()
  async stream(@Req() req: Request, @Res() res: Response): Promise<void> {
    const principal = this.auth.fromHttp(req.headers.authorization);
    const jobQuery = single(req.query.jobId as string | string[] | undefined);
    const scope = await this.feed.scope(principal, jobQuery === undefined ? undefined : jobIdParam(jobQuery));
    let last = startPosition(req);

    const hub = this.feed.hub;
    const backlog: FeedEntry[] = [];
    let wake: (() => void) | undefined;
    let closed = false;
    const unlisten = hub.listen(scope.team, scope.jobId, (entry) => {
      backlog.push(entry);
      if (backlog.length > MAX_BACKLOG) res.destroy();
      wake?.();
    });
    res.on('close', () => {
      closed = true;
      wake?.();
    });

    res.status(200);
    res.setHeader('Content-Type', 'text/event-stream; charset=utf-8');
    res.setHeader('Cache-Control', 'no-store');
    res.setHeader('X-Accel-Buffering', 'no');
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.flushHeaders();
    res.write('retry: 1000\n\n');
    const keepalive = setInterval(() => res.write(': keepalive\n\n'), KEEPALIVE_MS);

    const send = async (entry: FeedEntry): Promise<boolean> => {
      if (BigInt(entry.position) <= last) return false;
      last = BigInt(entry.position);
      if (!res.write(`id: ${entry.position}\nevent: ${entry.type}\ndata: ${JSON.stringify(entry)}\n\n`)) {
        await Promise.race([once(res, 'drain'), once(res, 'close')]);
      }
      return scope.jobId !== undefined && endsJob(entry);
    };

    try {
      // Catch up from the store; live entries meanwhile wait in the backlog (those already sent are skipped there).
      for (;;) {
        const page = await hub.read(scope.team, { after: last, jobId: scope.jobId, limit: PAGE });
        for (const entry of page.entries) if (closed || (await send(entry))) return;
        if (BigInt(page.next) > last) last = BigInt(page.next);
        if (page.caughtUp || closed) break;
      }
      while (!closed) {
        while (backlog.length > 0 && !closed) if (await send(backlog.shift()!)) return;
        if (closed) break;
        await new Promise<void>((resolve) => (wake = resolve));
        wake = undefined;
      }
    } finally {
      clearInterval(keepalive);
      unlisten();
      if (!res.writableEnded) res.end();
    }
  }
}

/** `Last-Event-ID` (a reconnect), else `?after=`, else 0: the position to start after. */
function startPosition(req: Request): bigint {
  const header = req.headers['last-event-id'];
  const query = single(req.query.after as string | string[] | undefined);
  const [value, field] = typeof header === 'string' && header !== '' ? [header, 'Last-Event-ID'] : [query, 'after'];
  if (value === undefined) return 0n;
  if (!DecimalString.safeParse(value).success) {
    throw new ValidationError(`\`${value}\` is not a feed position`, [{ path: field, message: 'must be a store position (decimal digits)', fix: 'pass the `id` of the last event you received, or 0 for the start' }]);
  }
  return BigInt(value);
}
