import { ReadFeed, formatIssues, type ReadFeedReply } from '#contracts';
import { ValidationError } from '#errors';
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
  scope(principal: Principal, jobId: string | undefined): FeedScope {
    authorize(principal, 'jobs:read');
    if (jobId !== undefined) this.jobs.own(principal, jobId);
    return { team: principal.team, ...(jobId !== undefined ? { jobId } : {}) };
  }

  /** `ReadFeed`: a page after a position. */
  async read(principal: Principal, request: unknown): Promise<ReadFeedReply> {
    const parsed = ReadFeed.safeParse(request ?? {});
    if (!parsed.success) throw new ValidationError('invalid ReadFeed request', formatIssues(parsed.error));
    const scope = this.scope(principal, parsed.data.jobId);
    return this.hub.read(scope.team, { after: BigInt(parsed.data.after), jobId: scope.jobId, limit: parsed.data.limit });
  }
}
