import { Queries, type ReadFeed, type ReadFeedReply } from '#contracts';
import { NatsQueryContext } from '#service-kit';
import { Controller } from '@nestjs/common';
import { Ctx, MessagePattern, Payload } from '@nestjs/microservices';
import { Authenticator } from '../auth/authenticator.js';
import { FeedService } from './feed.service.js';

/**
 * `gpunet.qry.intake.ReadFeed`: a page of the caller's team feed after a position
 * (`Authorization: Bearer <key>` header). Live entries are announced on `gpunet.feed.<team>.<jobId>`.
 */
@Controller()
export class FeedNatsController {
  constructor(
    private readonly auth: Authenticator,
    private readonly feed: FeedService,
  ) {}

  @MessagePattern(Queries.ReadFeed.subject)
  read(@Payload() request: ReadFeed, @Ctx() ctx: NatsQueryContext): Promise<ReadFeedReply> {
    return this.feed.read(this.auth.fromNats(ctx.getHeaders()), request);
  }
}
