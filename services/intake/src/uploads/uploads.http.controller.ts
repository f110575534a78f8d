import { All, Controller, Req, Res } from '@nestjs/common';
import type { Request, Response } from 'express';
import { Uploads } from './uploads.js';

/** `/v1/uploads[/<sha256>.<size>]`: every method goes to the tus server (see {@link Uploads}). */
@Controller('v1/uploads')
export class UploadsHttpController {
  constructor(private readonly uploads: Uploads) {}

  @All()
  create(@Req() req: Request, @Res() res: Response): Promise<void> {
    return this.uploads.handle(req, res);
  }

  @All(':upload')
  one(@Req() req: Request, @Res() res: Response): Promise<void> {
    return this.uploads.handle(req, res);
  }
}
