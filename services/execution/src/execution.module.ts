import { Module } from '@nestjs/common';
import { AgentController } from './agent/agent.controller.js';
import { NodeAgentService } from './agent/node-agent.service.js';

/** The execution node agent: placements in, attempts run, their events out. */
@Module({
  controllers: [AgentController],
  providers: [NodeAgentService],
})
export class ExecutionModule {}
