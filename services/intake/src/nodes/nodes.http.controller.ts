import type { ListNodeStatesReply, NodeAdminReply } from '#contracts';
import { Body, Controller, Get, HttpCode, Param, Post, Req } from '@nestjs/common';
import type { Request } from 'express';
import { Authenticator } from '../auth/authenticator.js';
import { correlationIdOf } from '../http/request.js';
import { NodesService, type NodeAction } from './nodes.service.js';

/**
 * `GET /v1/nodes`, `POST /v1/nodes/{nodeId}/cordon|drain|uncordon` (role `operator`, decision
 * 0031); the CLI's `gpunet nodes …` does the same over NATS with the operator identity.
 */
@Controller('v1/nodes')
export class NodesHttpController {
  constructor(
    private readonly auth: Authenticator,
    private readonly nodes: NodesService,
  ) {}

  @Get()
  list(@Req() req: Request): Promise<ListNodeStatesReply> {
    return this.nodes.list(this.caller(req), { correlationId: correlationIdOf(req.headers) });
  }

  @Post(':nodeId/cordon')
  @HttpCode(200)
  cordon(@Req() req: Request, @Param('nodeId') nodeId: string, @Body() body: unknown): Promise<NodeAdminReply> {
    return this.act(req, 'cordon', nodeId, body);
  }

  @Post(':nodeId/drain')
  @HttpCode(200)
  drain(@Req() req: Request, @Param('nodeId') nodeId: string, @Body() body: unknown): Promise<NodeAdminReply> {
    return this.act(req, 'drain', nodeId, body);
  }

  @Post(':nodeId/uncordon')
  @HttpCode(200)
  uncordon(@Req() req: Request, @Param('nodeId') nodeId: string, @Body() body: unknown): Promise<NodeAdminReply> {
    return this.act(req, 'uncordon', nodeId, body);
  }

  private act(req: Request, action: NodeAction, nodeId: string, body: unknown): Promise<NodeAdminReply> {
    return this.nodes.act(this.caller(req), action, nodeId, body, { correlationId: correlationIdOf(req.headers) });
  }

  private caller(req: Request) {
    return this.auth.fromHttp(req.headers.authorization, { ip: req.ip, url: req.originalUrl });
  }
}
