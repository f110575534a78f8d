import {
  ApiKeyId,
  ApiKeyRole,
  CreateApiKey,
  CreateTeam,
  DisableTeam,
  ListApiKeys,
  RevokeApiKey,
  TeamId,
  type AdminActionRefused,
  type ApiKeyCreated,
  type ApiKeyView,
  type ListApiKeysReply,
  type ListTeamsReply,
  type TeamView,
} from '#contracts';
import { NotFoundError, TransientError, ValidationError } from '#errors';
import { WrongExpectedVersionError } from '#event-store';
import { CLOCK, EVENT_WRITER, LOGGER, type Clock, type EventWriter } from '#service-kit';
import { Inject, Injectable } from '@nestjs/common';
import { createHash, randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { Principal } from '../auth/api-keys.js';
import { Authenticator } from '../auth/authenticator.js';
import { KeyRingFeed, REFUSALS_STREAM, keyStreamId, teamStreamId } from '../auth/key-ring.feed.js';
import { TEAM_ADMIN_ISSUABLE, allows, assertTeamScope, authorize } from '../auth/permissions.js';
import { ForbiddenError } from '../common/errors.js';
import { decideCreateTeam, decideDisableTeam, decideIssueKey, decideRevokeKey, type Actor, type KeyDirectory } from '../domain/key-directory.js';
import type { RequestTrace } from '../common/trace.js';
import { parsed } from '../common/parsed.js';

/** How long a change waits for the ring to include its own event before answering. */
const READ_YOUR_WRITES_MS = 2_000;
/** How long a team or key request waits for the ring to catch up with the store before it answers 503 (retryable). */
const CATCH_UP_MS = 5_000;

/** Prefix of keys intake issues, so a leaked one is recognisable (e.g. by secret scanners). */
export const API_KEY_PREFIX = 'gpn_';

/** A new key: 32 random bytes, base64url (43 characters) after {@link API_KEY_PREFIX}. Shown once, never stored. */
export function newApiKeySecret(): string {
  return `${API_KEY_PREFIX}${randomBytes(32).toString('base64url')}`;
}

/** A new key id: `key_` and 16 hex characters (64 random bits). */
export function newKeyId(): string {
  return `key_${randomBytes(8).toString('hex')}`;
}

export type Transport = 'http' | 'nats';
type AdminAction = AdminActionRefused['action'];

/**
 * Teams and API keys, one code path for HTTP and NATS. Each change is decided against the ring's
 * directory, appended to intake's own stream (`intake-team-<team>`, `intake-key-<keyId>`) and
 * answered once this instance's ring holds it, so the caller's next request already sees it.
 *
 * Permission refusals by an authenticated key are recorded as `AdminActionRefused` events in
 * `intake-refusals` (and logged): who tried what, when, why.
 */
@Injectable()
export class KeysService {
  constructor(
    @Inject(EVENT_WRITER) private readonly writer: EventWriter,
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(LOGGER) private readonly logger: Logger,
    private readonly auth: Authenticator,
    private readonly feed: KeyRingFeed,
  ) {}

  private get dir(): KeyDirectory {
    return this.auth.ring.directory;
  }

  /**
   * Brings the ring up to the store before a decision or an answer, so what another intake
   * replica recorded a moment ago is seen here too (a key issued through one, revoked through
   * another at once). One indexed read of the team and key events since the ring's position.
   */
  private async current(): Promise<void> {
    if (!(await this.feed.sync(CATCH_UP_MS))) throw new TransientError(`the key ring did not catch up with the store within ${CATCH_UP_MS} ms; ask again`);
  }

  // ── teams ───────────────────────────────────────────────────────────────────────────────

  async createTeam(principal: Principal, body: unknown, transport: Transport, trace: RequestTrace = {}): Promise<TeamView> {
    await this.current();
    await this.guard(principal, 'teams:create', targetOf(body), transport, () => authorize(principal, 'teams:manage'));
    const request = parsed(CreateTeam, body, 'team');
    const event = decideCreateTeam(this.dir, { ...request, by: actorOf(principal), now: this.clock.now() });
    try {
      const result = await this.writer.append(teamStreamId(event.team), [{ type: 'TeamCreated', data: event }], { expectedRevision: 'no_stream', ...correlation(trace) });
      await this.feed.waitFor(result.position, READ_YOUR_WRITES_MS);
    } catch (err) {
      // Another intake instance created it between our check and our append.
      if (err instanceof WrongExpectedVersionError) throw new ValidationError(`team: team \`${event.team}\` already exists`, [{ path: 'team', message: `team \`${event.team}\` already exists`, fix: `choose another id, or see it with \`gpunet teams show ${event.team}\`` }], { cause: err });
      throw err;
    }
    this.logger.info({ team: event.team, by: principal.keyId, correlationId: trace.correlationId }, 'team created');
    return this.dir.teamView(this.dir.requireTeam(event.team), this.clock.now());
  }

  async disableTeam(principal: Principal, body: unknown, transport: Transport, trace: RequestTrace = {}): Promise<TeamView> {
    await this.current();
    await this.guard(principal, 'teams:disable', targetOf(body), transport, () => authorize(principal, 'teams:manage'));
    const request = parsed(DisableTeam, body, 'request');
    const event = decideDisableTeam(this.dir, { ...request, by: actorOf(principal), now: this.clock.now() });
    if (event) {
      const result = await this.writer.append(teamStreamId(event.team), [{ type: 'TeamDisabled', data: event }], { ...correlation(trace) });
      await this.feed.waitFor(result.position, READ_YOUR_WRITES_MS);
      this.logger.info({ team: event.team, by: principal.keyId, correlationId: trace.correlationId }, 'team disabled');
    }
    return this.dir.teamView(this.dir.requireTeam(request.team), this.clock.now());
  }

  async team(principal: Principal, team: string, transport: Transport): Promise<TeamView> {
    await this.current();
    await this.guard(principal, 'teams:read', { team }, transport, () => {
      authorize(principal, 'teams:read');
      assertTeamScope(principal, team, 'read the team');
    });
    const found = this.dir.teams.get(team);
    if (!found) throw new NotFoundError(`no team \`${team}\`; see the teams with \`gpunet teams list\``);
    return this.dir.teamView(found, this.clock.now());
  }

  async teams(principal: Principal, transport: Transport): Promise<ListTeamsReply> {
    await this.current();
    await this.guard(principal, 'teams:read', {}, transport, () => authorize(principal, 'teams:read'));
    const all = this.dir.listTeams(this.clock.now());
    return { teams: allows(principal, 'keys:all-teams') ? all : all.filter((t) => t.team === principal.team) };
  }

  // ── keys ────────────────────────────────────────────────────────────────────────────────

  async createKey(principal: Principal, body: unknown, transport: Transport, trace: RequestTrace = {}): Promise<ApiKeyCreated> {
    await this.current();
    await this.guard(principal, 'keys:create', targetOf(body), transport, () => authorize(principal, 'keys:manage'));
    const request = parsed(CreateApiKey, body, 'key');
    const team = request.team ?? principal.team;
    await this.guard(principal, 'keys:create', { team, role: request.role }, transport, () => {
      assertTeamScope(principal, team, 'issue keys');
      if (!allows(principal, 'keys:all-teams') && !TEAM_ADMIN_ISSUABLE.includes(request.role)) {
        throw new ForbiddenError(
          `API key \`${principal.keyId}\` (role ${principal.role}) may not issue role ${request.role}: it issues roles ${TEAM_ADMIN_ISSUABLE.join(' and ')} only; ${request.role} keys reach beyond one team and are issued by a key with role operator`,
        );
      }
    });
    const secret = newApiKeySecret();
    const event = decideIssueKey(this.dir, {
      keyId: newKeyId(),
      sha256: createHash('sha256').update(secret, 'utf8').digest('hex'),
      team,
      role: request.role,
      name: request.name,
      expiresAt: request.expiresAt,
      by: actorOf(principal),
      now: this.clock.now(),
    });
    const result = await this.writer.append(keyStreamId(event.keyId), [{ type: 'ApiKeyIssued', data: event }], { expectedRevision: 'no_stream', ...correlation(trace) });
    await this.feed.waitFor(result.position, READ_YOUR_WRITES_MS);
    this.logger.info({ keyId: event.keyId, team, role: event.role, by: principal.keyId, correlationId: trace.correlationId }, 'api key issued');
    return { ...this.dir.keyView(this.dir.requireKey(event.keyId), this.clock.now()), apiKey: secret };
  }

  async revokeKey(principal: Principal, body: unknown, transport: Transport, trace: RequestTrace = {}): Promise<ApiKeyView> {
    await this.current();
    await this.guard(principal, 'keys:revoke', targetOf(body), transport, () => authorize(principal, 'keys:manage'));
    const request = parsed(RevokeApiKey, body, 'request');
    // An unknown id is refused before the scope check: there is no team to check it against.
    const key = this.dir.requireKey(request.keyId);
    await this.guard(principal, 'keys:revoke', { keyId: key.keyId, team: key.team }, transport, () => assertTeamScope(principal, key.team, 'revoke keys'));
    const event = decideRevokeKey(this.dir, { ...request, by: actorOf(principal), now: this.clock.now() });
    if (event) {
      const result = await this.writer.append(keyStreamId(event.keyId), [{ type: 'ApiKeyRevoked', data: event }], { ...correlation(trace) });
      await this.feed.waitFor(result.position, READ_YOUR_WRITES_MS);
      this.logger.info({ keyId: event.keyId, team: event.team, by: principal.keyId, reason: event.reason, correlationId: trace.correlationId }, 'api key revoked');
    }
    return this.dir.keyView(key, this.clock.now());
  }

  async keys(principal: Principal, body: unknown, transport: Transport): Promise<ListApiKeysReply> {
    await this.current();
    await this.guard(principal, 'keys:read', targetOf(body), transport, () => authorize(principal, 'keys:read'));
    const request = parsed(ListApiKeys, body, 'query');
    const allTeams = allows(principal, 'keys:all-teams');
    const team = request.team ?? (allTeams ? undefined : principal.team);
    if (team !== undefined) await this.guard(principal, 'keys:read', { team }, transport, () => assertTeamScope(principal, team, 'list the keys'));
    if (team !== undefined) this.dir.requireTeam(team);
    return { keys: this.dir.listKeys(team, this.clock.now()) };
  }

  /**
   * Runs the permission check; a refusal is recorded (`AdminActionRefused`) and logged before it
   * is thrown. A failure to record is logged and does not turn the refusal into an answer.
   */
  async guard(principal: Principal, action: AdminAction, target: AdminActionRefused['target'], transport: Transport, check: () => void): Promise<void> {
    try {
      check();
    } catch (err) {
      if (!(err instanceof ForbiddenError)) throw err;
      const refusal: AdminActionRefused = {
        action,
        by: { keyId: principal.keyId, team: principal.team, role: principal.role },
        target,
        reason: err.message.slice(0, 1000),
        transport,
        refusedAt: this.clock.now().toISOString(),
      };
      this.logger.warn({ ...refusal }, 'admin action refused');
      await this.writer.append(REFUSALS_STREAM, [{ type: 'AdminActionRefused', data: refusal }], { team: principal.team }).catch((e: unknown) => this.logger.error({ err: e, action, keyId: principal.keyId }, 'could not record a refused admin action'));
      throw err;
    }
  }
}

/** What a request names (its valid team, key id and role), for the record of a refusal checked before the body is. */
function targetOf(body: unknown): AdminActionRefused['target'] {
  const b = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
  const team = TeamId.safeParse(b.team);
  const keyId = ApiKeyId.safeParse(b.keyId);
  const role = ApiKeyRole.safeParse(b.role);
  return { ...(team.success ? { team: team.data } : {}), ...(keyId.success ? { keyId: keyId.data } : {}), ...(role.success ? { role: role.data } : {}) };
}

function actorOf(principal: Principal): Actor {
  return { keyId: principal.keyId, team: principal.team };
}

function correlation(trace: RequestTrace): { correlationId?: string } {
  return trace.correlationId !== undefined ? { correlationId: trace.correlationId } : {};
}

