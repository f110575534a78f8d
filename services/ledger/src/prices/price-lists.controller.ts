import { Commands, Queries, type ListPriceListsReply, type PriceListPublished, type RecordPriceList } from '#contracts';
import { CLOCK, type Clock } from '#service-kit';
import { Controller, Inject } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import type { PriceListVersion } from '../domain/index.js';
import { PriceBookService } from './price-book.service.js';

/** `gpunet.cmd.RecordPriceList` (intake → ledger only, role checked there, `principal` from the caller's key) and `gpunet.qry.ledger.ListPriceLists`. */
@Controller()
export class PriceListsController {
  constructor(
    private readonly book: PriceBookService,
    @Inject(CLOCK) private readonly clock: Clock,
  ) {}

  @MessagePattern(Commands.RecordPriceList.subject)
  record(@Payload() request: RecordPriceList): Promise<PriceListPublished> {
    // Who published comes from the principal intake set from the caller's key (only intake may send this).
    const { principal, ...list } = request;
    return this.book.publish({ ...list, publishedBy: `${principal.team}/${principal.keyId}` });
  }

  @MessagePattern(Queries.ListPriceLists.subject)
  async list(): Promise<ListPriceListsReply> {
    const versions = await this.book.published();
    const now = this.clock.now();
    const reply: ListPriceListsReply = { versions, at: now.toISOString() };
    const current = currentVersion(await this.book.versions(), now.getTime());
    if (current !== undefined) reply.current = current;
    return reply;
  }
}

/** The version in force at `at` (latest effectiveFrom ≤ at, the higher number on a tie). */
function currentVersion(versions: readonly PriceListVersion[], at: number): number | undefined {
  let best: PriceListVersion | undefined;
  for (const v of versions) {
    if (v.effectiveFrom > at) continue;
    if (!best || v.effectiveFrom > best.effectiveFrom || (v.effectiveFrom === best.effectiveFrom && v.version > best.version)) best = v;
  }
  return best?.version;
}
