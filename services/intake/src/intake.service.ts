import { defineService } from '#service-kit';
import { IntakeConfig } from './config.js';
import { IntakeModule } from './intake.module.js';

/**
 * Intake as a kit service: HTTP on GPUNET_HTTP_HOST:GPUNET_HTTP_PORT plus the NATS command API.
 * No durable consumer: its job views follow the event store itself (see JobViewsFeed).
 */
export function intakeService(overrides: { env?: NodeJS.ProcessEnv } = {}) {
  return defineService({
    name: 'intake',
    config: IntakeConfig,
    module: IntakeModule,
    consumers: () => [],
    http: (ctx) => ({ port: ctx.config.GPUNET_HTTP_PORT, host: ctx.config.GPUNET_HTTP_HOST }),
    ...overrides,
  });
}
