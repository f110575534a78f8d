/**
 * Teams and API keys, managed through intake rather than by editing a file.
 *
 * Every change is an event in intake's own streams (`intake-team-<team>`, `intake-key-<keyId>`):
 * who did it (the acting key's id), what, and when. Intake's key ring is the bootstrap key file
 * plus these events, folded at start and followed afterwards, so a change takes effect on every
 * intake instance without a restart. A key is never stored or published: only its sha256.
 *
 * People reach the commands through intake (HTTP `/v1/teams`, `/v1/keys`, or NATS with the same
 * `Authorization: Bearer <key>` header). Role `operator` manages every team and key; role
 * `admin` manages the keys of its own team only (see docs/decisions/0012-managed-keys-and-teams.md).
 */
import { z } from 'zod';
import { fieldError, strictObject, withFix } from './issues.js';
import { defineCommand, defineEvent, defineQuery } from './message.js';
import { Sha256, TeamId, Timestamp } from './primitives.js';

// ── primitives ────────────────────────────────────────────────────────────────────────────

/** What a key may do; the table is intake's `auth/permissions.ts`. */
export const API_KEY_ROLES = ['producer', 'compliance', 'billing', 'admin', 'operator'] as const;
export type ApiKeyRole = (typeof API_KEY_ROLES)[number];

export const ApiKeyRole = z
  .enum(API_KEY_ROLES, { error: fieldError('role', `must be one of ${API_KEY_ROLES.join(', ')}`, 'write e.g. `role: producer`') })
  .describe(
    '`producer`: submits and reads its team\'s jobs; `compliance`: reads, and audits every team; `billing`: charges, invoices, price lists; ' +
      '`admin`: everything within its team, including its team\'s keys; `operator`: creates teams and manages every team\'s keys, nothing else.',
  );

const keyIdError = fieldError('keyId', 'must be 1–128 visible ASCII characters', 'use the id shown by `gpunet keys list`, e.g. `key_3f9c2a7d1e4b8a60`');
/** Id of an API key: `key_<16 hex>` for issued keys, any name for keys of the bootstrap file. Never the key itself. */
export const ApiKeyId = z.string({ error: keyIdError }).regex(/^[\x21-\x7e]{1,128}$/, { error: keyIdError }).describe('Id of an API key (never the key itself), e.g. `key_3f9c2a7d1e4b8a60`.');

const labelError = fieldError('name', 'must be 1–100 characters', 'write e.g. `--name ci-nightly`');
const Label = z.string({ error: labelError }).min(1, { error: labelError }).max(100, { error: labelError });

const reasonError = fieldError('reason', 'must be at most 500 characters', 'say briefly why, e.g. `leaked in a CI log`');
const Reason = z.string({ error: reasonError }).max(500, { error: reasonError }).describe('Why, for the record.');

function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

/** An IANA time zone, for times shown to the team's people. */
export const TimeZone = z
  .string({ error: fieldError('timeZone', 'must be an IANA time zone', 'write e.g. `Europe/Berlin` or `UTC`') })
  .refine(isTimeZone, { error: withFix('timeZone is not an IANA time zone', 'write e.g. `Europe/Berlin` or `UTC`') })
  .describe('IANA time zone for times shown to the team\'s people, e.g. `Europe/Berlin`.');

const displayNameError = fieldError('displayName', 'must be 1–200 characters', 'write e.g. `displayName: "ML research"`');
const contactError = fieldError('contact', 'must be 1–200 characters', 'write e.g. `contact: ml-oncall@example.com`');

/** Who did it: the acting API key's id and team. */
const Actor = z.object({ keyId: ApiKeyId, team: TeamId }).describe('The API key that made the change (its id and team), never the key itself.');

// ── events ────────────────────────────────────────────────────────────────────────────────

export const TeamCreated = z.object({
  team: TeamId.describe('The team\'s id: the owner of its jobs, keys, blobs and invoices.'),
  displayName: z.string().min(1).max(200).describe('Name for people.'),
  timeZone: TimeZone.optional(),
  contact: z.string().min(1).max(200).optional().describe('Who to reach about the team (an address, a channel).'),
  createdBy: Actor,
  createdAt: Timestamp,
});
export type TeamCreated = z.output<typeof TeamCreated>;

export const TeamDisabled = z.object({
  team: TeamId,
  reason: z.string().max(500).optional().describe('Why, for the record.'),
  disabledBy: Actor,
  disabledAt: Timestamp,
});
export type TeamDisabled = z.output<typeof TeamDisabled>;

export const ApiKeyIssued = z.object({
  keyId: ApiKeyId,
  team: TeamId.describe('The team the key acts for.'),
  role: ApiKeyRole,
  name: z.string().min(1).max(100).optional().describe('A label for people, e.g. `ci-nightly`.'),
  sha256: Sha256.describe('Lower-case hex sha256 of the key: the key itself is shown once to its creator and never recorded.'),
  expiresAt: Timestamp.optional().describe('From this time the key is refused; absent: until revoked.'),
  issuedBy: Actor,
  issuedAt: Timestamp,
});
export type ApiKeyIssued = z.output<typeof ApiKeyIssued>;

export const ApiKeyRevoked = z.object({
  keyId: ApiKeyId,
  team: TeamId.describe('The key\'s team.'),
  sha256: Sha256.describe('sha256 of the key revoked: a later key under the same id (a bootstrap file entry replaced with a new key) is not revoked by this event.'),
  reason: z.string().max(500).optional().describe('Why, for the record (e.g. `leaked in a CI log`).'),
  revokedBy: Actor,
  revokedAt: Timestamp,
});
export type ApiKeyRevoked = z.output<typeof ApiKeyRevoked>;

export const ADMIN_ACTIONS = ['teams:create', 'teams:disable', 'teams:read', 'keys:create', 'keys:revoke', 'keys:read', 'quotas:set', 'quotas:read'] as const;

export const AdminActionRefused = z.object({
  action: z.enum(ADMIN_ACTIONS).describe('What was tried.'),
  by: Actor.extend({ role: ApiKeyRole }).describe('The key that tried (authenticated, so attributable).'),
  target: z
    .object({ team: TeamId.optional(), keyId: ApiKeyId.optional(), role: ApiKeyRole.optional() })
    .describe('What it was tried on.'),
  reason: z.string().min(1).max(1000).describe('Why it was refused, as answered.'),
  transport: z.enum(['http', 'nats']).describe('Where the request came in.'),
  refusedAt: Timestamp,
});
export type AdminActionRefused = z.output<typeof AdminActionRefused>;

export const keyEvents = [
  defineEvent({ name: 'TeamCreated', version: 1, producers: ['intake'], description: 'A team was created: who created it, when, with which display name.', schema: TeamCreated }),
  defineEvent({ name: 'TeamDisabled', version: 1, producers: ['intake'], description: 'A team was disabled: from now on every key of the team is refused.', schema: TeamDisabled }),
  defineEvent({
    name: 'ApiKeyIssued',
    version: 1,
    producers: ['intake'],
    description: 'An API key was issued to a team with a role: its id and sha256 (never the key), who issued it and when. Takes effect at once on every intake.',
    schema: ApiKeyIssued,
  }),
  defineEvent({
    name: 'ApiKeyRevoked',
    version: 1,
    producers: ['intake'],
    description: 'An API key was revoked: who, when, why. Every intake refuses it from then on (within a second).',
    schema: ApiKeyRevoked,
  }),
  defineEvent({
    name: 'AdminActionRefused',
    version: 1,
    producers: ['intake'],
    description: 'An authenticated key tried to manage teams or keys beyond its role or team, and was refused: who, what, when, why.',
    schema: AdminActionRefused,
  }),
] as const;

// ── commands and queries ──────────────────────────────────────────────────────────────────

export const CreateTeam = strictObject(
  {
    team: TeamId.describe('The new team\'s id, e.g. `team-ml`: 1–64 letters, digits, `_` or `-`.'),
    displayName: z.string({ error: displayNameError }).min(1, { error: displayNameError }).max(200, { error: displayNameError }).optional().describe('Name for people. Default: the id.'),
    timeZone: TimeZone.optional(),
    contact: z.string({ error: contactError }).min(1, { error: contactError }).max(200, { error: contactError }).optional().describe('Who to reach about the team.'),
  },
  'CreateTeam',
).describe('Create a team (role `operator`).');
export type CreateTeam = z.output<typeof CreateTeam>;

export const DisableTeam = strictObject({ team: TeamId, reason: Reason.optional() }, 'DisableTeam').describe('Disable a team: all its keys are refused from then on (role `operator`).');
export type DisableTeam = z.output<typeof DisableTeam>;

export const GetTeam = strictObject({ team: TeamId }, 'GetTeam').describe('One team.');
export type GetTeam = z.output<typeof GetTeam>;

export const ListTeams = strictObject({}, 'ListTeams').describe('Every team the caller may see: all for `operator`, its own for `admin`.');
export type ListTeams = z.output<typeof ListTeams>;

export const TeamView = z
  .object({
    team: TeamId,
    displayName: z.string().describe('Name for people (the id when none was given).'),
    timeZone: z.string().optional().describe('IANA time zone of the team, if set.'),
    contact: z.string().optional().describe('Who to reach about the team, if set.'),
    source: z.enum(['events', 'file']).describe('`events`: created with `CreateTeam`; `file`: named by a key of the bootstrap key file.'),
    createdBy: Actor.optional(),
    createdAt: Timestamp.optional(),
    disabled: z.object({ by: Actor, at: Timestamp, reason: z.string().optional().describe('Why, as recorded.') }).optional().describe('Present when the team is disabled.'),
    activeKeys: z.int().min(0).describe('Keys of the team that are neither revoked nor expired.'),
  })
  .describe('A team.');
export type TeamView = z.output<typeof TeamView>;

export const ListTeamsReply = z.object({ teams: z.array(TeamView).describe('Sorted by id.') }).describe('The teams.');
export type ListTeamsReply = z.output<typeof ListTeamsReply>;

export const CreateApiKey = strictObject(
  {
    team: TeamId.optional().describe('The key\'s team; it must exist and not be disabled. Default: the caller\'s team.'),
    role: ApiKeyRole,
    name: Label.optional().describe('A label for people, e.g. `ci-nightly`.'),
    expiresAt: Timestamp.optional().describe('Refuse the key from this time on (must be in the future); absent: until revoked.'),
  },
  'CreateApiKey',
).describe('Issue an API key (role `operator`; `admin` for its own team, roles producer and admin).');
export type CreateApiKey = z.output<typeof CreateApiKey>;

export const RevokeApiKey = strictObject({ keyId: ApiKeyId, reason: Reason.optional() }, 'RevokeApiKey').describe('Revoke an API key: refused from then on, on every intake, within a second.');
export type RevokeApiKey = z.output<typeof RevokeApiKey>;

export const ListApiKeys = strictObject({ team: TeamId.optional().describe('Only this team\'s keys. `admin`: its own team only (the default).') }, 'ListApiKeys').describe('API keys (ids, never the keys).');
export type ListApiKeys = z.output<typeof ListApiKeys>;

export const ApiKeyView = z
  .object({
    keyId: ApiKeyId,
    team: TeamId,
    role: ApiKeyRole,
    name: z.string().optional().describe('The label given at issue.'),
    source: z.enum(['events', 'file']).describe('`events`: issued with `CreateApiKey`; `file`: listed in the bootstrap key file.'),
    issuedBy: Actor.optional(),
    issuedAt: Timestamp.optional(),
    expiresAt: Timestamp.optional(),
    revoked: z.object({ by: Actor, at: Timestamp, reason: z.string().optional().describe('Why, as recorded.') }).optional().describe('Present when the key is revoked.'),
    state: z.enum(['active', 'revoked', 'expired', 'team_disabled']).describe('Whether intake accepts it now.'),
  })
  .describe('An API key as intake knows it: never the key, never its digest.');
export type ApiKeyView = z.output<typeof ApiKeyView>;

export const ApiKeyCreated = ApiKeyView.extend({
  apiKey: z.string().describe('The key, shown this once: it is not stored anywhere (only its sha256), so keep it now.'),
}).describe('The issued key: pass it as `Authorization: Bearer <apiKey>`.');
export type ApiKeyCreated = z.output<typeof ApiKeyCreated>;

export const ListApiKeysReply = z.object({ keys: z.array(ApiKeyView).describe('By team, then issue time.') }).describe('The keys.');
export type ListApiKeysReply = z.output<typeof ListApiKeysReply>;

export const keyCommands = [
  defineCommand({ name: 'CreateTeam', version: 1, handler: 'intake', description: 'Create a team (role `operator`). Same as `POST /v1/teams`.', schema: CreateTeam, replySchema: TeamView }),
  defineCommand({ name: 'DisableTeam', version: 1, handler: 'intake', description: 'Disable a team; its keys are refused (role `operator`). Same as `POST /v1/teams/{team}/disable`.', schema: DisableTeam, replySchema: TeamView }),
  defineCommand({
    name: 'CreateApiKey',
    version: 1,
    handler: 'intake',
    description: 'Issue an API key; the reply holds the key, once (role `operator`, or `admin` for its own team). Same as `POST /v1/keys`.',
    schema: CreateApiKey,
    replySchema: ApiKeyCreated,
  }),
  defineCommand({ name: 'RevokeApiKey', version: 1, handler: 'intake', description: 'Revoke an API key (role `operator`, or `admin` for its own team). Same as `POST /v1/keys/{keyId}/revoke`.', schema: RevokeApiKey, replySchema: ApiKeyView }),
] as const;

export const keyQueries = [
  defineQuery({ name: 'ListTeams', version: 1, service: 'intake', description: 'Teams (role `operator`: all; `admin`: its own). Same as `GET /v1/teams`.', schema: ListTeams, replySchema: ListTeamsReply }),
  defineQuery({ name: 'GetTeam', version: 1, service: 'intake', description: 'One team (role `operator`, or `admin` for its own). Same as `GET /v1/teams/{team}`.', schema: GetTeam, replySchema: TeamView }),
  defineQuery({ name: 'ListApiKeys', version: 1, service: 'intake', description: 'API key ids, teams, roles, who issued them and whether revoked. Same as `GET /v1/keys`.', schema: ListApiKeys, replySchema: ListApiKeysReply }),
] as const;
