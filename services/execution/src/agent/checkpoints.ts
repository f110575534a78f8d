import type { BlobStore } from '#blobs';
import type { JobCheckpointed } from '#contracts';
import type { EventStore } from '#event-store';
import { constants } from 'node:fs';
import { mkdir, open, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';

/**
 * The job's last checkpoint, from any attempt on any node (every agent records JobCheckpointed
 * in its own attempt streams; the store is shared). `undefined` when it never checkpointed.
 */
export async function latestCheckpoint(store: EventStore, jobId: string): Promise<JobCheckpointed | undefined> {
  let latest: JobCheckpointed | undefined;
  let fromPosition: bigint | undefined;
  for (;;) {
    const page = await store.readAll({ filter: { types: ['JobCheckpointed'], jobId }, maxCount: 500, ...(fromPosition !== undefined && { fromPosition }) });
    for (const e of page) {
      const cp = e.data as JobCheckpointed;
      if (cp.jobId === jobId && cp.sha256 !== undefined && (latest === undefined || cp.sequence > latest.sequence)) latest = cp;
    }
    if (page.length < 500) return latest;
    fromPosition = page[page.length - 1]!.position;
  }
}

/**
 * Puts a stored checkpoint (a folder manifest) into the run's empty checkpoint directory. With
 * `stage` (an agent: its blobs are its own bucket), storage first copies the manifest, then its
 * files, from the team's bucket into the node's; they are removed from it once restored.
 */
export async function restoreCheckpoint(blobs: BlobStore, team: string, checkpoint: JobCheckpointed, dir: string, stage?: (blobs: string[]) => Promise<void>): Promise<{ files: number; bytes: number }> {
  if (checkpoint.sha256 === undefined) throw new Error(`checkpoint ${checkpoint.sequence} names no stored folder`);
  await stage?.([checkpoint.sha256]);
  const stat = await blobs.stat(team, checkpoint.sha256);
  if (stat === undefined) throw new Error(`checkpoint ${checkpoint.sequence} is not in the team's storage`);
  const manifest = await blobs.readFolderManifest(team, checkpoint.sha256, { size: stat.size });
  const files = [...new Set(manifest.entries.map((e) => e.sha256))];
  await stage?.(files);
  const got = await blobs.downloadInput(team, { kind: 'folder', sha256: checkpoint.sha256, size: stat.size, path: '.' }, dir);
  if (stage) for (const sha256 of [checkpoint.sha256, ...files]) await blobs.remove(team, sha256).catch(() => false);
  return { files: got.files, bytes: got.bytes };
}

/** What a save found in the checkpoint directory. */
interface Snapshot {
  readonly fingerprint: string;
  readonly files: number;
  readonly bytes: number;
}

/**
 * Copies the job's checkpoint directory into an agent-only snapshot directory, refusing what a
 * job could use to make the agent (root) read files that are not its own: symlinks, special
 * files, and files not owned by the job user (hard links to someone else's file). Files are
 * opened with O_NOFOLLOW and checked on the open descriptor, so swapping one for a link after
 * the listing does not help.
 */
async function snapshot(dir: string, into: string, ownerUid: number | undefined): Promise<Snapshot> {
  await rm(into, { recursive: true, force: true });
  await mkdir(into, { recursive: true, mode: 0o700 });
  const parts: string[] = [];
  let files = 0;
  let bytes = 0;
  async function walk(rel: string): Promise<void> {
    for (const entry of await readdir(join(dir, rel), { withFileTypes: true })) {
      const path = rel === '' ? entry.name : `${rel}/${entry.name}`;
      if (entry.isDirectory()) {
        await mkdir(join(into, path), { mode: 0o700 });
        await walk(path);
        continue;
      }
      if (!entry.isFile()) throw new Error(`${path} is ${entry.isSymbolicLink() ? 'a symlink' : 'not a regular file'}; a checkpoint holds regular files only`);
      const src = await open(join(dir, path), constants.O_RDONLY | constants.O_NOFOLLOW);
      try {
        const st = await src.stat();
        if (!st.isFile()) throw new Error(`${path} is not a regular file`);
        if (ownerUid !== undefined && st.uid !== ownerUid) throw new Error(`${path} does not belong to the job (a link to another user's file?)`);
        const dst = await open(join(into, path), 'wx', st.mode & 0o755);
        try {
          const buf = Buffer.alloc(1024 * 1024);
          for (;;) {
            const { bytesRead } = await src.read(buf, 0, buf.length);
            if (bytesRead === 0) break;
            await dst.write(buf, 0, bytesRead);
          }
        } finally {
          await dst.close();
        }
        parts.push(`${path}\0${st.size}\0${st.mtimeMs}`);
        files += 1;
        bytes += st.size;
      } finally {
        await src.close();
      }
    }
  }
  await walk('');
  return { fingerprint: parts.sort().join('\n'), files, bytes };
}

/** Options of {@link CheckpointKeeper}. */
export interface CheckpointKeeperOptions {
  readonly blobs: BlobStore;
  readonly team: string;
  /** The run's checkpoint directory (`GPUNET_CHECKPOINT_DIR`). */
  readonly dir: string;
  /** Agent-only scratch directory for snapshots (outside anything the job can reach). */
  readonly scratch: string;
  /** The job user, whose files alone are taken; undefined when jobs run as the agent's user. */
  readonly ownerUid?: number;
  readonly intervalMs: number;
  /** Highest sequence the job used so far (0 for none): the next checkpoint is this + 1. */
  readonly lastSequence: number;
  /**
   * Has the uploaded checkpoint (its manifest's sha256) taken from the node's bucket into the
   * team's, before it is recorded (an agent: storage copies and verifies it). Default: nothing.
   */
  readonly collect?: (sha256: string) => Promise<void>;
  /** Records the checkpoint (JobCheckpointed through the attempt's state machine). */
  readonly record: (cp: { sequence: number; sha256: string; size: number }) => Promise<void>;
  /** Writes a line into the job's log. */
  readonly notice: (line: string) => void;
  readonly log: Logger;
}

/**
 * Saves a running job's checkpoint directory to the team's blobs at an interval and once at
 * the end, each time it changed: a folder manifest whose sha256 goes into JobCheckpointed.
 * A save never stops the job; a failed one is reported in its log and tried again next time.
 */
export class CheckpointKeeper {
  private timer: NodeJS.Timeout | undefined;
  private saving: Promise<void> = Promise.resolve();
  private lastFingerprint: string | undefined;
  private sequence: number;
  /** Checkpoints recorded by this keeper. */
  saved = 0;
  /** Blobs written into the node's bucket for checkpoints the team's bucket now holds: removed at the end. */
  private readonly uploaded: string[] = [];

  constructor(private readonly o: CheckpointKeeperOptions) {
    this.sequence = o.lastSequence;
  }

  /** Starts the interval saves. */
  start(): void {
    this.timer = setInterval(() => void this.save('interval'), this.o.intervalMs);
    this.timer.unref();
  }

  /** Stops the interval and makes the final save (the job has ended); resolves when it is recorded. */
  async finish(): Promise<void> {
    clearInterval(this.timer);
    await this.save('exit');
    await rm(this.o.scratch, { recursive: true, force: true }).catch(() => undefined);
    // Storage took each saved checkpoint into the team's bucket: the node's copies were in transit.
    for (const sha256 of new Set(this.uploaded.splice(0))) await this.o.blobs.remove(this.o.team, sha256).catch(() => false);
  }

  /** Sets the fingerprint of a restored checkpoint, so an unchanged directory is not saved again. */
  async markRestored(): Promise<void> {
    try {
      this.lastFingerprint = (await snapshot(this.o.dir, this.o.scratch, undefined)).fingerprint;
    } catch {
      this.lastFingerprint = undefined;
    }
  }

  private save(why: 'interval' | 'exit'): Promise<void> {
    // One save at a time: an interval save still uploading delays the next one, never overlaps it.
    this.saving = this.saving.then(() => this.saveNow(why));
    return this.saving;
  }

  private async saveNow(why: 'interval' | 'exit'): Promise<void> {
    try {
      const snap = await snapshot(this.o.dir, this.o.scratch, this.o.ownerUid);
      if (snap.files === 0 || snap.fingerprint === this.lastFingerprint) return;
      const uploaded = await this.o.blobs.uploadFolder(this.o.team, this.o.scratch);
      await this.o.collect?.(uploaded.sha256);
      if (this.o.collect) this.uploaded.push(uploaded.sha256, ...uploaded.manifest.entries.map((e) => e.sha256));
      const sequence = this.sequence + 1;
      await this.o.record({ sequence, sha256: uploaded.sha256, size: uploaded.totalBytes });
      this.sequence = sequence;
      this.lastFingerprint = snap.fingerprint;
      this.saved += 1;
      this.o.notice(`[gpunet] checkpoint ${sequence} saved (${snap.files} file(s), ${snap.bytes} bytes, ${why})`);
      this.o.log.info({ sequence, files: snap.files, bytes: snap.bytes, why }, 'checkpoint saved');
    } catch (err) {
      this.o.notice(`[gpunet] checkpoint not saved: ${(err as Error).message}`);
      this.o.log.warn({ err, why }, 'checkpoint not saved');
    }
  }
}
