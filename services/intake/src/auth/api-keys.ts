/**
 * Team API keys: who is calling, from `Authorization: Bearer <key>`.
 *
 * The key file (`GPUNET_API_KEYS_FILE`, YAML or JSON) lists keys as
 * `[{ id, key | sha256, team, role, timeZone? }]`. Only sha256 digests are kept in memory; a
 * presented key is hashed and compared with every digest in constant time, so neither the
 * timing nor a heap dump gives a key away.
 */
import { TeamId, formatIssues, withFix } from '#contracts';
import { ValidationError, type FieldIssue } from '#errors';
import { createHash, timingSafeEqual } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import YAML from 'yaml';
import { z } from 'zod';
import { HOW_TO_AUTHENTICATE, UnauthorizedError } from '../common/errors.js';

/** What a key may do (see `permissions.ts`). */
export const API_ROLES = ['producer', 'compliance', 'billing', 'admin'] as const;
export type ApiRole = (typeof API_ROLES)[number];

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
    role: z.enum(API_ROLES, withFix(`must be one of ${API_ROLES.join(', ')}`, 'write e.g. `role: producer`')),
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

interface KeyRecord {
  digest: Buffer;
  principal: Principal;
}

/** The keys intake accepts. */
export class ApiKeyRing {
  private constructor(private readonly keys: readonly KeyRecord[]) {}

  /**
   * Validates key entries (the parsed file). Throws a ValidationError naming each bad entry's
   * field (`[2].role`) and the fix, a key id used twice, or the same key listed twice.
   */
  static fromEntries(entries: unknown, source = 'API keys'): ApiKeyRing {
    const parsed = ApiKeyList.safeParse(entries);
    if (!parsed.success) throw invalid(source, formatIssues(parsed.error));
    const issues: FieldIssue[] = [];
    const ids = new Set<string>();
    const digests = new Set<string>();
    const keys = parsed.data.map((entry: ApiKeyEntry, i): KeyRecord => {
      const digest = entry.sha256 ?? keyDigest(entry.key!);
      if (ids.has(entry.id)) issues.push({ path: `[${i}].id`, message: `key id \`${entry.id}\` is used twice`, fix: 'give each key its own id' });
      if (digests.has(digest)) issues.push({ path: `[${i}]`, message: 'this key is listed twice', fix: 'list each key once, with one team and role' });
      ids.add(entry.id);
      digests.add(digest);
      const principal: Principal = { keyId: entry.id, team: entry.team, role: entry.role, ...(entry.timeZone ? { timeZone: entry.timeZone } : {}) };
      return { digest: Buffer.from(digest, 'hex'), principal };
    });
    if (issues.length > 0) throw invalid(source, issues);
    return new ApiKeyRing(keys);
  }

  /** Reads a YAML or JSON key file (JSON is YAML). */
  static async load(path: string): Promise<ApiKeyRing> {
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
    return ApiKeyRing.fromEntries(entries ?? [], path);
  }

  /** Number of keys. */
  get size(): number {
    return this.keys.length;
  }

  /**
   * The caller of a request from its `Authorization` header value. Throws UnauthorizedError,
   * saying how to pass a key, when there is none, it is malformed, or it is unknown.
   */
  authenticate(authorization: string | undefined | null): Principal {
    if (!authorization) throw new UnauthorizedError(`no API key: ${HOW_TO_AUTHENTICATE}`);
    const m = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(authorization);
    if (!m) throw new UnauthorizedError(`the Authorization header is not \`Bearer <key>\`: ${HOW_TO_AUTHENTICATE}`);
    const presented = Buffer.from(keyDigest(m[1]!), 'hex');
    let found: Principal | undefined;
    // Compare with every key, no early exit: the time taken says nothing about which matched.
    for (const key of this.keys) {
      if (timingSafeEqual(key.digest, presented) && found === undefined) found = key.principal;
    }
    if (!found) throw new UnauthorizedError(`unknown API key: ${HOW_TO_AUTHENTICATE}, with a key issued to your team`);
    return found;
  }
}

function invalid(source: string, issues: FieldIssue[]): ValidationError {
  return new ValidationError(`${source}: ${issues.map((i) => `${i.path || '(file)'}: ${i.message}`).join('; ')}`, issues);
}
