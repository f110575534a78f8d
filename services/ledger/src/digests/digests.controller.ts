import { Commands, Queries, type ChainStatus, type SignChainHeadsReply, type VerifyChain } from '#contracts';
import { Controller } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import { ChainStatusService } from './chain-status.service.js';
import { NotaryService } from './notary.service.js';

/**
 * `gpunet.cmd.SignChainHeads` (operators: `gpunet digests sign`): sign the chain heads now;
 * `gpunet.qry.ledger.VerifyChain` (people: `GET /v1/audit/chain`): the chain's verification status.
 */
@Controller()
export class DigestsController {
  constructor(
    private readonly notary: NotaryService,
    private readonly chain: ChainStatusService,
  ) {}

  @MessagePattern(Commands.SignChainHeads.subject)
  sign(): Promise<SignChainHeadsReply> {
    return this.notary.sign();
  }

  @MessagePattern(Queries.VerifyChain.subject)
  verify(@Payload() query: VerifyChain): Promise<ChainStatus> {
    return this.chain.check(query.full);
  }
}
