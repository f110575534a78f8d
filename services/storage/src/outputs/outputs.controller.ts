import { commandSubject, HEADERS, type StoreOutputs, type StoreOutputsReply } from '#contracts';
import { NatsQueryContext } from '#service-kit';
import { Controller } from '@nestjs/common';
import { Ctx, MessagePattern, Payload } from '@nestjs/microservices';
import { OutputsService } from './outputs.service.js';

/** `gpunet.cmd.StoreOutputs`: an execution agent asks to record the outputs it uploaded. */
@Controller()
export class OutputsController {
  constructor(private readonly outputs: OutputsService) {}

  @MessagePattern(commandSubject('StoreOutputs'))
  async storeOutputs(@Payload() cmd: StoreOutputs, @Ctx() ctx: NatsQueryContext): Promise<StoreOutputsReply> {
    const correlationId = ctx.getHeaders()?.get(HEADERS.correlationId) || undefined;
    const log = ctx.getLogger().child({ jobId: cmd.jobId, attemptId: cmd.attemptId });
    return this.outputs.record(cmd, correlationId ? { correlationId } : {}, log);
  }
}
