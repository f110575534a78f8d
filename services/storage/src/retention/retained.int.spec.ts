import { BlobStore } from '#blobs';
import type { EventData } from '#contracts';
import { openPostgresEventStore, SqliteEventStore, type EventStore, type ProjectionTableHost } from '#event-store';
import { EventWriter, systemClock } from '#service-kit';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { startNatsServer, type TestNatsServer } from '../../../../test/support/nats-server.js';
import { createTestDatabase, type TestDatabase } from '../../../../test/support/postgres.js';
import type { StorageConfig } from '../storage.config.js';
import { DataRefsFeed, RETAINED_TABLE, retainedOfKey } from './data-refs.feed.js';
import { RemovalLock } from './removal-lock.js';
import { RetentionService } from './retention.service.js';

/**
 * The retained references' table when the object store cannot read a checkpoint's manifest as it
 * is written (decision 0045): the manifest is written without its files, a plan reads it itself
 * and protects its files, and the files are written with the next write. Against a real
 * nats-server whose user `blind` may not open team-a's bucket, and each store.
 */
describe.each(['sqlite', 'postgres'] as const)('retained references (%s store): a checkpoint whose manifest cannot be read when it is written', (kind) => {
  let nats: TestNatsServer;
  let dir: string;
  let db: TestDatabase | undefined;
  let store: EventStore & ProjectionTableHost;
  let full: NatsConnection;
  let blind: NatsConnection;
  const logger = pino({ level: 'silent' });

  beforeAll(async () => {
    nats = await startNatsServer({
      config: (storeDir) => `jetstream { store_dir: "${storeDir}" }
authorization {
  users = [
    { user: "full", password: "full" }
    { user: "blind", password: "blind", permissions: { publish: { allow: [">"], deny: ["$JS.API.STREAM.INFO.OBJ_gpunet-blobs-team-a"] } } }
  ]
}
`,
    });
    dir = await mkdtemp(join(tmpdir(), 'gpunet-retained-'));
    if (kind === 'postgres') {
      db = await createTestDatabase();
      store = await openPostgresEventStore({ connectionString: db.url });
    } else {
      store = new SqliteEventStore({ path: join(dir, 'events.db') });
    }
    full = await connect({ servers: nats.url, user: 'full', pass: 'full' });
    blind = await connect({ servers: nats.url, user: 'blind', pass: 'blind' });
  });

  afterAll(async () => {
    await blind?.close();
    await full?.close();
    await store?.close();
    await db?.drop();
    await nats?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('writes it unexpanded; a plan reads it and keeps its files; its files are written after', async () => {
    const blobs = await BlobStore.open(full);
    // A checkpoint as the agent stores it, and a later job whose input has the bytes of one of its files.
    const cpDir = join(dir, 'checkpoint');
    await mkdir(cpDir);
    const state = randomBytes(900);
    await writeFile(join(cpDir, 'state.bin'), state);
    const checkpoint = await blobs.uploadFolder('team-a', cpDir);
    await writeFile(join(dir, 'state.bin'), state);
    const input = await blobs.uploadFile('team-a', join(dir, 'state.bin'));
    const scratchBytes = randomBytes(300);
    await writeFile(join(dir, 'scratch.bin'), scratchBytes);
    const scratch = await blobs.uploadFile('team-a', join(dir, 'scratch.bin'));

    const intake = new EventWriter(store, 'intake', systemClock);
    const agent = new EventWriter(store, 'execution', systemClock);
    const submitted = (jobId: string, inputs: { name: string; sha256: string; size: number }[]): EventData<'JobSubmitted'> => ({
      jobId,
      team: 'team-a',
      submittedAt: new Date().toISOString(),
      spec: {
        work: { kind: 'script', script: { inline: 'true' }, args: [], env: {} },
        data: { inputs: inputs.map((i) => ({ ...i, path: i.name, kind: 'file' as const })) },
        request: { gpus: 1, timeLimitMs: 60_000, network: false },
        outputs: { globs: ['**'] },
      },
    });
    await intake.append('intake-job-job-0', [{ type: 'JobSubmitted', data: submitted('job-0', []) }], { correlationId: 'corr-0' });
    await agent.append(
      'execution-node-1-attempt-job-0-a1',
      [{ type: 'JobCheckpointed', data: { jobId: 'job-0', attemptId: 'job-0-a1', nodeId: 'node-1', sequence: 1, sha256: checkpoint.sha256, size: checkpoint.totalBytes, checkpointedAt: new Date().toISOString() } }],
      { correlationId: 'corr-0', team: 'team-a' },
    );
    await intake.append(
      'intake-job-job-1',
      [{ type: 'JobSubmitted', data: submitted('job-1', [{ name: 'state', sha256: input.sha256, size: input.size }, { name: 'scratch', sha256: scratch.sha256, size: scratch.size }]) }],
      { correlationId: 'corr-1' },
    );

    // The feed's object store cannot open team-a's bucket: the manifest goes in without its files.
    const feed = new DataRefsFeed(store, await BlobStore.open(blind), logger);
    await feed.onModuleInit();
    const table = await store.openProjectionTable(RETAINED_TABLE);
    const rows = async () => (await table.query({})).rows.map((r) => ({ ...retainedOfKey(r.key), ...(JSON.parse(r.doc) as { via?: string; expanded?: boolean }) }));
    expect(await rows()).toEqual([{ team: 'team-a', kind: 'folder', sha256: checkpoint.sha256, expanded: false }]);
    expect(await feed.unexpandedFolders(['team-a'])).toEqual(new Map([['team-a', [checkpoint.sha256]]]));

    // job-1 ends; the plan (whose object store can read it) keeps the checkpoint's file and removes the scratch input.
    const now = new Date().toISOString();
    const base = { jobId: 'job-1', attemptId: 'job-1-a1', nodeId: 'node-1' };
    await agent.append(
      'execution-node-1-attempt-job-1-a1',
      [
        { type: 'JobFinished', data: { ...base, outcome: 'completed', exitCode: 0, signal: null, finishedAt: now } },
        { type: 'ComputeReleased', data: { ...base, gpuIndices: [0], releasedAt: now } },
      ],
      { correlationId: 'corr-1' },
    );
    const retention = new RetentionService(feed, new RemovalLock(), blobs, new EventWriter(store, 'storage', systemClock), systemClock, {} as StorageConfig, logger);
    const removals = await retention.onReleased('job-1', logger);
    expect(removals.map((r) => r.blobs.map((b) => b.sha256))).toEqual([[scratch.sha256]]);
    expect(await blobs.exists('team-a', input.sha256)).toBe(true);
    expect(await blobs.exists('team-a', scratch.sha256)).toBe(false);

    // The files the plan read are written with the next write (the plan's own DataRemoved moved the store on).
    await feed.flushRetained(true);
    expect(await rows()).toEqual(
      expect.arrayContaining([
        { team: 'team-a', kind: 'folder', sha256: checkpoint.sha256 },
        { team: 'team-a', kind: 'file', sha256: input.sha256, via: checkpoint.sha256 },
      ]),
    );
    expect(await feed.unexpandedFolders(['team-a'])).toEqual(new Map([['team-a', []]]));
    await feed.onApplicationShutdown();
  }, 30_000);
});
