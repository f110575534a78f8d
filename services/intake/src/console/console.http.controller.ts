import { NotFoundError } from '#errors';
import { SERVICE_CONFIG } from '#service-kit';
import { Controller, Get, Inject, Req, Res } from '@nestjs/common';
import type { Request, Response } from 'express';
import { existsSync } from 'node:fs';
import { extname, join, normalize, sep } from 'node:path';
import type { IntakeConfig } from '../config.js';

/** A console asset name: hashed files under `assets/`, or a top-level file (`favicon.svg`). Nothing else is served. */
const ASSET = /^(?:assets\/)?[A-Za-z0-9._-]{1,200}$/;

/**
 * `GET /console`: the web console, static files built by `npm run build:console` (console/).
 * Open, like `/openapi.json`: the pages hold no data; every figure they show comes from the API
 * with the key the person types in. Any path that is not a file is the single page itself
 * (the console routes in the browser: `/console/jobs/<id>`).
 */
@Controller('console')
export class ConsoleHttpController {
  private readonly root: string;

  constructor(@Inject(SERVICE_CONFIG) config: IntakeConfig) {
    this.root = config.GPUNET_CONSOLE_DIR;
  }

  @Get(['', '*path'])
  serve(@Req() req: Request, @Res() res: Response): void {
    const index = join(this.root, 'index.html');
    if (!existsSync(index)) {
      throw new NotFoundError(`the console is not built in ${this.root}; build it with \`npm run build:console\` (or set GPUNET_CONSOLE_DIR)`);
    }
    const rest = decodeURIComponent(req.path.replace(/^\/console\/?/, ''));
    const file = ASSET.test(rest) ? normalize(join(this.root, rest)) : undefined;
    if (file !== undefined && file.startsWith(this.root + sep) && extname(file) !== '' && existsSync(file)) {
      // Vite names every asset by its content hash: it may be kept for good.
      res.sendFile(file, { headers: rest.startsWith('assets/') ? { 'Cache-Control': 'public, max-age=31536000, immutable' } : {} });
      return;
    }
    res.sendFile(index, { headers: { 'Cache-Control': 'no-cache' } });
  }
}
