import { fileURLToPath } from 'node:url';
import { ValidationError } from '#errors';
import type { EventStore } from './event-store.js';
import { openPostgresEventStore, type PostgresEventStoreOptions } from './postgres/postgres-event-store.js';
import { SqliteEventStore, type SqliteEventStoreOptions } from './sqlite/sqlite-event-store.js';

/** Options of `openEventStore`: shared ones, and per backend the rest of its own options. */
export interface OpenEventStoreOptions {
  /** HMAC key of the hash chain. Default none (sha256). Every instance on one store must use the same key. */
  chainKey?: string;
  /** Source of `recordedAt`. Default `() => new Date()`. */
  clock?: () => Date;
  /** Used when the URL names a SQLite file (defaults: see SqliteEventStoreOptions). */
  sqlite?: Omit<SqliteEventStoreOptions, 'path' | 'chainKey' | 'clock'>;
  /** Used when the URL names a PostgreSQL database (defaults: see PostgresEventStoreOptions). */
  postgres?: Omit<PostgresEventStoreOptions, 'connectionString' | 'chainKey' | 'clock'>;
}

/** Which adapter a store URL names. */
export type EventStoreLocation = { kind: 'sqlite'; path: string } | { kind: 'postgres'; connectionString: string };

/**
 * Reads a store URL:
 * - `postgres://…` or `postgresql://…`: PostgreSQL, the URL is the connection string;
 * - `sqlite:<path>` (`sqlite:///abs/file.db`, `sqlite:data/file.db`), `file:///abs/file.db`, or a
 *   plain file path (`./data/gpunet.db`, `/var/lib/gpunet/events.db`): SQLite.
 * Anything else is a ValidationError naming the accepted forms.
 */
export function parseEventStoreUrl(url: string): EventStoreLocation {
  const invalid = (message: string) =>
    new ValidationError(`event store URL ${JSON.stringify(url)}: ${message}`, [
      { path: 'url', message, fix: 'use postgres://user@host/db, sqlite:<file> or a file path' },
    ]);
  if (typeof url !== 'string' || url.trim() === '') throw invalid('is empty');
  // A scheme is two or more letters before ':' (so a Windows drive letter stays a path).
  const scheme = /^([a-z][a-z0-9+.-]+):/i.exec(url)?.[1]?.toLowerCase();
  switch (scheme) {
    case undefined:
      return { kind: 'sqlite', path: url };
    case 'postgres':
    case 'postgresql':
      return { kind: 'postgres', connectionString: url };
    case 'sqlite': {
      const rest = url.slice('sqlite:'.length);
      const path = rest.startsWith('//') ? rest.slice(2) : rest;
      if (path === '') throw invalid('names no file');
      return { kind: 'sqlite', path };
    }
    case 'file':
      return { kind: 'sqlite', path: fileURLToPath(url) };
    default:
      throw invalid(`unknown scheme ${scheme}:`);
  }
}

/**
 * Opens the event store a URL names (see `parseEventStoreUrl`): the embedded SQLite adapter for a
 * file, the PostgreSQL adapter for a database; both create their schema when missing.
 */
export async function openEventStore(url: string, options: OpenEventStoreOptions = {}): Promise<EventStore> {
  const location = parseEventStoreUrl(url);
  const shared = { chainKey: options.chainKey, clock: options.clock };
  if (location.kind === 'postgres') {
    return openPostgresEventStore({ ...options.postgres, ...shared, connectionString: location.connectionString });
  }
  return new SqliteEventStore({ ...options.sqlite, ...shared, path: location.path });
}
