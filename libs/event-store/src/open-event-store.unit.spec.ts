import { describe, expect, it } from '@jest/globals';
import { ValidationError } from '#errors';
import { parseEventStoreUrl } from './open-event-store.js';

describe('parseEventStoreUrl', () => {
  it('postgres:// and postgresql:// name PostgreSQL, the URL being the connection string', () => {
    expect(parseEventStoreUrl('postgres://u@db:5432/gpunet')).toEqual({ kind: 'postgres', connectionString: 'postgres://u@db:5432/gpunet' });
    expect(parseEventStoreUrl('postgresql://u@db/gpunet?sslmode=require')).toEqual({
      kind: 'postgres',
      connectionString: 'postgresql://u@db/gpunet?sslmode=require',
    });
  });

  it('sqlite:, file: and plain paths name a SQLite file', () => {
    expect(parseEventStoreUrl('sqlite:///var/lib/gpunet/events.db')).toEqual({ kind: 'sqlite', path: '/var/lib/gpunet/events.db' });
    expect(parseEventStoreUrl('sqlite:data/events.db')).toEqual({ kind: 'sqlite', path: 'data/events.db' });
    expect(parseEventStoreUrl('file:///tmp/e%20s.db')).toEqual({ kind: 'sqlite', path: '/tmp/e s.db' });
    expect(parseEventStoreUrl('./data/gpunet.db')).toEqual({ kind: 'sqlite', path: './data/gpunet.db' });
    expect(parseEventStoreUrl('/abs/gpunet.db')).toEqual({ kind: 'sqlite', path: '/abs/gpunet.db' });
    expect(parseEventStoreUrl('C:\\gpunet\\events.db')).toEqual({ kind: 'sqlite', path: 'C:\\gpunet\\events.db' });
  });

  it('refuses an empty URL, an empty sqlite: and unknown schemes with a ValidationError on `url`', () => {
    for (const bad of ['', '  ', 'sqlite:', 'mysql://db/x', 'http://example.com/store']) {
      let caught: unknown;
      try {
        parseEventStoreUrl(bad);
      } catch (err) {
        caught = err;
      }
      expect(caught).toBeInstanceOf(ValidationError);
      expect((caught as ValidationError).issues[0]!.path).toBe('url');
    }
  });
});
