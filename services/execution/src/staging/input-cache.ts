import type { InputRef } from '#contracts';
import { parseFolderManifest, type BlobStore } from '#blobs';
import { ValidationError } from '#errors';
import { chmod, copyFile, link, mkdir, readdir, readFile, rm, stat } from 'node:fs/promises';
import { dirname, isAbsolute, join, relative, resolve } from 'node:path';
import { mapLimit } from '../common/map-limit.js';

/** What staging one attempt's inputs did. */
export interface StagingReport {
  /** Files placed under `inputs/`. */
  readonly files: number;
  /** Bytes of those files. */
  readonly bytes: number;
  /** Bytes that had to be fetched from the object store (the rest came from the node cache). */
  readonly downloadedBytes: number;
}

/** Blobs removed from the cache at once, for one team (a `DataRemoved` with scope `node_cache`). */
export interface CacheRemoval {
  readonly team: string;
  /** The job whose release freed them; absent for a keep that ran out later. */
  readonly jobId?: string;
  readonly reason: 'job_released' | 'retention_expired' | 'evicted';
  readonly blobs: readonly { sha256: string; size: number }[];
}

/** Options of {@link InputCache}. */
export interface InputCacheOptions {
  /** Blobs fetched at once for a folder input. Default 4. */
  readonly concurrency?: number;
  /** Called after blobs were removed from the cache (the agent records `DataRemoved`). */
  readonly onRemoved?: (removal: CacheRemoval) => Promise<void>;
  /**
   * Called after a blob came into the cache (the agent heartbeats at once, so placement learns
   * what this node holds without waiting for the next beat).
   */
  readonly onAdded?: () => void;
  /** Clock (epoch ms) for keeps. Default `Date.now`. */
  readonly now?: () => number;
  /**
   * Most bytes the cache may hold. When a download would go beyond it, blobs no attempt on this
   * node uses are evicted, least recently used first, kept ones included (`evicted`); blobs in
   * use are never evicted, so the cache may exceed the cap while they run. Default: no cap.
   */
  readonly maxBytes?: number;
  /**
   * Has blobs of an attempt put where {@link InputCache} downloads them from: the node's own bucket,
   * filled by storage (decision 0025). Called once per attempt with the file inputs and folder
   * manifests the cache lacks (possibly none: storage then only checks the attempt), and once per
   * folder input with the files it lacks. When set, each blob is removed from the bucket once it
   * is in the cache: the bucket is a place of transit, the cache is the node's copy.
   */
  readonly prepare?: (team: string, attempt: { attemptId: string; jobId: string }, blobs: string[]) => Promise<void>;
  /**
   * Reads a blob of an attempt into the cache through storage (decision 0036): writes it to `dest`
   * with `mode` only once its sha256 and size are verified. When set, blobs the cache lacks are
   * read this way instead of being copied into the node's bucket and downloaded from it; `prepare`
   * is then called once per attempt with no blobs (storage checks the attempt and opens the
   * node's bucket, which outputs and checkpoints still go through).
   */
  readonly read?: (team: string, attempt: { attemptId: string; jobId: string }, blob: { sha256: string; size: number }, dest: string, mode: number) => Promise<void>;
}

/** How long the inputs of a `node_lost` attempt stay in the cache for its requeued job. */
export const REQUEUE_KEEP_MS = 3_600_000;

/** Who uses a cached blob and how long it is kept once nobody does. */
interface Use {
  readonly team: string;
  readonly size: number;
  /** Attempts on this node that staged it and are not released. */
  readonly attempts: Set<string>;
  /** Jobs of those attempts. */
  readonly jobs: Map<string, string>;
  /** Epoch ms until which it stays without users: the longest `keep` of the inputs that named it; Infinity for a named dataset. */
  keepUntil: number;
  /** The `keepMs` (or Infinity) asked for it, counted from the release of its last user. */
  keepMs: number;
}

/**
 * The node-local input cache: blobs by team and sha256 under `<work-dir>/cache/<team>/<sha256>`,
 * read-only, each fetched once from the object store (verified on the way in) and then
 * hard-linked into every run that needs it, so a second job on this node using the same
 * dataset moves no bytes. Folder inputs are cached file by file (their manifest too), so two
 * folders sharing files share the cache.
 *
 * Per team, not per node: a team never learns from timing whether another team holds a blob.
 * Known bound: a job running as root could write through a hard link into the cache (the
 * files are 0444, which root ignores); jobs run as an unprivileged user close that (issue 5).
 */
export class InputCache {
  private readonly inflight = new Map<string, Promise<boolean>>();
  private readonly concurrency: number;
  /** `<team>/<sha256>` of every complete blob in the cache. */
  private readonly present = new Set<string>();
  /** `<team>/<sha256>` → its users and keep, for the blobs staged by this agent run. */
  private readonly uses = new Map<string, Use>();
  private readonly onRemoved: InputCacheOptions['onRemoved'];
  private readonly onAdded: InputCacheOptions['onAdded'];
  private readonly now: () => number;
  private readonly maxBytes: number;
  /** `<team>/<sha256>` → size and last use (epoch ms) of every complete blob in the cache, for the cap. */
  private readonly sizes = new Map<string, { size: number; lastUsed: number }>();
  private readonly prepareBlobs: InputCacheOptions['prepare'];
  private readonly readBlob: InputCacheOptions['read'];
  private evicting: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly blobs: BlobStore,
    /** `<work-dir>/cache` */
    private readonly root: string,
    options: InputCacheOptions = {},
  ) {
    this.concurrency = options.concurrency ?? 4;
    this.onRemoved = options.onRemoved;
    this.onAdded = options.onAdded;
    this.now = options.now ?? Date.now;
    this.maxBytes = options.maxBytes ?? Infinity;
    this.prepareBlobs = options.prepare;
    this.readBlob = options.read;
    // What an earlier run of the agent left in the cache is still there to be used and reported.
    void this.scan().catch(() => undefined);
  }

  /** The blobs the cache holds, by team, for the heartbeat (placement prefers nodes holding a job's data). */
  held(): { team: string; sha256: string }[] {
    return [...this.present].map((key) => {
      const [team, sha256] = key.split('/') as [string, string];
      return { team, sha256 };
    });
  }

  /** Fills {@link held} from the cache directory: `<team>/<sha256>` files (temporary `.part` files are not blobs). */
  async scan(): Promise<void> {
    for (const team of await readdir(this.root).catch(() => [] as string[])) {
      for (const name of await readdir(join(this.root, team)).catch(() => [] as string[])) {
        if (!/^[0-9a-f]{64}$/.test(name)) continue;
        const st = await stat(join(this.root, team, name)).catch(() => undefined);
        if (!st?.isFile()) continue;
        this.present.add(`${team}/${name}`);
        if (!this.sizes.has(`${team}/${name}`)) this.sizes.set(`${team}/${name}`, { size: st.size, lastUsed: st.mtimeMs });
      }
    }
  }

  /**
   * Places every input at its `path` under `inputsDir` (files linked from the cache, executable
   * folder entries copied with mode 0555). Stops between files when `signal` aborts.
   *
   * @throws BlobNotFoundError, BlobIntegrityError, ManifestInvalidError (terminal: the job's
   *   inputs are wrong), BlobStoreUnavailableError (retryable), ValidationError for a path that
   *   would leave `inputsDir`.
   */
  async stage(team: string, inputs: readonly InputRef[], inputsDir: string, signal?: AbortSignal, user?: { attemptId: string; jobId: string }): Promise<StagingReport> {
    let files = 0;
    let bytes = 0;
    let downloadedBytes = 0;
    let keepMs = 0;
    const use = (sha256: string, size: number) => {
      if (!user) return;
      const key = `${team}/${sha256}`;
      const u = this.uses.get(key) ?? { team, size, attempts: new Set<string>(), jobs: new Map<string, string>(), keepUntil: 0, keepMs: 0 };
      u.attempts.add(user.attemptId);
      u.jobs.set(user.attemptId, user.jobId);
      u.keepMs = Math.max(u.keepMs, keepMs);
      this.uses.set(key, u);
    };
    const place = async (sha256: string, size: number, dest: string, executable: boolean) => {
      signal?.throwIfAborted();
      use(sha256, size);
      if (await this.ensure(team, sha256, size, user)) downloadedBytes += size;
      await linkInto(this.pathOf(team, sha256), dest, executable);
      files += 1;
      bytes += size;
    };
    const prepare = async (refs: readonly { sha256: string; size: number }[], always = false) => {
      if (!this.prepareBlobs || !user) return;
      signal?.throwIfAborted();
      // Read through storage: nothing is copied into the node's bucket first.
      const lacking = this.readBlob ? [] : await this.lacking(team, refs);
      if (lacking.length > 0 || always) await this.prepareBlobs(team, user, lacking);
    };
    await prepare(inputs, true);
    for (const input of inputs) {
      keepMs = input.dataset !== undefined ? Infinity : (input.keepMs ?? 0);
      const target = inside(inputsDir, input.path, `data.inputs.${input.name}.path`);
      if (input.kind === 'file') {
        await place(input.sha256, input.size, target, false);
        continue;
      }
      use(input.sha256, input.size);
      if (await this.ensure(team, input.sha256, input.size, user)) downloadedBytes += input.size;
      const manifest = parseFolderManifest(await readFile(this.pathOf(team, input.sha256)), input.sha256);
      await prepare(manifest.entries);
      await mkdir(target, { recursive: true });
      await mapLimit(manifest.entries, this.concurrency, (entry) =>
        place(entry.sha256, entry.size, inside(target, entry.path, `data.inputs.${input.name}`), entry.executable === true),
      );
    }
    return { files, bytes, downloadedBytes };
  }

  /**
   * An attempt is done with its inputs: each blob no other attempt on this node uses is removed
   * now unless its input asked to keep it (`keep`, kept from now for that long; `dataset`, kept),
   * and blobs whose keep has run out go too. A `node_lost` attempt (`requeued`) keeps everything:
   * placement prefers this node for the requeued job. Each removal is reported to `onRemoved`.
   */
  async release(attemptId: string, options: { requeued?: boolean } = {}): Promise<CacheRemoval[]> {
    const now = this.now();
    const freed = new Map<string, CacheRemoval & { blobs: { sha256: string; size: number }[] }>();
    for (const [key, u] of this.uses) {
      const jobId = u.jobs.get(attemptId);
      if (jobId !== undefined) {
        u.attempts.delete(attemptId);
        u.jobs.delete(attemptId);
        // A requeued job may come back here (placement prefers this node): keep its data a while.
        if (u.attempts.size === 0) u.keepUntil = now + (options.requeued ? Math.max(u.keepMs, REQUEUE_KEEP_MS) : u.keepMs);
      }
      if (u.attempts.size > 0 || u.keepUntil > now) continue;
      const reason = jobId !== undefined && u.keepMs === 0 ? 'job_released' : 'retention_expired';
      const group = `${u.team}\0${reason}\0${reason === 'job_released' ? jobId : ''}`;
      const removal = freed.get(group) ?? { team: u.team, reason, ...(reason === 'job_released' ? { jobId: jobId! } : {}), blobs: [] };
      await rm(this.pathOf(u.team, key.slice(u.team.length + 1)), { force: true });
      this.present.delete(key);
      this.uses.delete(key);
      this.sizes.delete(key);
      removal.blobs.push({ sha256: key.slice(u.team.length + 1), size: u.size });
      freed.set(group, removal);
    }
    const removals = [...freed.values()];
    for (const r of removals) await this.onRemoved?.(r);
    return removals;
  }

  /** Bytes of the complete blobs in the cache. */
  get bytesHeld(): number {
    let total = 0;
    for (const { size } of this.sizes.values()) total += size;
    return total;
  }

  /**
   * Makes room for `incoming` bytes under the cap: removes blobs no attempt here uses, least
   * recently used first, until the cache fits or nothing more may go. Reports them as `evicted`.
   */
  private evictFor(incoming: number): Promise<void> {
    // One eviction at a time: parallel downloads of a folder's files must not evict (or report) a blob twice.
    const run = this.evicting.then(() => this.evictNow(incoming));
    this.evicting = run.catch(() => undefined);
    return run;
  }

  private async evictNow(incoming: number): Promise<void> {
    if (this.maxBytes === Infinity) return;
    let total = this.bytesHeld;
    if (total + incoming <= this.maxBytes) return;
    const idle = [...this.sizes]
      .filter(([key]) => (this.uses.get(key)?.attempts.size ?? 0) === 0 && !this.inflight.has(key))
      .sort(([, a], [, b]) => a.lastUsed - b.lastUsed);
    const byTeam = new Map<string, { sha256: string; size: number }[]>();
    for (const [key, { size }] of idle) {
      if (total + incoming <= this.maxBytes) break;
      const slash = key.indexOf('/');
      const team = key.slice(0, slash);
      const sha256 = key.slice(slash + 1);
      await rm(this.pathOf(team, sha256), { force: true });
      this.present.delete(key);
      this.uses.delete(key);
      this.sizes.delete(key);
      total -= size;
      const list = byTeam.get(team) ?? [];
      list.push({ sha256, size });
      byTeam.set(team, list);
    }
    for (const [team, blobs] of byTeam) await this.onRemoved?.({ team, reason: 'evicted', blobs });
  }

  /** Of `refs`, the addresses neither in the cache nor on their way into it. */
  private async lacking(team: string, refs: readonly { sha256: string; size: number }[]): Promise<string[]> {
    const out = new Set<string>();
    for (const { sha256, size } of refs) {
      if (this.inflight.has(`${team}/${sha256}`)) continue;
      const st = await stat(this.pathOf(team, sha256)).catch(() => undefined);
      if (!st?.isFile() || st.size !== size) out.add(sha256);
    }
    return [...out];
  }

  /** Cached blob path of a team's blob. */
  pathOf(team: string, sha256: string): string {
    return join(this.root, team, sha256);
  }

  /** Makes sure the blob is in the cache; true when it had to be downloaded. One download per blob at a time. */
  private ensure(team: string, sha256: string, size: number, user?: { attemptId: string; jobId: string }): Promise<boolean> {
    const key = `${team}/${sha256}`;
    let pending = this.inflight.get(key);
    if (!pending) {
      pending = this.fetch(team, sha256, size, user).finally(() => this.inflight.delete(key));
      this.inflight.set(key, pending);
    }
    return pending;
  }

  private async fetch(team: string, sha256: string, size: number, user?: { attemptId: string; jobId: string }): Promise<boolean> {
    const path = this.pathOf(team, sha256);
    const existing = await stat(path).catch(() => undefined);
    // Written only by an atomic rename after verification, so a present file of the right size is the blob.
    const key = `${team}/${sha256}`;
    if (existing?.isFile() && existing.size === size) {
      this.present.add(key);
      this.sizes.set(key, { size, lastUsed: this.now() });
      return false;
    }
    if (existing) await rm(path, { force: true, recursive: true });
    await this.evictFor(size);
    if (this.readBlob && user) await this.readBlob(team, user, { sha256, size }, path, 0o444);
    else {
      await this.blobs.downloadTo(team, sha256, path, { size, mode: 0o444 });
      // Staged through the node's bucket: the cache holds it now, the bucket need not.
      if (this.prepareBlobs) await this.blobs.remove(team, sha256).catch(() => false);
    }
    this.present.add(key);
    this.sizes.set(key, { size, lastUsed: this.now() });
    this.onAdded?.();
    return true;
  }
}

/** `rel` resolved under `root`, refusing anything that would leave it. */
function inside(root: string, rel: string, field: string): string {
  const target = resolve(root, rel);
  const back = relative(resolve(root), target);
  if (back.startsWith('..') || isAbsolute(back)) {
    throw new ValidationError(`input path ${rel} would leave the input directory`, [{ path: field, message: `${rel} leaves GPUNET_INPUT_DIR` }]);
  }
  return target;
}

/** Hard-links the cached file into the run (a copy across file systems); executables are copied with 0555. */
async function linkInto(cached: string, dest: string, executable: boolean): Promise<void> {
  await mkdir(dirname(dest), { recursive: true });
  await rm(dest, { force: true });
  if (!executable) {
    try {
      await link(cached, dest);
      return;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'EXDEV' && code !== 'EPERM' && code !== 'EMLINK') throw err;
    }
  }
  await copyFile(cached, dest);
  await chmod(dest, executable ? 0o555 : 0o444);
}
