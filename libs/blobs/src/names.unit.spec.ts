import { ValidationError } from '#errors';
import { blobName, digestToHex, isSha256 } from './names.js';

const HASH = 'ab'.repeat(32);

describe('blobName', () => {
  it('given a team and a hash, names the object <team>/<sha256>', () => {
    expect(blobName('team-ml', HASH)).toBe(`team-ml/${HASH}`);
  });

  it.each([
    ['a team with a slash', 'team/other', HASH],
    ['a team with dots', '..', HASH],
    ['an empty team', '', HASH],
    ['an upper-case hash', 'team-ml', HASH.toUpperCase()],
    ['a short hash', 'team-ml', HASH.slice(2)],
  ])('refuses %s with a ValidationError naming the field', (_what, team, sha) => {
    let error: unknown;
    try {
      blobName(team, sha);
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).issues.length).toBe(1);
  });
});

describe('digestToHex', () => {
  const bytes = Buffer.from(HASH, 'hex');

  it('reads the padded base64url digest the NATS client records', () => {
    expect(digestToHex(`SHA-256=${bytes.toString('base64url')}=`)).toBe(HASH);
  });

  it('reads a std-alphabet digest written by other clients', () => {
    const tricky = Buffer.from('fb'.repeat(32), 'hex'); // encodes with + and /
    expect(digestToHex(`SHA-256=${tricky.toString('base64')}`)).toBe('fb'.repeat(32));
  });

  it.each([undefined, '', 'SHA-512=abc', `SHA-256=${Buffer.alloc(16).toString('base64')}`])('is undefined for %p', (digest) => {
    expect(digestToHex(digest)).toBeUndefined();
  });
});

describe('isSha256', () => {
  it('accepts 64 lower-case hex characters only', () => {
    expect(isSha256(HASH)).toBe(true);
    expect(isSha256(HASH + 'a')).toBe(false);
    expect(isSha256(HASH.replace('a', 'g'))).toBe(false);
  });
});
