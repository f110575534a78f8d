import { chmod, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fromPublic, fromSeed } from '@nats-io/nkeys';
import { IdentityError, createIdentityFile, identityName, loadIdentityFile, signBytes, verifySignature } from './identity.js';

describe('identity files', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'gpunet-identity-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('writes a seed 0600 in a 0700 directory and loads the same public key back', async () => {
    const path = join(dir, 'keys', 'svc-ledger.nk');
    const created = await createIdentityFile(path);
    expect((await stat(path)).mode & 0o777).toBe(0o600);
    expect((await stat(join(dir, 'keys'))).mode & 0o777).toBe(0o700);
    const loaded = await loadIdentityFile(path);
    expect(loaded.publicKey).toBe(created.publicKey);
    expect(loaded.publicKey).toMatch(/^U[A-Z2-7]{55}$/);
  });

  it('never overwrites an existing key file', async () => {
    const path = join(dir, 'a.nk');
    await createIdentityFile(path);
    await expect(createIdentityFile(path)).rejects.toThrow(IdentityError);
  });

  it('refuses a key file others may read, and says how to fix it', async () => {
    const path = join(dir, 'a.nk');
    await createIdentityFile(path);
    await chmod(path, 0o644);
    await expect(loadIdentityFile(path)).rejects.toThrow(/mode 644.*chmod 600/);
  });

  it('refuses a file that is not a user seed', async () => {
    const path = join(dir, 'bad.nk');
    await writeFile(path, 'not a seed\n', { mode: 0o600 });
    await expect(loadIdentityFile(path)).rejects.toThrow(/does not hold an NKey user seed/);
  });

  it('signatures verify with the public key only, and fail for other bytes or keys', async () => {
    const a = await createIdentityFile(join(dir, 'a.nk'));
    const b = await createIdentityFile(join(dir, 'b.nk'));
    const data = new TextEncoder().encode('JobFinished attempt 1');
    const sig = signBytes(a, data);
    expect(verifySignature(a.publicKey, data, sig)).toBe(true);
    expect(verifySignature(b.publicKey, data, sig)).toBe(false);
    expect(verifySignature(a.publicKey, new TextEncoder().encode('JobFinished attempt 2'), sig)).toBe(false);
    expect(verifySignature('not-a-key', data, sig)).toBe(false);
    expect(verifySignature(a.publicKey, data, 'garbage')).toBe(false);
  });

  it('names identities by kind and refuses ids that cannot be a subject token', () => {
    expect(identityName('service', 'intake')).toBe('svc-intake');
    expect(identityName('node', 'node-1')).toBe('node-node-1');
    expect(identityName('team', 'ml')).toBe('team-ml');
    expect(identityName('operator')).toBe('operator');
    expect(() => identityName('team', 'a.b')).toThrow(IdentityError);
  });

  it('signs and verifies exactly as the NKey library does (the same deterministic ed25519 bytes)', async () => {
    const a = await createIdentityFile(join(dir, 'a.nk'));
    const kp = fromSeed(a.seed);
    const data = new TextEncoder().encode('gpunet-node-report/1\n{"seq":"1"}');
    const ours = signBytes(a, data);
    expect(ours).toBe(Buffer.from(kp.sign(data)).toString('base64url'));
    expect(fromPublic(a.publicKey).verify(data, Buffer.from(ours, 'base64url'))).toBe(true);
    expect(verifySignature(a.publicKey, data, Buffer.from(kp.sign(data)).toString('base64url'))).toBe(true);
    // A public key with a broken checksum is no key.
    const broken = `${a.publicKey.slice(0, -1)}${a.publicKey.endsWith('A') ? 'B' : 'A'}`;
    expect(verifySignature(broken, data, ours)).toBe(false);
  });
});
