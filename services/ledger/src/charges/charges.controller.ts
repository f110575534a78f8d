import { querySubject, type GetCharges, type GetChargesReply, type UsageRecorded } from '#contracts';
import type { EventStore } from '#event-store';
import { EVENT_STORE } from '#service-kit';
import { Controller, Inject } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import { chargesFor, evolve, initialCharges, USAGE_STREAM_PREFIX } from '../domain/index.js';

/** Events read per page when folding a team's usage lines. */
const PAGE = 1_000;

/**
 * Answers `gpunet.qry.ledger.GetCharges` from the store: the team's (or the job's) UsageRecorded
 * lines, read through the store's team / job index and folded by the charges read model, so the
 * answer is always what the log says, right after a line is recorded.
 */
@Controller()
export class ChargesController {
  constructor(@Inject(EVENT_STORE) private readonly store: EventStore) {}

  @MessagePattern(querySubject('ledger', 'GetCharges'))
  async getCharges(@Payload() query: GetCharges): Promise<GetChargesReply> {
    // The team is the principal's (set by intake from the caller's key; only intake may send this query).
    const team = query.principal.team;
    const state = initialCharges();
    const filter = {
      types: ['UsageRecorded'],
      streamPrefix: USAGE_STREAM_PREFIX,
      team,
      ...(query.jobId === undefined ? {} : { jobId: query.jobId }),
    };
    // Pages up to the head seen first: the answer is the log as of one position, however long paging takes.
    const head = await this.store.headPosition();
    let from = 0n;
    for (;;) {
      const page = await this.store.readAll({ fromPosition: from, toPosition: head, maxCount: PAGE, filter });
      for (const e of page) evolve(state, { type: 'UsageRecorded', data: e.data as UsageRecorded });
      if (page.length < PAGE) break;
      from = page[page.length - 1]!.position;
    }
    return chargesFor(state, { team, ...(query.jobId === undefined ? {} : { jobId: query.jobId }), ...(query.from === undefined ? {} : { from: query.from }), ...(query.to === undefined ? {} : { to: query.to }) });
  }
}
