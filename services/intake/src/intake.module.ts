import { NodesHttpController } from './nodes/nodes.http.controller.js';
import { NodesService } from './nodes/nodes.service.js';
import { Module, type Type } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { AuditHttpController } from './audit/audit.http.controller.js';
import { Authenticator } from './auth/authenticator.js';
import { BudgetsHttpController } from './budgets/budgets.http.controller.js';
import { BudgetsNatsController } from './budgets/budgets.nats.controller.js';
import { BudgetsService } from './budgets/budgets.service.js';
import { KeyRingFeed } from './auth/key-ring.feed.js';
import { ConsoleHttpController } from './console/console.http.controller.js';
import { WhoAmIHttpController } from './auth/whoami.http.controller.js';
import { ChargesHttpController } from './charges/charges.http.controller.js';
import { EstimateHttpController } from './estimate/estimate.http.controller.js';
import { EstimateNatsController } from './estimate/estimate.nats.controller.js';
import { ChargesNatsController } from './charges/charges.nats.controller.js';
import { CapacityHttpController } from './estimate/capacity.http.controller.js';
import { EstimateService } from './estimate/estimate.service.js';
import { QueueHttpController, TeamQueueHttpController } from './estimate/queue.http.controller.js';
import { FeedHub } from './feed/feed-hub.js';
import { FeedHttpController } from './feed/feed.http.controller.js';
import { FeedNatsController } from './feed/feed.nats.controller.js';
import { FeedService } from './feed/feed.service.js';
import { ErrorFilter } from './http/error.filter.js';
import { HealthHttpController } from './http/health.http.controller.js';
import { BillingNatsController } from './invoices/billing.nats.controller.js';
import { BillingService } from './invoices/billing.service.js';
import { InvoicesHttpController, LedgerHttpController, PricesHttpController } from './invoices/invoices.http.controller.js';
import { JobViewsFeed } from './jobs/job-views.feed.js';
import { KeysHttpController, TeamsHttpController } from './keys/keys.http.controller.js';
import { KeysNatsController } from './keys/keys.nats.controller.js';
import { KeysService } from './keys/keys.service.js';
import { QuotasHttpController } from './quotas/quotas.http.controller.js';
import { QuotasNatsController } from './quotas/quotas.nats.controller.js';
import { QuotasService } from './quotas/quotas.service.js';
import { JobsHttpController } from './jobs/jobs.http.controller.js';
import { JobsNatsController } from './jobs/jobs.nats.controller.js';
import { IntakeMetrics } from './jobs/intake.metrics.js';
import { JobsService } from './jobs/jobs.service.js';
import { JobLogs } from './logs/job-logs.js';
import { LogsHttpController } from './logs/logs.http.controller.js';
import { OutputFiles } from './outputs/output-files.js';
import { OutputsHttpController } from './outputs/outputs.http.controller.js';
import { Uploads } from './uploads/uploads.js';
import { UploadsHttpController } from './uploads/uploads.http.controller.js';

/** What intake builds before Nest starts: both must be ready before the first request on either transport. */
export interface IntakeStartState {
  authenticator: Authenticator;
  /** Already folded from the store; follows its team and key events. */
  keyRing: KeyRingFeed;
  /** Already folded from the store. */
  feed: JobViewsFeed;
  /** The team feed over the views' follow of the store. */
  hub: FeedHub;
}

/**
 * Intake's Nest module: the HTTP API and the NATS command API over one set of use cases.
 * `started` hands over what the service's `onStart` built (it runs before Nest resolves providers).
 */
export function intakeModule(started: () => IntakeStartState): Type<unknown> {
  @Module({
    controllers: [JobsHttpController, LogsHttpController, OutputsHttpController, ChargesHttpController, ChargesNatsController, HealthHttpController, JobsNatsController, EstimateHttpController, EstimateNatsController, QueueHttpController, CapacityHttpController, AuditHttpController, InvoicesHttpController, PricesHttpController, LedgerHttpController, BillingNatsController, TeamsHttpController, KeysHttpController, KeysNatsController, FeedHttpController, FeedNatsController, UploadsHttpController, QuotasHttpController, QuotasNatsController, BudgetsHttpController, BudgetsNatsController, ConsoleHttpController, WhoAmIHttpController, TeamQueueHttpController, NodesHttpController],
    providers: [
      NodesService,
      { provide: Authenticator, useFactory: () => started().authenticator },
      { provide: JobViewsFeed, useFactory: () => started().feed },
      { provide: KeyRingFeed, useFactory: () => started().keyRing },
      { provide: FeedHub, useFactory: () => started().hub },
      FeedService,
      IntakeMetrics,
      Uploads,
      KeysService,
      QuotasService,
      BudgetsService,
      JobsService,
      EstimateService,
      BillingService,
      JobLogs,
      OutputFiles,
      { provide: APP_FILTER, useClass: ErrorFilter },
    ],
  })
  class IntakeModule {}
  return IntakeModule;
}
