import { Controller, Get, Param, Req, Res } from '@nestjs/common';
import type { Request, Response } from 'express';
import { createReadStream } from 'node:fs';
import { pipeline } from 'node:stream/promises';
import { Authenticator } from '../auth/authenticator.js';
import { jobIdParam } from '../http/request.js';
import type { JobOutputs } from '#contracts';
import { JobsService } from '../jobs/jobs.service.js';
import { OutputFiles } from './output-files.js';

/** `GET /v1/jobs/:jobId/outputs` (the list) and `/outputs/<path>` (one file's bytes). */
@Controller('v1/jobs')
export class OutputsHttpController {
  constructor(
    private readonly auth: Authenticator,
    private readonly jobs: JobsService,
    private readonly files: OutputFiles,
  ) {}

  @Get(':jobId/outputs')
  list(@Req() req: Request, @Param('jobId') jobId: string): Promise<JobOutputs> {
    return this.jobs.outputs(this.auth.fromHttp(req.headers.authorization), jobIdParam(jobId), { anyTeam: true });
  }

  /** Verified before a byte is sent; `ETag` is the sha256, so a client can check what it got. */
  @Get(':jobId/outputs/*path')
  async download(@Req() req: Request, @Res() res: Response, @Param('jobId') jobId: string, @Param('path') path: string | string[]): Promise<void> {
    const principal = this.auth.fromHttp(req.headers.authorization);
    const id = jobIdParam(jobId);
    const outputs = await this.jobs.outputs(principal, id);
    // Express 5 hands a wildcard over as its segments.
    const relative = Array.isArray(path) ? path.join('/') : path;
    const file = OutputFiles.find(id, outputs.files, relative);
    const local = await this.files.fetch(principal.team, file);
    try {
      res.status(200);
      res.setHeader('Content-Type', 'application/octet-stream');
      res.setHeader('Content-Length', String(file.size));
      res.setHeader('ETag', `"${file.sha256}"`);
      res.setHeader('Digest', `sha-256=${Buffer.from(file.sha256, 'hex').toString('base64')}`);
      res.setHeader('Content-Disposition', `attachment; filename*=UTF-8''${encodeURIComponent(relative.split('/').at(-1) ?? 'output')}`);
      await pipeline(createReadStream(local.path), res);
    } finally {
      await local.release();
    }
  }
}
