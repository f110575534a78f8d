import { CLOCK, type Clock } from '#service-kit';
import { Controller, Get, Inject } from '@nestjs/common';
import type { Healthz } from '../jobs/job-records.js';
import { JobViewsFeed } from '../jobs/job-views.feed.js';
import { openApiDocument } from './openapi.js';

/** Unauthenticated: `GET /healthz` and `GET /openapi.json`. */
@Controller()
export class HealthHttpController {
  private readonly openApi = openApiDocument();

  constructor(
    private readonly feed: JobViewsFeed,
    @Inject(CLOCK) private readonly clock: Clock,
  ) {}

  @Get('healthz')
  async healthz(): Promise<Healthz> {
    return { status: 'ok', jobs: await this.feed.size(), position: this.feed.position.toString(), checkedAt: this.clock.now().toISOString() };
  }

  @Get('openapi.json')
  openapi(): unknown {
    return this.openApi;
  }
}
