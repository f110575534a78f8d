import { defineService } from '#service-kit';
import { ApiKeyRing } from './auth/api-keys.js';
import { Authenticator } from './auth/authenticator.js';
import { KeyRingFeed } from './auth/key-ring.feed.js';
import { IntakeConfig } from './config.js';
import { intakeModule, type IntakeStartState } from './intake.module.js';
import { FeedHub } from './feed/feed-hub.js';
import { JobViewsFeed } from './jobs/job-views.feed.js';

/**
 * Intake as a kit service: HTTP on GPUNET_HTTP_HOST:GPUNET_HTTP_PORT plus the NATS command API.
 * Before either transport takes a request, `onStart` reads the bootstrap API keys, folds the
 * store's team and key events onto them, and folds every job's view. No durable consumer: the
 * key ring and the views follow the event store itself.
 */
export function intakeService(overrides: { env?: NodeJS.ProcessEnv } = {}) {
  let state: IntakeStartState | undefined;
  const started = () => {
    if (!state) throw new Error('intake: the module was built before onStart ran');
    return state;
  };
  return defineService({
    name: 'intake',
    config: IntakeConfig,
    module: intakeModule(started),
    consumers: () => [],
    http: (ctx) => ({ port: ctx.config.GPUNET_HTTP_PORT, host: ctx.config.GPUNET_HTTP_HOST }),
    onStart: async (ctx) => {
      const ring = await ApiKeyRing.load(ctx.config.GPUNET_API_KEYS_FILE, () => ctx.clock.now());
      const keyRing = new KeyRingFeed(ctx.store, ring, ctx.logger);
      await keyRing.start();
      const authenticator = new Authenticator(ring, ctx.logger);
      const feed = new JobViewsFeed(ctx.store, ctx.logger);
      await feed.start();
      const hub = new FeedHub(ctx.store, feed, ctx.nc, ctx.logger);
      hub.start();
      state = { authenticator, keyRing, feed, hub };
    },
    onStop: async () => {
      state?.hub.close();
      await state?.keyRing.close();
      await state?.feed.close();
    },
    ...overrides,
  });
}
