import { Commands, type SignChainHeadsReply } from '#contracts';
import { Controller } from '@nestjs/common';
import { MessagePattern } from '@nestjs/microservices';
import { NotaryService } from './notary.service.js';

/** `gpunet.cmd.SignChainHeads` (operators: `gpunet digests sign`): sign the chain heads now. */
@Controller()
export class DigestsController {
  constructor(private readonly notary: NotaryService) {}

  @MessagePattern(Commands.SignChainHeads.subject)
  sign(): Promise<SignChainHeadsReply> {
    return this.notary.sign();
  }
}
