import { ReadFeed, formatIssues, type ReadFeedReply } from '#contracts';
import { NotFoundError, ValidationError } from '#errors';
import { Injectable } from '@nestjs/common';
import type { Principal } from '../auth/api-keys.js';
import { authorize } from '../auth/permissions.js';
import { JobsService } from '../jobs/jobs.service.js';
import { FeedHub } from './feed-hub.js';

/** A feed request, checked: the caller's team, and one of its own jobs when `jobId` is given. */
export interface FeedScope {
  team: string;
  jobId?: string | undefined;
}

/** The team feed's use cases, shared by HTTP (SSE) and NATS (`ReadFeed`). */
@Injectable()
export class FeedService {
  constructor(
    readonly hub: FeedHub,
    private readonly jobs: JobsService,
  ) {}

  /**
   * The caller's feed scope: its own team (never another's: there is no way to name one), and a
   * job only if it is the team's (another team's job is 403, an unknown one 404, as everywhere).
   */
  async scope(principal: Principal, jobId: string | undefined): Promise<FeedScope> {
    authorize(principal, 'jobs:read');
    if (jobId !== undefined) {
      // A job this intake's views do not hold yet (submitted through another intake a moment ago)
      // is looked up again at the store's head before it is called unknown.
      try {
        await this.jobs.own(principal, jobId);
      } catch (err) {
        if (!(err instanceof NotFoundError)) throw err;
        await this.jobs.get(principal, jobId);
      }
    }
    return { team: principal.team, ...(jobId !== undefined ? { jobId } : {}) };
  }

  /** `ReadFeed`: a page after a position. */
  async read(principal: Principal, request: unknown): Promise<ReadFeedReply> {
    const parsed = ReadFeed.safeParse(request ?? {});
    if (!parsed.success) throw new ValidationError('invalid ReadFeed request', formatIssues(parsed.error));
    const scope = await this.scope(principal, parsed.data.jobId);
    return this.hub.read(scope.team, { after: BigInt(parsed.data.after), jobId: scope.jobId, limit: parsed.data.limit });
  }
}
