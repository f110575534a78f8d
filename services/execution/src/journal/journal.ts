import { chmodSync, closeSync, existsSync, mkdirSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { join, resolve } from 'node:path';

/**
 * The node's journal: a SQLite event store on the node's own disk (`<work-dir>/journal/`, the
 * directory 0700, the database 0600; SQLite gives its -wal and -shm files the database's mode).
 * The agent records every observation here through the kit's EventWriter, so the attempt state
 * machine and recovery work on local data; the report relay sends each one to the recorder.
 * Copies of the control plane's events the node acts on (its placements, the jobs' specs,
 * cancels, checkpoints) are kept beside them in `work-<their stream>`, never reported back.
 */
export interface JournalFiles {
  readonly dir: string;
  readonly database: string;
  /** A random id made once with the journal: report sequence numbers count within it. */
  readonly id: string;
}

/** Makes (or finds) the journal under the work dir, with owner-only permissions. Synchronous: it runs before the store opens. */
export function prepareJournal(workDir: string): JournalFiles {
  const dir = join(resolve(workDir), 'journal');
  // The work dir itself keeps the ordinary mode (confinement makes it 0711 for job users to pass);
  // only the journal is closed.
  mkdirSync(resolve(workDir), { recursive: true });
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
  const database = join(dir, 'journal.db');
  if (!existsSync(database)) closeSync(openSync(database, 'a', 0o600));
  chmodSync(database, 0o600);
  const idFile = join(dir, 'journal-id');
  if (!existsSync(idFile)) writeFileSync(idFile, `${randomUUID().replaceAll('-', '')}\n`, { mode: 0o600, flag: 'wx' });
  const id = readFileSync(idFile, 'utf8').trim();
  return { dir, database, id };
}

/** The store URL of the journal (what the agent opens instead of `GPUNET_STORE_URL`). */
export function journalStoreUrl(workDir: string): string {
  return `sqlite:${prepareJournal(workDir).database}`;
}

/** Local stream of a copy of a control-plane event: `work-<its stream>`. The relay never reports these. */
export function workCopyStreamId(streamId: string): string {
  return `work-${streamId}`;
}
