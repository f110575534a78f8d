import {
  Commands,
  HEADERS,
  Queries,
  TraceId,
  type ApiKeyCreated,
  type ApiKeyView,
  type CreateApiKey,
  type CreateTeam,
  type DisableTeam,
  type GetTeam,
  type ListApiKeys,
  type ListApiKeysReply,
  type ListTeamsReply,
  type RevokeApiKey,
  type TeamView,
} from '#contracts';
import { NatsQueryContext } from '#service-kit';
import type { MsgHdrs } from '@nats-io/transport-node';
import { Controller } from '@nestjs/common';
import { Ctx, MessagePattern, Payload } from '@nestjs/microservices';
import { Authenticator } from '../auth/authenticator.js';
import type { RequestTrace } from '../common/trace.js';
import { KeysService } from './keys.service.js';

/**
 * Teams and keys on NATS: `gpunet.cmd.CreateTeam`, `DisableTeam`, `CreateApiKey`, `RevokeApiKey`
 * and `gpunet.qry.intake.ListTeams`, `GetTeam`, `ListApiKeys`; same `Authorization` header, same
 * rules as HTTP.
 */
@Controller()
export class KeysNatsController {
  constructor(
    private readonly auth: Authenticator,
    private readonly keys: KeysService,
  ) {}

  @MessagePattern(Commands.CreateTeam.subject)
  createTeam(@Payload() request: CreateTeam, @Ctx() ctx: NatsQueryContext): Promise<TeamView> {
    const h = ctx.getHeaders();
    return this.keys.createTeam(this.auth.fromNats(h), request, 'nats', trace(h));
  }

  @MessagePattern(Commands.DisableTeam.subject)
  disableTeam(@Payload() request: DisableTeam, @Ctx() ctx: NatsQueryContext): Promise<TeamView> {
    const h = ctx.getHeaders();
    return this.keys.disableTeam(this.auth.fromNats(h), request, 'nats', trace(h));
  }

  @MessagePattern(Commands.CreateApiKey.subject)
  createKey(@Payload() request: CreateApiKey, @Ctx() ctx: NatsQueryContext): Promise<ApiKeyCreated> {
    const h = ctx.getHeaders();
    return this.keys.createKey(this.auth.fromNats(h), request, 'nats', trace(h));
  }

  @MessagePattern(Commands.RevokeApiKey.subject)
  revokeKey(@Payload() request: RevokeApiKey, @Ctx() ctx: NatsQueryContext): Promise<ApiKeyView> {
    const h = ctx.getHeaders();
    return this.keys.revokeKey(this.auth.fromNats(h), request, 'nats', trace(h));
  }

  @MessagePattern(Queries.ListTeams.subject)
  teams(@Payload() _request: unknown, @Ctx() ctx: NatsQueryContext): Promise<ListTeamsReply> {
    return this.keys.teams(this.auth.fromNats(ctx.getHeaders()), 'nats');
  }

  @MessagePattern(Queries.GetTeam.subject)
  team(@Payload() request: GetTeam, @Ctx() ctx: NatsQueryContext): Promise<TeamView> {
    return this.keys.team(this.auth.fromNats(ctx.getHeaders()), request.team, 'nats');
  }

  @MessagePattern(Queries.ListApiKeys.subject)
  list(@Payload() request: ListApiKeys, @Ctx() ctx: NatsQueryContext): Promise<ListApiKeysReply> {
    return this.keys.keys(this.auth.fromNats(ctx.getHeaders()), request, 'nats');
  }
}

function trace(headers: MsgHdrs | undefined): RequestTrace {
  const id = headers?.get(HEADERS.correlationId);
  return id && TraceId.safeParse(id).success ? { correlationId: id } : {};
}
