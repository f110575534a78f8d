import type { JobView, LogLine } from '#contracts';
import { Controller, Get, Param, Req, Res } from '@nestjs/common';
import type { Request, Response } from 'express';
import { once } from 'node:events';
import { Authenticator } from '../auth/authenticator.js';
import type { Principal } from '../auth/api-keys.js';
import { flag, jobIdParam } from '../http/request.js';
import { FeedHub } from '../feed/feed-hub.js';
import { JobsService } from '../jobs/jobs.service.js';
import { JobLogs } from './job-logs.js';

/**
 * `GET /v1/jobs/:jobId/logs`: the job's log lines as NDJSON (`{ts, stream, line, attemptId}` per
 * line), or as text with `Accept: text/plain`. `?follow=1` keeps the response open and streams
 * new lines until the job is over (its `JobEnded`, from the team feed).
 */
@Controller('v1/jobs')
export class LogsHttpController {
  constructor(
    private readonly auth: Authenticator,
    private readonly jobs: JobsService,
    private readonly hub: FeedHub,
    private readonly logs: JobLogs,
  ) {}

  @Get(':jobId/logs')
  async logsOf(@Req() req: Request, @Res() res: Response, @Param('jobId') jobId: string): Promise<void> {
    const principal = this.auth.fromHttp(req.headers.authorization);
    const id = jobIdParam(jobId);
    const job = await this.jobs.get(principal, id);
    const follow = flag(req.query.follow as string | string[] | undefined);
    const text = req.accepts(['application/x-ndjson', 'application/json', 'text/plain']) === 'text/plain';

    const abort = new AbortController();
    res.on('close', () => abort.abort());
    // Following ends once the job is over (its JobEnded): nothing more is logged after that.
    const until = follow ? this.hub.ended(id, abort.signal) : undefined;

    // The first line may take a while when following: headers go out now, so the client sees the stream is open.
    res.status(200).type(text ? 'text/plain; charset=utf-8' : 'application/x-ndjson');
    res.setHeader('Cache-Control', 'no-store');
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.flushHeaders();
    const format = text ? textFormatter(principal) : (l: LogLine) => `${JSON.stringify(l)}\n`;
    try {
      // A line counts only from a node its attempt was placed on (the view is read again for attempts placed since).
      // The views as they are first; only a line they cannot place waits for the store's head (an attempt placed a moment ago).
      const onNode = (view: JobView, nodeId: string, attemptId: string) =>
        view.attempts.some((a) => a.attemptId === attemptId && (a.nodeId === nodeId || (a.nodes ?? []).some((n) => n.nodeId === nodeId)));
      const placedOn = async (nodeId: string, attemptId: string) =>
        onNode(await this.jobs.own(principal, id), nodeId, attemptId) || onNode(await this.jobs.get(principal, id), nodeId, attemptId);
      for await (const line of this.logs.read(job.team, id, { ...(until ? { until } : {}), signal: abort.signal, placedOn })) {
        if (!res.write(format(line))) await Promise.race([once(res, 'drain'), once(res, 'close')]);
        if (abort.signal.aborted) break;
      }
    } finally {
      if (!res.writableEnded) res.end();
    }
  }
}

/** `2025-06-01 14:00:03.120 stdout  <line>` in the key's time zone (UTC when it has none). */
function textFormatter(principal: Principal): (l: LogLine) => string {
  const zone = principal.timeZone ?? 'UTC';
  const fmt = new Intl.DateTimeFormat('sv-SE', {
    timeZone: zone,
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
    fractionalSecondDigits: 3,
    hourCycle: 'h23',
  });
  return (l) => `${fmt.format(new Date(l.ts)).replace(',', '.')} ${l.stream.padEnd(6)} ${l.line}\n`;
}
