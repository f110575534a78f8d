import { Module } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { Authenticator } from './auth/authenticator.js';
import { ChargesHttpController } from './charges/charges.http.controller.js';
import { ErrorFilter } from './http/error.filter.js';
import { HealthHttpController } from './http/health.http.controller.js';
import { JobViewsFeed } from './jobs/job-views.feed.js';
import { JobsHttpController } from './jobs/jobs.http.controller.js';
import { JobsNatsController } from './jobs/jobs.nats.controller.js';
import { JobsService } from './jobs/jobs.service.js';
import { JobLogs } from './logs/job-logs.js';
import { LogsHttpController } from './logs/logs.http.controller.js';
import { OutputFiles } from './outputs/output-files.js';
import { OutputsHttpController } from './outputs/outputs.http.controller.js';

/** Intake: the HTTP API and the NATS command API over one set of use cases. */
@Module({
  controllers: [JobsHttpController, LogsHttpController, OutputsHttpController, ChargesHttpController, HealthHttpController, JobsNatsController],
  providers: [Authenticator, JobViewsFeed, JobsService, JobLogs, OutputFiles, { provide: APP_FILTER, useClass: ErrorFilter }],
})
export class IntakeModule {}
