import { NotFoundError } from '#errors';
import type { JobView } from '#contracts';
import type { Principal } from '../auth/api-keys.js';
import { ForbiddenError } from '../common/errors.js';
import type { JobsService } from '../jobs/jobs.service.js';
import type { FeedHub } from './feed-hub.js';
import { FeedService } from './feed.service.js';

const principal: Principal = { keyId: 'k1', team: 'team-a', role: 'producer' };

/** The two reads of JobsService the scope uses: the views as they are, and the views at the store's head. */
function jobs(now: 'known' | 'unknown' | 'other-team', atHead: 'known' | 'unknown'): JobsService {
  return {
    own: () => {
      if (now === 'unknown') throw new NotFoundError('job j1 does not exist');
      if (now === 'other-team') throw new ForbiddenError('job j1 is another team\'s');
      return {} as JobView;
    },
    get: () => (atHead === 'known' ? Promise.resolve({} as JobView) : Promise.reject(new NotFoundError('job j1 does not exist'))),
  } as unknown as JobsService;
}

describe('feed scope of one job', () => {
  it('looks a job up again at the store\'s head before calling it unknown (submitted through another intake a moment ago)', async () => {
    await expect(new FeedService({} as FeedHub, jobs('unknown', 'known')).scope(principal, 'j1')).resolves.toEqual({ team: 'team-a', jobId: 'j1' });
  });

  it('is 404 for a job the store does not hold either, and 403 for another team\'s without a second look', async () => {
    await expect(new FeedService({} as FeedHub, jobs('unknown', 'unknown')).scope(principal, 'j1')).rejects.toBeInstanceOf(NotFoundError);
    await expect(new FeedService({} as FeedHub, jobs('other-team', 'known')).scope(principal, 'j1')).rejects.toBeInstanceOf(ForbiddenError);
  });
});
