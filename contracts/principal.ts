/**
 * Who asks a query or command behind intake. Intake sets it from the caller's authenticated API
 * key (never from what the caller sent); the subjects that carry it accept only intake and the
 * operator (nats-server's permissions, deploy/nats-permissions.yaml), so a handler may trust it.
 */
import { z } from 'zod';
import { TeamId } from './primitives.js';

export const CallerPrincipal = z
  .object({
    keyId: z.string().min(1).describe('Id of the API key that asked (never the key itself).'),
    team: TeamId.describe('The key\'s team.'),
    role: z.string().min(1).describe('The key\'s role, e.g. `producer`, `billing`, `compliance`.'),
    allTeams: z.boolean().describe('True when the answer may cover every team (a compliance key\'s audit, or the operator); false confines it to `team`.'),
  })
  .describe('Who asks: set by intake from the caller\'s key; the subject accepts only intake (and the operator). Never copied from a request body.');
export type CallerPrincipal = z.output<typeof CallerPrincipal>;
