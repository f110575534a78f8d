import { API_KEY_ROLES } from '#contracts';
import { Controller, Get, Req } from '@nestjs/common';
import type { Request } from 'express';
import { z } from 'zod';
import { Authenticator } from './authenticator.js';
import { ROLE_ACTIONS } from './permissions.js';

export const WhoAmI = z
  .object({
    keyId: z.string().describe('Id of the key that asked (never the key).'),
    team: z.string().describe('The team the key acts for.'),
    role: z.enum(API_KEY_ROLES).describe('The key\'s role.'),
    actions: z.array(z.string()).describe('What the role may do, e.g. `jobs:read`, `invoices:read`, `prices:publish`: a client shows only what the API will allow.'),
  })
  .describe('Who the API key is and what it may do.');
export type WhoAmI = z.output<typeof WhoAmI>;

/** `GET /v1/whoami`: the caller's own key, team, role and permissions (what a console shows or hides). */
@Controller('v1/whoami')
export class WhoAmIHttpController {
  constructor(private readonly auth: Authenticator) {}

  @Get()
  whoami(@Req() req: Request): WhoAmI {
    const p = this.auth.fromHttp(req.headers.authorization);
    return { keyId: p.keyId, team: p.team, role: p.role, actions: [...ROLE_ACTIONS[p.role]] };
  }
}
