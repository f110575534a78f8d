/**
 * `gpunet teams create|list|show|disable` and `gpunet keys create|list|revoke`: teams and API
 * keys, managed through intake and recorded as events (who, what, when). They use the admin key:
 * `--api-key`, else GPUNET_ADMIN_API_KEY, else GPUNET_API_KEY, else the operator key `gpunet up`
 * kept in state.json. Role `operator` manages every team; `admin` its own team's keys.
 */
import { API_KEY_ROLES, ApiKeyRole, TeamId, Timestamp, formatIssues, type ApiKeyCreated, type ApiKeyView, type ListApiKeysReply, type ListTeamsReply, type TeamView } from '#contracts';
import type { CommandContext } from '../context.js';
import { UsageError } from '../errors.js';
import { EXIT, type ExitCode } from '../exit-codes.js';
import { table } from '../format.js';

const who = (a: { keyId: string; team: string } | undefined) => (a ? `${a.team}/${a.keyId}` : '(file)');

/** One row per team. Pure. */
export function renderTeams(reply: ListTeamsReply): string {
  if (reply.teams.length === 0) return 'no teams';
  const rows = reply.teams.map((t) => [t.team, t.displayName, t.disabled ? 'disabled' : 'enabled', String(t.activeKeys), t.createdAt ?? '', t.source === 'file' ? '(key file)' : who(t.createdBy)]);
  return table(['TEAM', 'NAME', 'STATE', 'ACTIVE KEYS', 'CREATED (UTC)', 'CREATED BY'], rows, ['l', 'l', 'l', 'r', 'l', 'l']);
}

/** One team, then its keys. Pure. */
export function renderTeam(t: TeamView, keys?: ListApiKeysReply): string {
  const lines = [
    `team ${t.team}  ${t.displayName}${t.disabled ? `  DISABLED ${t.disabled.at} by ${who(t.disabled.by)}${t.disabled.reason ? ` (${t.disabled.reason})` : ''}` : ''}`,
    `  created: ${t.source === 'file' ? 'by the bootstrap key file' : `${t.createdAt} by ${who(t.createdBy)}`}`,
    ...(t.timeZone ? [`  time zone: ${t.timeZone}`] : []),
    ...(t.contact ? [`  contact: ${t.contact}`] : []),
    `  active keys: ${t.activeKeys}`,
  ];
  if (keys) lines.push('', renderKeys(keys));
  return lines.join('\n');
}

/** One row per key: never the key. Pure. */
export function renderKeys(reply: ListApiKeysReply): string {
  if (reply.keys.length === 0) return 'no keys';
  const rows = reply.keys.map((k) => [
    k.keyId,
    k.team,
    k.role,
    k.name ?? '',
    k.issuedAt ?? '(key file)',
    k.source === 'file' ? '' : who(k.issuedBy),
    k.state === 'revoked' && k.revoked ? `revoked ${k.revoked.at} by ${who(k.revoked.by)}${k.revoked.reason ? `: ${k.revoked.reason}` : ''}` : k.state === 'active' && k.expiresAt ? `active until ${k.expiresAt}` : k.state,
  ]);
  return table(['KEY ID', 'TEAM', 'ROLE', 'NAME', 'CREATED (UTC)', 'BY', 'STATE'], rows);
}

/** A revoked key, in a line. Pure. */
export function renderRevoked(k: ApiKeyView): string {
  return `revoked API key ${k.keyId} (team ${k.team}, role ${k.role}) at ${k.revoked?.at ?? '?'}; every intake refuses it from now on`;
}

function checked<T>(schema: { safeParse(v: unknown): { success: true; data: T } | { success: false; error: Parameters<typeof formatIssues>[0] } }, value: unknown, flag: string): T {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issues = formatIssues(result.error).map((i) => ({ ...i, path: flag }));
  throw new UsageError(`${flag}: ${issues.map((i) => i.message).join('; ')}`, issues);
}

// ── teams ─────────────────────────────────────────────────────────────────────────────────

export async function teamsCreate(ctx: CommandContext, team: string, opts: { displayName?: string; timeZone?: string; contact?: string }): Promise<ExitCode> {
  checked(TeamId, team, 'team');
  const created = await (await ctx.client({ admin: true })).createTeam({
    team,
    ...(opts.displayName !== undefined ? { displayName: opts.displayName } : {}),
    ...(opts.timeZone !== undefined ? { timeZone: opts.timeZone } : {}),
    ...(opts.contact !== undefined ? { contact: opts.contact } : {}),
  });
  ctx.out.doc(created);
  ctx.out.line(`created team ${created.team} (${created.displayName}); issue its first key with \`gpunet keys create --team ${created.team} --role producer\``);
  return EXIT.ok;
}

export async function teamsList(ctx: CommandContext): Promise<ExitCode> {
  const reply = await (await ctx.client({ admin: true })).teams();
  ctx.out.doc(reply);
  ctx.out.line(renderTeams(reply));
  return EXIT.ok;
}

export async function teamsShow(ctx: CommandContext, team: string): Promise<ExitCode> {
  checked(TeamId, team, 'team');
  const client = await ctx.client({ admin: true });
  const view = await client.team(team);
  const keys = await client.apiKeys({ team });
  ctx.out.doc({ ...view, keys: keys.keys });
  ctx.out.line(renderTeam(view, keys));
  return EXIT.ok;
}

export async function teamsDisable(ctx: CommandContext, team: string, opts: { reason?: string }): Promise<ExitCode> {
  checked(TeamId, team, 'team');
  const view = await (await ctx.client({ admin: true })).disableTeam(team, opts.reason);
  ctx.out.doc(view);
  ctx.out.line(`disabled team ${view.team}: every key of it is refused from now on`);
  return EXIT.ok;
}

// ── keys ──────────────────────────────────────────────────────────────────────────────────

export interface KeysCreateFlags {
  team?: string;
  role?: string;
  name?: string;
  expires?: string;
}

export async function keysCreate(ctx: CommandContext, opts: KeysCreateFlags): Promise<ExitCode> {
  if (opts.role === undefined) throw new UsageError('--role is missing', [{ path: '--role', message: 'is missing', fix: `give one of ${API_KEY_ROLES.join(', ')}, e.g. \`--role producer\`` }]);
  const role = checked(ApiKeyRole, opts.role, '--role');
  if (opts.team !== undefined) checked(TeamId, opts.team, '--team');
  if (opts.expires !== undefined) checked(Timestamp, opts.expires, '--expires');
  const created: ApiKeyCreated = await (await ctx.client({ admin: true })).createApiKey({
    role,
    ...(opts.team !== undefined ? { team: opts.team } : {}),
    ...(opts.name !== undefined ? { name: opts.name } : {}),
    ...(opts.expires !== undefined ? { expiresAt: opts.expires } : {}),
  });
  ctx.out.doc(created);
  ctx.out.line(created.apiKey);
  ctx.out.note(`issued API key ${created.keyId} (team ${created.team}, role ${created.role}); the key above is shown this once and stored nowhere, keep it now`);
  return EXIT.ok;
}

export async function keysList(ctx: CommandContext, opts: { team?: string }): Promise<ExitCode> {
  if (opts.team !== undefined) checked(TeamId, opts.team, '--team');
  const reply = await (await ctx.client({ admin: true })).apiKeys(opts.team !== undefined ? { team: opts.team } : {});
  ctx.out.doc(reply);
  ctx.out.line(renderKeys(reply));
  return EXIT.ok;
}

export async function keysRevoke(ctx: CommandContext, keyId: string, opts: { reason?: string }): Promise<ExitCode> {
  const view = await (await ctx.client({ admin: true })).revokeApiKey(keyId, opts.reason);
  ctx.out.doc(view);
  ctx.out.line(renderRevoked(view));
  return EXIT.ok;
}
