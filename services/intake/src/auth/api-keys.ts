/**
 * Team API keys: who is calling, from `Authorization: Bearer <key>`.
 *
 * The ring is the bootstrap key file (`GPUNET_API_KEYS_FILE`, YAML or JSON, listing
 * `[{ id, key | sha256, team, role, timeZone? }]`, e.g. the first operator key) plus the key
 * events of the store (`ApiKeyIssued`, `ApiKeyRevoked`, `TeamDisabled`), applied as they are
 * folded and followed (see `key-ring.feed.ts`). Only sha256 digests are kept in memory; a
 * presented key is hashed and compared with every digest in constant time, so neither the
 * timing nor a heap dump gives a key away.
 */
import { API_KEY_ROLES, TeamId, formatIssues, withFix, type ApiKeyRole } from '#contracts';
import { ValidationError, type FieldIssue } from '#errors';
import { createHash, timingSafeEqual } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import YAML from 'yaml';
import { z } from 'zod';
import { HOW_TO_AUTHENTICATE, UnauthorizedError } from '../common/errors.js';
import { KeyDirectory, type DirectoryEvent, type KeyRecord, type KeyState } from '../domain/key-directory.js';

/** What a key may do (see `permissions.ts`). */
export const API_ROLES = API_KEY_ROLES;
export type ApiRole = ApiKeyRole;

/** The caller, once its key is known. */
export interface Principal {
  /** Id of the key (recorded as `submittedBy` / `requestedBy`); never the key itself. */
  readonly keyId: string;
  readonly team: string;
  readonly role: ApiRole;
  /** IANA time zone for times shown to people (e.g. plain-text logs). Default UTC. */
  readonly timeZone?: string | undefined;
}

/** Shortest key accepted in clear text: shorter ones are guessable. */
export const MIN_KEY_LENGTH = 16;

function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

const ApiKeyEntry = z
  .strictObject({
    id: z.string().regex(/^[\x21-\x7e]{1,128}$/, withFix('must be 1–128 visible ASCII characters', 'name the key, e.g. `id: ci-ml`')),
    key: z
      .string()
      .min(MIN_KEY_LENGTH, withFix(`must be at least ${MIN_KEY_LENGTH} characters`, 'generate one with `openssl rand -hex 32`'))
      .optional(),
    sha256: z
      .string()
      .regex(/^[0-9a-f]{64}$/, withFix('must be 64 lower-case hex characters', 'use `printf %s "$KEY" | sha256sum`'))
      .optional(),
    team: TeamId,
    role: z.enum(API_KEY_ROLES, withFix(`must be one of ${API_ROLES.join(', ')}`, 'write e.g. `role: producer`')),
    timeZone: z.string().refine(isTimeZone, withFix('is not an IANA time zone', 'write e.g. `timeZone: Europe/Berlin`')).optional(),
  })
  .refine((e) => (e.key === undefined) !== (e.sha256 === undefined), {
    error: withFix('needs exactly one of `key` and `sha256`', 'give the key, or better its sha256 digest'),
    path: ['key'],
  });
type ApiKeyEntry = z.output<typeof ApiKeyEntry>;

const ApiKeyList = z.array(ApiKeyEntry, withFix('must be a list of keys', 'write `- { id: ..., sha256: ..., team: ..., role: producer }`'));

/** Lower-case hex sha256 of a key. */
export function keyDigest(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

/** Why a key that matched is refused, for the caller and for the log. */
export class RefusedKeyError extends UnauthorizedError {
  constructor(
    message: string,
    readonly keyId: string,
    readonly state: Exclude<KeyState, 'active'>,
  ) {
    super(message);
  }
}

/** The keys intake accepts: the bootstrap file's, then those the events issue, minus those they revoke. */
export class ApiKeyRing {
  /** Every digest ever known (revoked ones too, so that their use is refused by name), in a flat list scanned whole. */
  private readonly digests: { digest: Buffer; keyId: string }[] = [];

  private constructor(
    readonly directory: KeyDirectory,
    private readonly now: () => Date,
  ) {
    for (const key of directory.keys.values()) this.index(key);
  }

  /**
   * Validates key entries (the parsed file). Throws a ValidationError naming each bad entry's
   * field (`[2].role`) and the fix, a key id used twice, or the same key listed twice.
   */
  static fromEntries(entries: unknown, source = 'API keys', now: () => Date = () => new Date()): ApiKeyRing {
    const parsed = ApiKeyList.safeParse(entries);
    if (!parsed.success) throw invalid(source, formatIssues(parsed.error));
    const issues: FieldIssue[] = [];
    const ids = new Set<string>();
    const digests = new Set<string>();
    const keys = parsed.data.map((entry: ApiKeyEntry, i) => {
      const digest = entry.sha256 ?? keyDigest(entry.key!);
      if (ids.has(entry.id)) issues.push({ path: `[${i}].id`, message: `key id \`${entry.id}\` is used twice`, fix: 'give each key its own id' });
      if (digests.has(digest)) issues.push({ path: `[${i}]`, message: 'this key is listed twice', fix: 'list each key once, with one team and role' });
      ids.add(entry.id);
      digests.add(digest);
      return { keyId: entry.id, team: entry.team, role: entry.role, sha256: digest, ...(entry.timeZone ? { timeZone: entry.timeZone } : {}) };
    });
    if (issues.length > 0) throw invalid(source, issues);
    return new ApiKeyRing(KeyDirectory.fromBootstrap(keys), now);
  }

  /** Reads a YAML or JSON key file (JSON is YAML). */
  static async load(path: string, now: () => Date = () => new Date()): Promise<ApiKeyRing> {
    let text: string;
    try {
      text = await readFile(path, 'utf8');
    } catch (err) {
      throw new ValidationError(`cannot read the API key file ${path}: ${(err as Error).message}`, [
        { path: 'GPUNET_API_KEYS_FILE', message: `cannot read ${path}`, fix: 'point GPUNET_API_KEYS_FILE at a YAML or JSON list of keys' },
      ], { cause: err });
    }
    let entries: unknown;
    try {
      entries = YAML.parse(text);
    } catch (err) {
      throw new ValidationError(`the API key file ${path} is not YAML or JSON: ${(err as Error).message}`, [
        { path: 'GPUNET_API_KEYS_FILE', message: 'is not YAML or JSON', fix: 'write a list: `- { id: ci, sha256: <hex>, team: team-ml, role: producer }`' },
      ], { cause: err });
    }
    return ApiKeyRing.fromEntries(entries ?? [], path, now);
  }

  /** Number of keys known (revoked ones included). */
  get size(): number {
    return this.digests.length;
  }

  /** Applies a recorded team or key event; takes effect for the next request. */
  apply(event: DirectoryEvent): void {
    const added = this.directory.apply(event);
    if (added) this.index(added);
  }

  /**
   * The caller of a request from its `Authorization` header value. Throws UnauthorizedError,
   * saying how to pass a key, when there is none, it is malformed, or it is unknown; a
   * RefusedKeyError (naming the key's id) when it is revoked, expired or of a disabled team.
   */
  authenticate(authorization: string | undefined | null): Principal {
    if (!authorization) throw new UnauthorizedError(`no API key: ${HOW_TO_AUTHENTICATE}`);
    const m = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(authorization);
    if (!m) throw new UnauthorizedError(`the Authorization header is not \`Bearer <key>\`: ${HOW_TO_AUTHENTICATE}`);
    const presented = Buffer.from(keyDigest(m[1]!), 'hex');
    let found: string | undefined;
    // Compare with every key, no early exit: the time taken says nothing about which matched.
    for (const key of this.digests) {
      if (timingSafeEqual(key.digest, presented) && found === undefined) found = key.keyId;
    }
    const record = found === undefined ? undefined : this.directory.keys.get(found);
    if (!record) throw new UnauthorizedError(`unknown API key: ${HOW_TO_AUTHENTICATE}, with a key issued to your team`);
    const state = this.directory.stateOf(record, this.now());
    if (state !== 'active') throw refused(record, state);
    const timeZone = record.timeZone ?? this.directory.teams.get(record.team)?.timeZone;
    return { keyId: record.keyId, team: record.team, role: record.role, ...(timeZone ? { timeZone } : {}) };
  }

  private index(key: KeyRecord): void {
    this.digests.push({ digest: Buffer.from(key.sha256, 'hex'), keyId: key.keyId });
  }
}

function refused(key: KeyRecord, state: Exclude<KeyState, 'active'>): RefusedKeyError {
  const ask = 'ask an admin of your team (or the operator) for a new key: `gpunet keys create`';
  switch (state) {
    case 'revoked':
      return new RefusedKeyError(`API key \`${key.keyId}\` was revoked at ${key.revoked!.at}; ${ask}`, key.keyId, state);
    case 'expired':
      return new RefusedKeyError(`API key \`${key.keyId}\` expired at ${key.expiresAt}; ${ask}`, key.keyId, state);
    case 'team_disabled':
      return new RefusedKeyError(`API key \`${key.keyId}\` is of team ${key.team}, which is disabled; ask the operator`, key.keyId, state);
  }
}

function invalid(source: string, issues: FieldIssue[]): ValidationError {
  return new ValidationError(`${source}: ${issues.map((i) => `${i.path || '(file)'}: ${i.message}`).join('; ')}`, issues);
}
