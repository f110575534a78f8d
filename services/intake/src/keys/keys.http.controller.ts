import type { ApiKeyCreated, ApiKeyView, ListApiKeysReply, ListTeamsReply, TeamView } from '#contracts';
import { Body, Controller, Get, Header, HttpCode, Param, Post, Req } from '@nestjs/common';
import type { Request } from 'express';
import { Authenticator } from '../auth/authenticator.js';
import { correlationIdOf, single } from '../http/request.js';
import { KeysService } from './keys.service.js';

function body(value: unknown): Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}

function caller(auth: Authenticator, req: Request) {
  return auth.fromHttp(req.headers.authorization, { ip: req.ip, url: req.originalUrl });
}

/**
 * `POST /v1/teams`, `GET /v1/teams`, `GET /v1/teams/{team}`, `POST /v1/teams/{team}/disable`:
 * role `operator` (an `admin` reads its own team).
 */
@Controller('v1/teams')
export class TeamsHttpController {
  constructor(
    private readonly auth: Authenticator,
    private readonly keys: KeysService,
  ) {}

  @Post()
  @HttpCode(201)
  create(@Req() req: Request, @Body() payload: unknown): Promise<TeamView> {
    return this.keys.createTeam(caller(this.auth, req), payload, 'http', { correlationId: correlationIdOf(req.headers) });
  }

  @Get()
  list(@Req() req: Request): Promise<ListTeamsReply> {
    return this.keys.teams(caller(this.auth, req), 'http');
  }

  @Get(':team')
  get(@Req() req: Request, @Param('team') team: string): Promise<TeamView> {
    return this.keys.team(caller(this.auth, req), team, 'http');
  }

  @Post(':team/disable')
  @HttpCode(200)
  disable(@Req() req: Request, @Param('team') team: string, @Body() payload: unknown): Promise<TeamView> {
    return this.keys.disableTeam(caller(this.auth, req), { ...body(payload), team }, 'http', { correlationId: correlationIdOf(req.headers) });
  }
}

/**
 * `POST /v1/keys` (the reply holds the key, once), `GET /v1/keys?team=`, `POST /v1/keys/{keyId}/revoke`:
 * role `operator` for every team, `admin` for its own.
 */
@Controller('v1/keys')
export class KeysHttpController {
  constructor(
    private readonly auth: Authenticator,
    private readonly keys: KeysService,
  ) {}

  @Post()
  @HttpCode(201)
  // The answer holds a key: no cache or proxy may keep it.
  @Header('Cache-Control', 'no-store')
  create(@Req() req: Request, @Body() payload: unknown): Promise<ApiKeyCreated> {
    return this.keys.createKey(caller(this.auth, req), payload, 'http', { correlationId: correlationIdOf(req.headers) });
  }

  @Get()
  list(@Req() req: Request): Promise<ListApiKeysReply> {
    const team = single((req.query as Record<string, string | string[] | undefined>).team);
    return this.keys.keys(caller(this.auth, req), team !== undefined ? { team } : {}, 'http');
  }

  @Post(':keyId/revoke')
  @HttpCode(200)
  revoke(@Req() req: Request, @Param('keyId') keyId: string, @Body() payload: unknown): Promise<ApiKeyView> {
    return this.keys.revokeKey(caller(this.auth, req), { ...body(payload), keyId }, 'http', { correlationId: correlationIdOf(req.headers) });
  }
}
