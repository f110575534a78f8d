/**
 * Identities of a gpunet network: one NKey (ed25519) per service, node, producer team and
 * operator. The same key authenticates the connection to nats-server (nats-server's own NKey
 * authorization) and, for a node, signs the reports it sends the control plane.
 *
 * A seed is kept in one file of its own (`<name>.nk`), mode 0600 in a 0700 directory, and is
 * handed to a process by path (`GPUNET_NATS_NKEY_FILE`), never on a command line, where any
 * local user could read it in `/proc/<pid>/cmdline`.
 */
import { createUser, fromPublic, fromSeed, type KeyPair } from '@nats-io/nkeys';
import { nkeyAuthenticator, type Authenticator } from '@nats-io/transport-node';
import { createPrivateKey, createPublicKey, sign as edSign, verify as edVerify, type KeyObject } from 'node:crypto';
import { chmod, mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { basename, dirname } from 'node:path';

/** Environment variable naming the seed file a process connects (and signs) with. */
export const NKEY_FILE_ENV = 'GPUNET_NATS_NKEY_FILE';

/** What an identity is: it decides the subjects it may use (see `deploy/nats-permissions.yaml`). */
export type IdentityKind = 'service' | 'node' | 'team' | 'operator' | 'joiner';

const KIND_PREFIX: Record<IdentityKind, string> = { service: 'svc', node: 'node', team: 'team', operator: 'operator', joiner: 'joiner' };

/**
 * The identity's name, also its seed file's base name and its NATS inbox prefix's tail:
 * `svc-ledger`, `node-node-1`, `team-ml`, `operator`.
 */
export function identityName(kind: IdentityKind, id?: string): string {
  if (kind === 'operator') return id ? `operator-${id}` : 'operator';
  // One per network: a machine that has no identity yet, holding a join token (decision 0022).
  if (kind === 'joiner') return 'joiner';
  if (!id || !/^[A-Za-z0-9_-]+$/.test(id)) throw new IdentityError(`an identity of kind ${kind} needs an id of letters, digits, _ and - (got ${JSON.stringify(id)})`);
  return `${KIND_PREFIX[kind]}-${id}`;
}

/**
 * The inbox prefix of an identity's connection. Each identity may subscribe only under its own
 * prefix, so no one reads another's replies (nats-server's default `_INBOX.>` is shared).
 */
export function inboxPrefix(name: string): string {
  return `_INBOX_${name}`;
}

/** A key file that is missing, unreadable, readable by others, or not a user seed. */
export class IdentityError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'IdentityError';
  }
}

/** A loaded identity: its public key (`U…`, what nats-server and verifiers know) and its signer. */
export interface Identity {
  readonly publicKey: string;
  /** The seed, for `nkeyAuthenticator`. */
  readonly seed: Uint8Array;
  sign(data: Uint8Array): Uint8Array;
}

// Signing and verifying run on Node's native ed25519 (OpenSSL): the NKey library's pure-JS
// ed25519 takes ~10 ms per operation here, which made every node report cost ~20 ms of CPU.
// The keys are the NKeys' own (the library still parses and checks them); ed25519 signatures are
// deterministic, so both give the same bytes.
const BASE32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
const SPKI_ED25519 = Buffer.from('302a300506032b6570032100', 'hex');
const PKCS8_ED25519 = Buffer.from('302e020100300506032b657004220420', 'hex');

/** RFC 4648 base32 without padding, as NKeys are written. */
function base32Decode(text: string): Buffer {
  const out: number[] = [];
  let bits = 0;
  let value = 0;
  for (const ch of text) {
    const i = BASE32.indexOf(ch);
    if (i < 0) throw new IdentityError(`not base32: ${JSON.stringify(ch)}`);
    value = ((value << 5) | i) & 0xffff;
    bits += 5;
    if (bits >= 8) {
      out.push((value >>> (bits - 8)) & 0xff);
      bits -= 8;
    }
  }
  return Buffer.from(out);
}

/** The ed25519 private key of a user seed (`SU…`: two prefix bytes, the 32-byte seed, a CRC). */
function privateKeyOf(seed: Uint8Array): KeyObject {
  const raw = base32Decode(new TextDecoder().decode(seed)).subarray(2, 34);
  return createPrivateKey({ key: Buffer.concat([PKCS8_ED25519, raw]), format: 'der', type: 'pkcs8' });
}

const publicKeys = new Map<string, KeyObject>();
/** The ed25519 public key of a user's public NKey (`U…`: one prefix byte, 32 bytes, a CRC), checked by the NKey library once. */
function publicKeyOf(publicKey: string): KeyObject {
  let key = publicKeys.get(publicKey);
  if (!key) {
    fromPublic(publicKey); // throws on a bad prefix or CRC
    key = createPublicKey({ key: Buffer.concat([SPKI_ED25519, base32Decode(publicKey).subarray(1, 33)]), format: 'der', type: 'spki' });
    if (publicKeys.size >= 10_000) publicKeys.clear();
    publicKeys.set(publicKey, key);
  }
  return key;
}

function wrap(kp: KeyPair, seed: Uint8Array): Identity {
  const privateKey = privateKeyOf(seed);
  return { publicKey: kp.getPublicKey(), seed, sign: (data) => new Uint8Array(edSign(null, data, privateKey)) };
}

/** A new user NKey, in memory. */
export function newIdentity(): Identity {
  const kp = createUser();
  return wrap(kp, kp.getSeed());
}

/**
 * Writes a new identity's seed to `path` (0600; its directory made 0700 if missing) and returns
 * it. Refuses to overwrite an existing file: a key that changes under a running process is an outage.
 */
export async function createIdentityFile(path: string): Promise<Identity> {
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  const id = newIdentity();
  try {
    await writeFile(path, `${new TextDecoder().decode(id.seed)}\n`, { mode: 0o600, flag: 'wx' });
  } catch (err) {
    throw new IdentityError(`cannot create key file ${path}: ${(err as Error).message}`, { cause: err });
  }
  return id;
}

/**
 * Loads the identity in `path`. Refuses a file that group or others may read or write: such a
 * key must be taken as known to them (rotate it: make a new one and drop the old).
 */
export async function loadIdentityFile(path: string): Promise<Identity> {
  let text: string;
  try {
    const st = await stat(path);
    if ((st.mode & 0o077) !== 0) {
      throw new IdentityError(`key file ${path} is mode ${(st.mode & 0o777).toString(8)}: it must be readable by its owner only (chmod 600 ${path})`);
    }
    text = (await readFile(path, 'utf8')).trim();
  } catch (err) {
    if (err instanceof IdentityError) throw err;
    throw new IdentityError(`cannot read key file ${path}: ${(err as Error).message}`, { cause: err });
  }
  try {
    const seed = new TextEncoder().encode(text);
    const kp = fromSeed(seed);
    if (!kp.getPublicKey().startsWith('U')) throw new Error('not a user seed (SU…)');
    return wrap(kp, seed);
  } catch (err) {
    throw new IdentityError(`key file ${path} does not hold an NKey user seed: ${(err as Error).message}`, { cause: err });
  }
}

/** Sets an existing key file to 0600 (e.g. one written by another tool). */
export async function restrictKeyFile(path: string): Promise<void> {
  await chmod(path, 0o600);
}

/** Base64url ed25519 signature of `data` by `identity`. */
export function signBytes(identity: Identity, data: Uint8Array): string {
  return Buffer.from(identity.sign(data)).toString('base64url');
}

/** True when `signature` (base64url) is `publicKey`'s signature of `data`; false on any malformed input. */
export function verifySignature(publicKey: string, data: Uint8Array, signature: string): boolean {
  try {
    return edVerify(null, data, publicKeyOf(publicKey), Buffer.from(signature, 'base64url'));
  } catch {
    return false;
  }
}

/**
 * Connection options for `connect()` of `@nats-io/transport-node` as the identity in `keyFile`:
 * NKey authentication and the identity's own inbox prefix (named after the file, `<name>.nk`).
 * Without a key file: no options (a server that requires authentication refuses the connection).
 */
export async function natsAuthOptions(keyFile: string | undefined): Promise<{ authenticator?: Authenticator; inboxPrefix?: string }> {
  if (!keyFile) return {};
  const identity = await loadIdentityFile(keyFile);
  const name = basename(keyFile).replace(/\.nk$/, '');
  return { authenticator: nkeyAuthenticator(identity.seed), inboxPrefix: inboxPrefix(name) };
}
