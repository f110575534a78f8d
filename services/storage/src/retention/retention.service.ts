import type { BlobRef } from '#contracts';
import { mapLimit, type BlobStore } from '#blobs';
import { TransientError } from '#errors';
import { IdempotencyConflictError } from '#event-store';
import { CLOCK, EVENT_WRITER, LOGGER, SERVICE_CONFIG, type Clock, type EventWriter } from '#service-kit';
import { Inject, Injectable, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import type { Logger } from 'pino';
import { BLOB_STORE } from '../blobs/blob-store.provider.js';
import { foldersToRead, inputBlobs, planRemovals, storageJobStreamId, teamsWithFinalJobs, type Removal, type RetainedOf, type RetainedRef } from '../domain/index.js';
import type { StorageConfig } from '../storage.config.js';
import { DataRefsFeed } from './data-refs.feed.js';
import { manifestFiles } from './manifest-files.js';
import { RemovalLock } from './removal-lock.js';

/** How long a handler waits for the reference model to reach the store's head before retrying. */
const CATCH_UP_MS = 10_000;
/** Passes a plan makes to read what the model needs before it gives up until the next try. */
const MAX_PLAN_PASSES = 20;
/** Blobs deleted at once. */
const REMOVE_CONCURRENCY = 8;

/**
 * Removes staged inputs nobody needs any more: at a job's release (`job_released`) and, every
 * sweep interval, those whose keep has passed (`retention_expired`). Plans come from the
 * reference model; one removal runs at a time and waits until the model has its own DataRemoved,
 * so the next plan never removes or records the same blob again.
 */
@Injectable()
export class RetentionService implements OnApplicationBootstrap, OnApplicationShutdown {
  /** Files of folder manifests, by `<team>/<sha256>` (manifests never change): those the last sweep used, and those read since. */
  private readonly manifests = new Map<string, readonly BlobRef[]>();
  private timer: NodeJS.Timeout | undefined;
  private sweeping: Promise<void> | undefined;

  constructor(
    private readonly feed: DataRefsFeed,
    private readonly lock: RemovalLock,
    @Inject(BLOB_STORE) private readonly blobs: BlobStore,
    @Inject(EVENT_WRITER) private readonly writer: EventWriter,
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(SERVICE_CONFIG) private readonly config: StorageConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  onApplicationBootstrap(): void {
    this.timer = setInterval(() => {
      this.sweeping ??= this.sweep()
        .then(() => undefined)
        .catch((err: unknown) => this.logger.error({ err }, 'retention sweep failed; trying again at the next interval'))
        .finally(() => (this.sweeping = undefined));
    }, this.config.GPUNET_STORAGE_SWEEP_INTERVAL);
    this.timer.unref();
  }

  async onApplicationShutdown(): Promise<void> {
    clearInterval(this.timer);
    await this.sweeping;
  }

  /** After `jobId` released its compute: removes its inputs that no job needs now. */
  async onReleased(jobId: string, log: Logger): Promise<Removal[]> {
    return this.serially(async () => {
      await this.catchUp();
      const removals = await this.plan(jobId);
      if (removals.length === 0) log.info('released: no staged input to remove now (still needed, kept, or already removed)');
      return this.execute(removals, log);
    });
  }

  /** Removes every input whose keep has passed and that no job needs. */
  async sweep(): Promise<Removal[]> {
    return this.serially(async () => {
      await this.catchUp();
      return this.execute(await this.plan(), this.logger);
    });
  }

  /**
   * The removals due now. The retained references are in the store's database (decision 0045):
   * the plan asks only about the blobs it may remove, with the references folded meanwhile from
   * memory. The model goes on folding while the plan reads, so it looks again until a pass finds
   * every team, blob and manifest it needs already read; from there to the plan nothing awaits.
   */
  private async plan(only?: string): Promise<Removal[]> {
    const model = this.feed.model;
    const used = new Set<string>();
    const filesOf = (team: string, sha: string) => {
      used.add(`${team}/${sha}`);
      return this.manifests.get(`${team}/${sha}`) ?? [];
    };
    // References not in the table when the plan began are in memory then, or on their way in.
    const recent: RetainedRef[] = [...this.feed.unwritten];
    const stop = this.feed.watchRetained((ref) => recent.push(ref));
    try {
      await this.feed.retainedWritten();
      // A write that failed put its references back in memory.
      recent.push(...this.feed.unwritten);
      /** Per team: the blobs asked about, and those the table holds as retained. */
      const asked = new Map<string, { blobs: Set<string>; files: Set<string>; folders: Set<string> }>();
      /** Per team: checkpoints the table holds without their files (not readable when written). */
      const unexpanded = new Map<string, string[]>();
      const inMemory = (team: string, kind: RetainedRef['kind']) => recent.filter((r) => r.team === team && r.kind === kind).map((r) => r.sha256);
      // Checkpoints not yet in the table, or in it without their files: their manifests are read here.
      const unreadFolders: RetainedOf = (team) => ({ files: new Set(), folders: [...inMemory(team, 'folder'), ...(unexpanded.get(team) ?? [])] });
      const retained: RetainedOf = (team) => {
        const a = asked.get(team);
        if (!a || !unexpanded.has(team)) return undefined;
        return { files: new Set([...a.files, ...inMemory(team, 'file')]), folders: new Set([...a.folders, ...inMemory(team, 'folder'), ...unexpanded.get(team)!]) };
      };
      for (let pass = 1; ; pass++) {
        if (pass > MAX_PLAN_PASSES) throw new TransientError(`the reference model kept moving while a removal plan read its references (${MAX_PLAN_PASSES} passes)`);
        const teams = teamsWithFinalJobs(model, only);
        const newTeams = teams.filter((t) => !unexpanded.has(t));
        for (const [team, manifests] of await this.feed.unexpandedFolders(newTeams)) {
          unexpanded.set(team, manifests);
          for (const m of manifests) {
            await this.loadManifest(team, m, undefined);
            this.feed.expanded(team, m, this.manifests.get(`${team}/${m}`)!);
          }
        }
        const folders = foldersToRead(model, teams, unreadFolders).filter((f) => !this.manifests.has(`${f.team}/${f.sha256}`));
        await mapLimit(folders, REMOVE_CONCURRENCY, (f) => this.loadManifest(f.team, f.sha256, f.size));
        const unasked = new Map<string, Set<string>>();
        for (const [team, blobs] of inputBlobs(model, teams, filesOf)) {
          const before = asked.get(team)?.blobs;
          const fresh = [...blobs].filter((b) => !before?.has(b));
          if (!before || fresh.length > 0) unasked.set(team, new Set(fresh));
        }
        if (newTeams.length === 0 && folders.length === 0 && unasked.size === 0) {
          // Every team, manifest and blob this plan looks at is read: plan now, without awaiting.
          return planRemovals(model, this.clock.now().getTime(), filesOf, retained, only);
        }
        const found = await this.feed.retainedAmong(unasked);
        for (const [team, blobs] of unasked) {
          let a = asked.get(team);
          if (!a) asked.set(team, (a = { blobs: new Set(), files: new Set(), folders: new Set() }));
          for (const b of blobs) a.blobs.add(b);
          for (const b of found.get(team)?.files ?? []) a.files.add(b);
          for (const b of found.get(team)?.folders ?? []) a.folders.add(b);
        }
      }
    } finally {
      stop();
      // After a sweep, the manifests it did not need leave memory (a release plans one team only).
      if (only === undefined) for (const key of this.manifests.keys()) if (!used.has(key)) this.manifests.delete(key);
    }
  }

  private async execute(removals: Removal[], log: Logger): Promise<Removal[]> {
    for (const removal of removals) {
      await mapLimit(removal.blobs, REMOVE_CONCURRENCY, (b) => this.blobs.remove(removal.team, b.sha256));
      let position: bigint | undefined;
      try {
        const result = await this.writer.append(
          storageJobStreamId(removal.jobId),
          [
            {
              type: 'DataRemoved',
              data: { jobId: removal.jobId, scope: 'inputs', blobs: removal.blobs, reason: removal.reason, removedAt: this.clock.now().toISOString() },
              discriminator: removal.discriminator,
            },
          ],
          { cause: removal.cause, team: removal.team },
        );
        position = result.position;
      } catch (err) {
        // The same removal was recorded already (another storage process, or a retry): it stands.
        if (!(err instanceof IdempotencyConflictError)) throw err;
      }
      for (const b of removal.blobs) this.manifests.delete(`${removal.team}/${b.sha256}`);
      log.info({ jobId: removal.jobId, team: removal.team, reason: removal.reason, blobs: removal.blobs.length, bytes: removal.blobs.reduce((n, b) => n + b.size, 0) }, 'staged inputs removed');
      if (position !== undefined && !(await this.feed.waitFor(position, CATCH_UP_MS))) {
        throw new TransientError(`the reference model did not reach position ${position} within ${CATCH_UP_MS} ms`);
      }
    }
    return removals;
  }

  private async loadManifest(team: string, sha256: string, size: number | undefined): Promise<void> {
    const key = `${team}/${sha256}`;
    if (!this.manifests.has(key)) this.manifests.set(key, await manifestFiles(this.blobs, team, sha256, size));
  }

  private async catchUp(): Promise<void> {
    if (!(await this.feed.catchUp(CATCH_UP_MS))) throw new TransientError(`the reference model did not catch up with the store within ${CATCH_UP_MS} ms`);
  }

  /** Runs removals one at a time (two plans made at once could both record the same blob), and never beside an outputs record. */
  private serially<T>(fn: () => Promise<T>): Promise<T> {
    return this.lock.run(fn);
  }
}
