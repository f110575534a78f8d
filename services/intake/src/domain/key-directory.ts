/**
 * Teams and API keys as intake knows them: the bootstrap key file plus the events
 * (`TeamCreated`, `TeamDisabled`, `ApiKeyIssued`, `ApiKeyRevoked`), folded in store order.
 * Pure: `apply` evolves it, the `decide*` functions check a change against it and return the
 * event to append (time, ids and digests injected). Authentication (digests compared in constant
 * time) is `auth/api-keys.ts`, over this directory.
 */
import type { ApiKeyIssued, ApiKeyRevoked, ApiKeyRole, ApiKeyView, TeamCreated, TeamDisabled, TeamView } from '#contracts';
import { ValidationError } from '#errors';

/** Who acts: the key's id and team. */
export interface Actor {
  keyId: string;
  team: string;
}

export interface TeamRecord {
  team: string;
  displayName: string;
  timeZone?: string | undefined;
  contact?: string | undefined;
  source: 'events' | 'file';
  createdBy?: Actor;
  createdAt?: string;
  disabled?: { by: Actor; at: string; reason?: string | undefined };
}

export interface KeyRecord {
  keyId: string;
  team: string;
  role: ApiKeyRole;
  /** Lower-case hex sha256 of the key. */
  sha256: string;
  source: 'events' | 'file';
  name?: string | undefined;
  /** Time zone a file entry gives its key (else the team's). */
  timeZone?: string | undefined;
  issuedBy?: Actor;
  issuedAt?: string;
  expiresAt?: string | undefined;
  revoked?: { by: Actor; at: string; reason?: string | undefined };
}

/** A key of the bootstrap file, once validated. */
export interface BootstrapKey {
  keyId: string;
  team: string;
  role: ApiKeyRole;
  sha256: string;
  timeZone?: string | undefined;
}

export type KeyState = ApiKeyView['state'];

/** The types the directory folds. */
export const DIRECTORY_EVENT_TYPES = ['TeamCreated', 'TeamDisabled', 'ApiKeyIssued', 'ApiKeyRevoked'] as const;

export type DirectoryEvent =
  | { type: 'TeamCreated'; data: TeamCreated }
  | { type: 'TeamDisabled'; data: TeamDisabled }
  | { type: 'ApiKeyIssued'; data: ApiKeyIssued }
  | { type: 'ApiKeyRevoked'; data: ApiKeyRevoked };

function invalid(path: string, message: string, fix: string): ValidationError {
  return new ValidationError(`${path}: ${message}`, [{ path, message, fix }]);
}

export class KeyDirectory {
  readonly teams = new Map<string, TeamRecord>();
  readonly keys = new Map<string, KeyRecord>();

  /** The bootstrap file's keys; each names a team, which exists from then on (`source: file`). */
  static fromBootstrap(entries: readonly BootstrapKey[]): KeyDirectory {
    const dir = new KeyDirectory();
    for (const e of entries) {
      dir.keys.set(e.keyId, { keyId: e.keyId, team: e.team, role: e.role, sha256: e.sha256, source: 'file', ...(e.timeZone ? { timeZone: e.timeZone } : {}) });
      if (!dir.teams.has(e.team)) dir.teams.set(e.team, { team: e.team, displayName: e.team, source: 'file' });
    }
    return dir;
  }

  /**
   * Applies one recorded event. Returns the key record it added (so the ring can index its
   * digest), else undefined. An event that does not fit (a second `TeamCreated`, a revoke of a key
   * never issued) changes nothing: the decisions below never append one, and the fold must not stop.
   */
  apply(event: DirectoryEvent): KeyRecord | undefined {
    switch (event.type) {
      case 'TeamCreated': {
        const d = event.data;
        const existing = this.teams.get(d.team);
        if (existing?.source === 'events') return undefined;
        // A team first known from the file and then created by event takes the event's details.
        this.teams.set(d.team, { team: d.team, displayName: d.displayName, timeZone: d.timeZone, contact: d.contact, source: 'events', createdBy: d.createdBy, createdAt: d.createdAt, ...(existing?.disabled ? { disabled: existing.disabled } : {}) });
        return undefined;
      }
      case 'TeamDisabled': {
        const d = event.data;
        const team = this.teams.get(d.team) ?? { team: d.team, displayName: d.team, source: 'file' as const };
        if (!team.disabled) this.teams.set(d.team, { ...team, disabled: { by: d.disabledBy, at: d.disabledAt, reason: d.reason } });
        return undefined;
      }
      case 'ApiKeyIssued': {
        const d = event.data;
        if (this.keys.has(d.keyId)) return undefined;
        const record: KeyRecord = { keyId: d.keyId, team: d.team, role: d.role, sha256: d.sha256, source: 'events', name: d.name, issuedBy: d.issuedBy, issuedAt: d.issuedAt, expiresAt: d.expiresAt };
        this.keys.set(d.keyId, record);
        return record;
      }
      case 'ApiKeyRevoked': {
        const d = event.data;
        const key = this.keys.get(d.keyId);
        if (key && key.sha256 === d.sha256 && !key.revoked) key.revoked = { by: d.revokedBy, at: d.revokedAt, reason: d.reason };
        return undefined;
      }
    }
  }

  /** Whether intake accepts the key at `now`. */
  stateOf(key: KeyRecord, now: Date): KeyState {
    if (key.revoked) return 'revoked';
    if (this.teams.get(key.team)?.disabled) return 'team_disabled';
    if (key.expiresAt !== undefined && Date.parse(key.expiresAt) <= now.getTime()) return 'expired';
    return 'active';
  }

  keyView(key: KeyRecord, now: Date): ApiKeyView {
    return {
      keyId: key.keyId,
      team: key.team,
      role: key.role,
      ...(key.name !== undefined ? { name: key.name } : {}),
      source: key.source,
      ...(key.issuedBy ? { issuedBy: key.issuedBy } : {}),
      ...(key.issuedAt ? { issuedAt: key.issuedAt } : {}),
      ...(key.expiresAt ? { expiresAt: key.expiresAt } : {}),
      ...(key.revoked ? { revoked: { by: key.revoked.by, at: key.revoked.at, ...(key.revoked.reason !== undefined ? { reason: key.revoked.reason } : {}) } } : {}),
      state: this.stateOf(key, now),
    };
  }

  teamView(team: TeamRecord, now: Date): TeamView {
    let activeKeys = 0;
    for (const key of this.keys.values()) if (key.team === team.team && this.stateOf(key, now) === 'active') activeKeys++;
    return {
      team: team.team,
      displayName: team.displayName,
      ...(team.timeZone ? { timeZone: team.timeZone } : {}),
      ...(team.contact ? { contact: team.contact } : {}),
      source: team.source,
      ...(team.createdBy ? { createdBy: team.createdBy } : {}),
      ...(team.createdAt ? { createdAt: team.createdAt } : {}),
      ...(team.disabled ? { disabled: { by: team.disabled.by, at: team.disabled.at, ...(team.disabled.reason !== undefined ? { reason: team.disabled.reason } : {}) } } : {}),
      activeKeys,
    };
  }

  /** Keys of one team (or all), by team then issue time (file keys first). */
  listKeys(team: string | undefined, now: Date): ApiKeyView[] {
    return [...this.keys.values()]
      .filter((k) => team === undefined || k.team === team)
      .sort((a, b) => (a.team !== b.team ? (a.team < b.team ? -1 : 1) : (a.issuedAt ?? '').localeCompare(b.issuedAt ?? '') || a.keyId.localeCompare(b.keyId)))
      .map((k) => this.keyView(k, now));
  }

  listTeams(now: Date): TeamView[] {
    return [...this.teams.values()].sort((a, b) => (a.team < b.team ? -1 : 1)).map((t) => this.teamView(t, now));
  }

  /** The team, or a ValidationError naming `team` and how to find or make one. */
  requireTeam(team: string, path = 'team'): TeamRecord {
    const found = this.teams.get(team);
    if (!found) throw invalid(path, `team \`${team}\` does not exist`, 'create it first with `gpunet teams create <team>`, or see the teams with `gpunet teams list`');
    return found;
  }

  /** The key, or a ValidationError naming `keyId`. */
  requireKey(keyId: string): KeyRecord {
    const found = this.keys.get(keyId);
    if (!found) throw invalid('keyId', `no API key \`${keyId}\``, 'see the key ids with `gpunet keys list`');
    return found;
  }
}

/** A team that does not exist yet, as its `TeamCreated`. */
export function decideCreateTeam(dir: KeyDirectory, input: { team: string; displayName?: string | undefined; timeZone?: string | undefined; contact?: string | undefined; by: Actor; now: Date }): TeamCreated {
  if (dir.teams.has(input.team)) {
    throw invalid('team', `team \`${input.team}\` already exists`, `choose another id, or see it with \`gpunet teams show ${input.team}\``);
  }
  return {
    team: input.team,
    displayName: input.displayName ?? input.team,
    ...(input.timeZone ? { timeZone: input.timeZone } : {}),
    ...(input.contact ? { contact: input.contact } : {}),
    createdBy: input.by,
    createdAt: input.now.toISOString(),
  };
}

/** A team's `TeamDisabled`, or undefined when it is disabled already. */
export function decideDisableTeam(dir: KeyDirectory, input: { team: string; reason?: string | undefined; by: Actor; now: Date }): TeamDisabled | undefined {
  const team = dir.requireTeam(input.team);
  if (team.disabled) return undefined;
  return { team: input.team, ...(input.reason ? { reason: input.reason } : {}), disabledBy: input.by, disabledAt: input.now.toISOString() };
}

/** A key for an existing, enabled team: its `ApiKeyIssued` (the key's digest, never the key). */
export function decideIssueKey(
  dir: KeyDirectory,
  input: { keyId: string; sha256: string; team: string; role: ApiKeyRole; name?: string | undefined; expiresAt?: string | undefined; by: Actor; now: Date },
): ApiKeyIssued {
  const team = dir.requireTeam(input.team);
  if (team.disabled) throw invalid('team', `team \`${input.team}\` is disabled`, 'issue keys only to enabled teams; see `gpunet teams show`');
  if (input.expiresAt !== undefined && Date.parse(input.expiresAt) <= input.now.getTime()) {
    throw invalid('expiresAt', `${input.expiresAt} is not in the future`, 'give a later time, or none for a key that lasts until revoked');
  }
  if (dir.keys.has(input.keyId)) throw invalid('keyId', `key id \`${input.keyId}\` is taken`, 'try again: a new id is drawn each time');
  return {
    keyId: input.keyId,
    team: input.team,
    role: input.role,
    ...(input.name !== undefined ? { name: input.name } : {}),
    sha256: input.sha256,
    ...(input.expiresAt !== undefined ? { expiresAt: input.expiresAt } : {}),
    issuedBy: input.by,
    issuedAt: input.now.toISOString(),
  };
}

/** A key's `ApiKeyRevoked`, or undefined when it is revoked already (revoking is idempotent). */
export function decideRevokeKey(dir: KeyDirectory, input: { keyId: string; reason?: string | undefined; by: Actor; now: Date }): ApiKeyRevoked | undefined {
  const key = dir.requireKey(input.keyId);
  if (key.revoked) return undefined;
  return { keyId: key.keyId, team: key.team, sha256: key.sha256, ...(input.reason ? { reason: input.reason } : {}), revokedBy: input.by, revokedAt: input.now.toISOString() };
}
