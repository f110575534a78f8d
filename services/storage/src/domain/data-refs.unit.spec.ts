import type { BlobRef, DataRemoved } from '#contracts';
import fc from 'fast-check';
import {
  decodeDataRefs,
  decodeDataRefsParts,
  encodeDataRefs,
  encodeDataRefsParts,
  JOBS_PER_PART,
  evolve,
  foldersToRead,
  initialDataRefs,
  inputBlobs,
  planRemovals,
  retainedBy,
  retainedIn,
  type DataRefs,
  type FilesOf,
  type RefEvent,
  type Removal,
  type RetainedRef,
} from './data-refs.js';
import { at, sha, submitted, T0, type InputSketch } from './fixtures.js';

const HOUR = 3_600_000;
let seq = 0;
const ev = (type: string, data: unknown): RefEvent => ({ eventId: `evt-${++seq}`, type, data, metadata: { correlationId: 'corr' } });
const noFolders: FilesOf = () => [];

/** The references each model's events retained, kept beside it as storage keeps them in its table. */
const retainedOf = new WeakMap<DataRefs, RetainedRef[]>();

/** Folds one event as storage's feed does: the references it retains, then the model. */
function fold(model: DataRefs, e: RefEvent): void {
  const refs = retainedOf.get(model) ?? [];
  refs.push(...retainedBy(model, e));
  retainedOf.set(model, refs);
  evolve(model, e);
}

function given(...events: RefEvent[]): DataRefs {
  const model = initialDataRefs();
  for (const e of events) fold(model, e);
  return model;
}

/** A plan with the model's retained references, as the retention service asks for them. */
const planFor = (model: DataRefs, nowMs: number, filesOf: FilesOf, only?: string) => planRemovals(model, nowMs, filesOf, retainedIn(retainedOf.get(model) ?? []), only);
const folders = (model: DataRefs, teams: string[]) => foldersToRead(model, teams, retainedIn(retainedOf.get(model) ?? []));
const submit = (jobId: string, inputs: InputSketch[], team = 'team-a') => ev('JobSubmitted', submitted(jobId, inputs, team));
const finished = (jobId: string, attempt: string, outcome: string, ms = 1000) =>
  ev('JobFinished', { jobId, attemptId: attempt, nodeId: 'node-1', outcome, exitCode: 0, signal: null, finishedAt: at(ms) });
const released = (jobId: string, attempt: string, ms = 1000) => ev('ComputeReleased', { jobId, attemptId: attempt, nodeId: 'node-1', gpuIndices: [0], releasedAt: at(ms) });
const removed = (jobId: string, blobs: BlobRef[]): RefEvent =>
  ev('DataRemoved', { jobId, scope: 'inputs', blobs, reason: 'job_released', removedAt: at(2000) } satisfies DataRemoved);
const shas = (blobs: readonly BlobRef[]) => blobs.map((b) => b.sha256).sort();
const ended = (jobId: string, ms: number, team = 'team-a') =>
  ev('JobEnded', { jobId, team, outcome: 'completed', attempts: 1, billed: { billableMs: 0, totals: [] }, endedAt: at(ms) });

describe('data references', () => {
  it('given a released job whose inputs nobody else uses, plans their removal as job_released, caused by the release', () => {
    const release = released('job-1', 'a1');
    const model = given(submit('job-1', [{ name: 'x', sha256: sha('a1') }, { name: 'y', sha256: sha('b2'), size: 3 }]), finished('job-1', 'a1', 'completed'), release);

    const plan = planFor(model, T0 + 1000, noFolders, 'job-1');

    expect(plan).toEqual([
      {
        jobId: 'job-1',
        team: 'team-a',
        reason: 'job_released',
        blobs: [
          { sha256: sha('a1'), size: 10 },
          { sha256: sha('b2'), size: 3 },
        ],
        cause: { eventId: release.eventId, metadata: { correlationId: 'corr' } },
        discriminator: `job_released:${sha('a1')},${sha('b2')}`,
      },
    ]);
  });

  it('given an unfinished job of the team using the same blob, keeps it until that job is released too', () => {
    const model = given(
      submit('job-1', [{ name: 'x', sha256: sha('a1') }, { name: 'own', sha256: sha('c3') }]),
      submit('job-2', [{ name: 'x', sha256: sha('a1') }]),
      finished('job-1', 'a1', 'failed'),
      released('job-1', 'a1'),
    );
    expect(planFor(model, T0 + 1000, noFolders, 'job-1').flatMap((r) => shas(r.blobs))).toEqual([sha('c3')]);

    fold(model, removed('job-1', [{ sha256: sha('c3'), size: 10 }]));
    fold(model, finished('job-2', 'b1', 'completed', 5000));
    fold(model, released('job-2', 'b1', 5000));

    const plan = planFor(model, T0 + 5000, noFolders, 'job-2');
    expect(plan.map((r) => [r.jobId, shas(r.blobs)])).toEqual([['job-2', [sha('a1')]]]);

    // Recording it settles job-1's reference too: nothing is left for a sweep.
    fold(model, removed('job-2', plan[0]!.blobs));
    expect(planFor(model, T0 + 10 * HOUR, noFolders)).toEqual([]);
    expect(model.jobs.size).toBe(0);
  });

  it('plans a blob several ended jobs held under the last of them to end, whether a sweep or that job\'s release plans it', () => {
    const model = given(
      submit('job-1', [{ name: 'x', sha256: sha('a1') }]),
      submit('job-2', [{ name: 'x', sha256: sha('a1') }]),
      submit('job-3', [{ name: 'x', sha256: sha('a1') }]),
      released('job-2', 'b1', 1000),
      released('job-1', 'a1', 2000),
    );
    expect(planFor(model, T0 + 3000, noFolders)).toEqual([]); // job-3 still needs it
    fold(model, released('job-3', 'c1', 3000));
    const bySweep = planFor(model, T0 + 3000, noFolders);
    expect(bySweep.map((r) => [r.jobId, shas(r.blobs)])).toEqual([['job-3', [sha('a1')]]]);
    expect(planFor(model, T0 + 3000, noFolders, 'job-3')).toEqual(bySweep);
  });

  it('given another team using the same bytes, removes this team\'s copy anyway: teams share nothing', () => {
    const model = given(
      submit('job-1', [{ name: 'x', sha256: sha('a1') }], 'team-a'),
      submit('job-2', [{ name: 'x', sha256: sha('a1') }], 'team-b'),
      finished('job-1', 'a1', 'completed'),
      released('job-1', 'a1'),
    );
    expect(planFor(model, T0 + 1000, noFolders, 'job-1')).toMatchObject([{ team: 'team-a', blobs: [{ sha256: sha('a1') }] }]);
  });

  it('given a kept input, removes it only once its keep has passed, as retention_expired', () => {
    const model = given(
      submit('job-1', [{ name: 'x', sha256: sha('a1'), keepMs: HOUR }, { name: 'y', sha256: sha('b2') }]),
      finished('job-1', 'a1', 'completed'),
      released('job-1', 'a1'),
    );
    expect(planFor(model, T0 + 1000, noFolders, 'job-1').map((r) => [r.reason, shas(r.blobs)])).toEqual([['job_released', [sha('b2')]]]);
    fold(model, removed('job-1', [{ sha256: sha('b2'), size: 10 }]));

    expect(planFor(model, T0 + 1000 + HOUR - 1, noFolders)).toEqual([]);
    expect(planFor(model, T0 + 1000 + HOUR, noFolders).map((r) => [r.reason, shas(r.blobs)])).toEqual([['retention_expired', [sha('a1')]]]);
  });

  it('given a named dataset, keeps it after release until a later job of the team names the dataset with other bytes', () => {
    const model = given(
      submit('job-1', [{ name: 'x', sha256: sha('a1'), dataset: 'imagenet' }, { name: 'y', sha256: sha('b2') }]),
      finished('job-1', 'a1', 'completed'),
      released('job-1', 'a1'),
    );
    expect(planFor(model, T0 + 1000, noFolders, 'job-1').map((r) => [r.reason, shas(r.blobs)])).toEqual([['job_released', [sha('b2')]]]);
    fold(model, removed('job-1', [{ sha256: sha('b2'), size: 10 }]));
    expect(planFor(model, T0 + 400 * 24 * HOUR, noFolders)).toEqual([]); // no time limit: it is the team's dataset

    // Another team naming the same dataset changes nothing for this one.
    fold(model, ev('JobSubmitted', submitted('job-2', [{ name: 'x', sha256: sha('c3'), dataset: 'imagenet' }], 'team-b', 5000)));
    expect(planFor(model, T0 + 6000, noFolders)).toEqual([]);

    // The team's next version of the dataset: the old bytes go, as retention_expired.
    fold(model, ev('JobSubmitted', submitted('job-3', [{ name: 'x', sha256: sha('d4'), dataset: 'imagenet' }], 'team-a', 7000)));
    expect(planFor(model, T0 + 6999, noFolders)).toEqual([]);
    expect(planFor(model, T0 + 7000, noFolders).map((r) => [r.jobId, r.reason, shas(r.blobs)])).toEqual([['job-1', 'retention_expired', [sha('a1')]]]);
  });

  it('given a kept input of a finished job, a later job reusing it holds it past the keep', () => {
    const model = given(
      submit('job-1', [{ name: 'x', sha256: sha('a1'), keepMs: HOUR }]),
      finished('job-1', 'a1', 'completed'),
      released('job-1', 'a1'),
      submit('job-2', [{ name: 'x', sha256: sha('a1') }]),
    );
    expect(planFor(model, T0 + 2 * HOUR, noFolders)).toEqual([]);
  });

  it('given an attempt lost with its node, keeps the inputs for the requeued attempt', () => {
    const model = given(submit('job-1', [{ name: 'x', sha256: sha('a1') }]), finished('job-1', 'a1', 'node_lost'), released('job-1', 'a1'));
    expect(model.jobs.get('job-1')?.final).toBeUndefined();
    expect(planFor(model, T0 + 1000, noFolders, 'job-1')).toEqual([]);

    fold(model, ev('JobRequeued', { jobId: 'job-1', previousAttemptId: 'a1', reason: 'node_lost', nextAttempt: 2, requeuedAt: at(1500) }));
    fold(model, finished('job-1', 'a2', 'completed', 3000));
    fold(model, released('job-1', 'a2', 3000));
    expect(planFor(model, T0 + 3000, noFolders, 'job-1')).toMatchObject([{ blobs: [{ sha256: sha('a1') }] }]);
  });

  it.each([
    ['StagingFailed', { jobId: 'job-1', reason: 'blob_missing', message: 'x', failedAt: at(100) }],
    ['JobRejected', { jobId: 'job-1', team: 'team-a', reason: 'unsatisfiable', message: 'x', issues: [], rejectedAt: at(100) }],
    ['JobWithdrawn', { jobId: 'job-1', team: 'team-a', outcome: 'cancelled', withdrawnAt: at(100) }],
  ])('given a job ended by %s, a sweep removes what it uploaded', (type, data) => {
    const model = given(submit('job-1', [{ name: 'x', sha256: sha('a1') }]), ev(type, data));
    expect(planFor(model, T0 + 100, noFolders).map((r) => [r.jobId, r.reason, shas(r.blobs)])).toEqual([['job-1', 'job_released', [sha('a1')]]]);
  });

  it('given a folder input, removes the manifest and the files no other input of the team needs', () => {
    const manifest = sha('f0');
    const files: Record<string, BlobRef[]> = {
      [manifest]: [
        { sha256: sha('a1'), size: 1 },
        { sha256: sha('b2'), size: 2 },
      ],
    };
    const filesOf: FilesOf = (team, m) => (team === 'team-a' ? (files[m] ?? []) : []);
    const model = given(
      submit('job-1', [{ name: 'ds', sha256: manifest, kind: 'folder', size: 300 }]),
      submit('job-2', [{ name: 'part', sha256: sha('b2'), size: 2 }]),
      finished('job-1', 'a1', 'completed'),
      released('job-1', 'a1'),
    );
    expect(folders(model, ['team-a'])).toEqual([{ team: 'team-a', sha256: manifest, size: 300 }]);

    const plan = planFor(model, T0 + 1000, filesOf, 'job-1');

    expect(plan.map((r) => shas(r.blobs))).toEqual([[sha('a1'), manifest].sort()]);
  });

  it('given an unfinished folder input sharing a file with a released file input, keeps that file', () => {
    const manifest = sha('f0');
    const filesOf: FilesOf = (_team, m) => (m === manifest ? [{ sha256: sha('a1'), size: 1 }] : []);
    const model = given(
      submit('job-1', [{ name: 'x', sha256: sha('a1'), size: 1 }]),
      submit('job-2', [{ name: 'ds', sha256: manifest, kind: 'folder' }]),
      finished('job-1', 'a1', 'completed'),
      released('job-1', 'a1'),
    );
    expect(planFor(model, T0 + 1000, filesOf, 'job-1')).toEqual([]);
  });

  it('is idempotent: events applied twice, and a removal recorded twice, change nothing more', () => {
    const events = [submit('job-1', [{ name: 'x', sha256: sha('a1') }]), finished('job-1', 'a1', 'completed'), released('job-1', 'a1')];
    const once = given(...events);
    const twice = given(...events, ...events);
    expect(planFor(twice, T0 + 1000, noFolders)).toEqual(planFor(once, T0 + 1000, noFolders));

    const gone = removed('job-1', [{ sha256: sha('a1'), size: 10 }]);
    fold(twice, gone);
    fold(twice, gone);
    expect(twice.jobs.size).toBe(0);
    expect(twice.byTeam.size).toBe(0);
  });

  it('forgets a final job without inputs at once', () => {
    const model = given(submit('job-1', []), finished('job-1', 'a1', 'completed'), released('job-1', 'a1'));
    expect(model.jobs.size).toBe(0);
  });

  it('plans a blob shared by two expired jobs once', () => {
    const model = given(
      submit('job-1', [{ name: 'x', sha256: sha('a1') }]),
      submit('job-2', [{ name: 'x', sha256: sha('a1') }]),
      ev('JobWithdrawn', { jobId: 'job-1', team: 'team-a', outcome: 'cancelled', withdrawnAt: at(10) }),
      ev('JobWithdrawn', { jobId: 'job-2', team: 'team-a', outcome: 'cancelled', withdrawnAt: at(10) }),
    );
    const plan = planFor(model, T0 + 10, noFolders);
    expect(plan.flatMap((r) => shas(r.blobs))).toEqual([sha('a1')]);
    fold(model, removed(plan[0]!.jobId, plan[0]!.blobs));
    expect(model.jobs.size).toBe(0);
  });

  it('never removes an input whose bytes are also an output, a log or a checkpoint of the team: they are the same blob', () => {
    const manifest = sha('f0');
    const filesOf: FilesOf = (team, m) => (team === 'team-a' && m === manifest ? [{ sha256: sha('d4'), size: 4 }] : []);
    const model = given(
      submit('job-1', [
        { name: 'weights', sha256: sha('a1') },
        { name: 'stdout-seed', sha256: sha('b2') },
        { name: 'state', sha256: sha('d4') },
        { name: 'scratch', sha256: sha('c3') },
      ]),
      ev('JobCheckpointed', { jobId: 'job-1', attemptId: 'a1', nodeId: 'node-1', sequence: 1, sha256: manifest, size: 4, checkpointedAt: at(500) }),
      finished('job-1', 'a1', 'completed'),
      ev('OutputsStored', {
        jobId: 'job-1',
        attemptId: 'a1',
        files: [{ path: 'model.bin', sha256: sha('a1'), size: 10 }],
        totalBytes: 10,
        truncated: false,
        rejected: [],
        logs: [{ stream: 'stdout', sha256: sha('b2'), size: 10 }],
        storedAt: at(900),
      }),
      released('job-1', 'a1'),
    );
    // Only the input nothing else refers to goes; the output, the log and the checkpoint's file stay.
    expect(planFor(model, T0 + 1000, filesOf, 'job-1').flatMap((r) => shas(r.blobs))).toEqual([sha('c3')]);
    // A checkpoint's recorded size is its files' total, not the manifest's: the manifest is read without a size check.
    expect(folders(model, ['team-a'])).toContainEqual({ team: 'team-a', sha256: manifest });
  });

  it('an output of one team protects nothing of another team', () => {
    const model = given(
      submit('job-1', [{ name: 'x', sha256: sha('a1') }], 'team-a'),
      submit('job-2', [], 'team-b'),
      ev('OutputsStored', { jobId: 'job-2', attemptId: 'b1', files: [{ path: 'x', sha256: sha('a1'), size: 10 }], totalBytes: 10, truncated: false, rejected: [], logs: [], storedAt: at(900) }),
      finished('job-1', 'a1', 'completed'),
      released('job-1', 'a1'),
    );
    expect(planFor(model, T0 + 1000, noFolders, 'job-1').flatMap((r) => shas(r.blobs))).toEqual([sha('a1')]);
  });

  it('protects an output recorded after its job left the model, by the team its event names (no map of every job\'s team is kept)', () => {
    const model = given(submit('job-1', []), finished('job-1', 'a1', 'completed'), released('job-1', 'a1'));
    // A job with no inputs is settled at its release: nothing of it is kept.
    expect(model.jobs.size).toBe(0);
    expect(Object.keys(model)).not.toContain('teamOf');
    fold(model, { ...ev('OutputsStored', { jobId: 'job-1', attemptId: 'a1', files: [{ path: 'late.bin', sha256: sha('d4'), size: 10 }], totalBytes: 10, truncated: false, rejected: [], logs: [], storedAt: at(1500) }), metadata: { correlationId: 'corr', team: 'team-a' } });
    fold(model, submit('job-2', [{ name: 'x', sha256: sha('d4') }]));
    fold(model, finished('job-2', 'b1', 'completed', 2000));
    fold(model, released('job-2', 'b1', 2000));
    expect(planFor(model, T0 + 2000, noFolders, 'job-2')).toEqual([]);
  });
});

describe('retained references (decision 0045)', () => {
  const manifest = sha('f0');
  const filesOf: FilesOf = (team, m) => (team === 'team-a' && m === manifest ? [{ sha256: sha('d4'), size: 4 }] : []);
  const outputs = (jobId: string, files: string[], team?: string): RefEvent => ({
    ...ev('OutputsStored', { jobId, attemptId: 'a1', files: files.map((f, i) => ({ path: `f${i}`, sha256: f, size: 1 })), totalBytes: files.length, truncated: false, rejected: [], logs: [{ stream: 'stdout', sha256: sha('b2'), size: 1 }], storedAt: at(900) }),
    ...(team ? { metadata: { correlationId: 'corr', team } } : {}),
  });

  it('an output names its files and logs, a checkpoint its manifest, of the team its event names, else of its job', () => {
    const model = given(submit('job-1', [], 'team-b'));
    expect(retainedBy(model, outputs('job-1', [sha('a1')]))).toEqual([
      { team: 'team-b', sha256: sha('a1'), kind: 'file' },
      { team: 'team-b', sha256: sha('b2'), kind: 'file' },
    ]);
    expect(retainedBy(model, outputs('job-gone', [sha('a1')], 'team-c')).map((r) => r.team)).toEqual(['team-c', 'team-c']);
    // A job the model does not hold, on an event that names no team: nothing to retain it under.
    expect(retainedBy(model, outputs('job-gone', [sha('a1')]))).toEqual([]);
    const checkpoint = ev('JobCheckpointed', { jobId: 'job-1', attemptId: 'a1', nodeId: 'node-1', sequence: 1, sha256: manifest, size: 4, checkpointedAt: at(500) });
    expect(retainedBy(model, checkpoint)).toEqual([{ team: 'team-b', sha256: manifest, kind: 'folder' }]);
    expect(retainedBy(model, ev('JobFinished', { jobId: 'job-1' }))).toEqual([]);
  });

  it('the model holds none of them, whatever the outputs stored', () => {
    const model = given(submit('job-1', [{ name: 'x', sha256: sha('a1') }]));
    const before = encodeDataRefs(model);
    for (let i = 0; i < 50; i++) fold(model, outputs('job-1', [sha(`c${i}`)]));
    expect(encodeDataRefs(model)).toBe(before);
  });

  it('a team whose retained references are not known has nothing planned', () => {
    const model = given(submit('job-1', [{ name: 'x', sha256: sha('a1') }]), finished('job-1', 'a1', 'completed'), released('job-1', 'a1'));
    expect(planRemovals(model, T0 + 1000, noFolders, () => undefined)).toEqual([]);
    expect(planRemovals(model, T0 + 1000, noFolders, retainedIn([])).flatMap((r) => shas(r.blobs))).toEqual([sha('a1')]);
  });

  it('a plan told only the retained files among the blobs it may remove plans as one told every retained file', () => {
    const events = [
      submit('job-1', [
        { name: 'weights', sha256: sha('a1') },
        { name: 'scratch', sha256: sha('c3') },
        { name: 'state', sha256: sha('d4') },
      ]),
      submit('job-2', [{ name: 'ds', sha256: sha('e5'), kind: 'folder' }]),
      ev('JobCheckpointed', { jobId: 'job-1', attemptId: 'a1', nodeId: 'node-1', sequence: 1, sha256: manifest, size: 4, checkpointedAt: at(500) }),
      ...Array.from({ length: 20 }, (_, i) => outputs('job-1', [sha(`9${i}`)])),
      outputs('job-1', [sha('a1')]),
      finished('job-1', 'a1', 'completed'),
      released('job-1', 'a1'),
      ev('JobWithdrawn', { jobId: 'job-2', team: 'team-a', outcome: 'cancelled', withdrawnAt: at(10) }),
    ];
    const model = given(...events);
    const all = retainedOf.get(model)!;
    const candidates = inputBlobs(model, ['team-a'], filesOf).get('team-a')!;
    expect([...candidates].sort()).toEqual([sha('a1'), sha('c3'), sha('d4'), sha('e5')].sort());
    const asked = retainedIn(all.filter((r) => r.kind === 'folder' || candidates.has(r.sha256)));
    expect(planRemovals(model, T0 + 1000, filesOf, asked)).toEqual(planRemovals(model, T0 + 1000, filesOf, retainedIn(all)));
    // The output a1 and the checkpoint's file d4 stay; the scratch input and the withdrawn job's folder go.
    expect(planRemovals(model, T0 + 1000, filesOf, asked).flatMap((r) => shas(r.blobs)).sort()).toEqual([sha('c3'), sha('e5')].sort());
  });
});

describe('data references snapshot (decision 0044)', () => {
  // Every kind of entry: a kept dataset renamed later, a folder input, an output and a checkpoint
  // retained, a job lost and requeued, a removal, jobs of two teams.
  const history: RefEvent[] = [
    submit('job-1', [{ name: 'x', sha256: sha('a1') }, { name: 'set', sha256: sha('b2'), dataset: 'corpus' }]),
    submit('job-2', [{ name: 'x', sha256: sha('a1') }, { name: 'dir', sha256: sha('f6'), kind: 'folder' }], 'team-b'),
    ev('JobCheckpointed', { jobId: 'job-1', attemptId: 'a1', nodeId: 'node-1', sequence: 1, sha256: sha('c3'), size: 4, checkpointedAt: at(500) }),
    finished('job-1', 'a1', 'node_lost'),
    released('job-1', 'a1'),
    ev('JobRequeued', { jobId: 'job-1', previousAttemptId: 'a1', reason: 'node_lost', nextAttempt: 2, requeuedAt: at(1100) }),
    finished('job-1', 'a2', 'completed', 1500),
    ev('OutputsStored', { jobId: 'job-1', attemptId: 'a2', files: [{ path: 'm.bin', sha256: sha('d4'), size: 10 }], totalBytes: 10, truncated: false, rejected: [], logs: [{ stream: 'stdout', sha256: sha('e5'), size: 1 }], storedAt: at(1500) }),
    released('job-1', 'a2', 1500),
    removed('job-1', [{ sha256: sha('a1'), size: 10 }]),
    submit('job-3', [{ name: 'set', sha256: sha('a9'), dataset: 'corpus' }]),
    finished('job-2', 'b1', 'completed', 3000),
    released('job-2', 'b1', 3000),
    finished('job-3', 'c1', 'completed', 3500),
    released('job-3', 'c1', 3500),
    ended('job-3', 3600),
    // job-4 keeps the dataset job-3 kept: job-3 leaves the model.
    submit('job-4', [{ name: 'set', sha256: sha('a9'), dataset: 'corpus' }]),
    finished('job-4', 'd1', 'completed', 4000),
    released('job-4', 'd1', 4000),
  ];

  it.each(Array.from({ length: history.length + 1 }, (_, k) => k))('cut after %i events: decode(encode) with the rest folded on equals the whole fold', (k) => {
    const whole = given(...history);
    const loaded = decodeDataRefs(encodeDataRefs(given(...history.slice(0, k))));
    for (const e of history.slice(k)) fold(loaded, e);
    expect(loaded).toEqual(whole);
    expect(encodeDataRefs(loaded)).toBe(encodeDataRefs(whole));
    // The retained references are not in the snapshot: storage keeps them in their own table, for the whole history.
    expect(planRemovals(loaded, T0 + 10 * HOUR, noFolders, retainedIn(retainedOf.get(whole)!))).toEqual(planFor(whole, T0 + 10 * HOUR, noFolders));
    expect(encodeDataRefs(loaded)).not.toContain(sha('d4'));
  });

  it('a model of more jobs than a part holds is saved in parts, each far below the longest string, and read back equal', () => {
    // One string of a million jobs' model was longer than V8 allows: the save failed, every start folded the store.
    const model = initialDataRefs();
    const n = 2 * JOBS_PER_PART + 7;
    for (let i = 0; i < n; i++) evolve(model, submit(`job-${i}`, [{ name: 'x', sha256: sha('a1') }]));
    const parts = encodeDataRefsParts(model);
    expect(parts).toHaveLength(1 + 3);
    const back = decodeDataRefsParts(parts);
    expect(back).toEqual(model);
    expect([...back.jobs.keys()]).toEqual([...model.jobs.keys()]);
    expect(() => decodeDataRefsParts(parts.slice(0, -1))).toThrow(/not a storage reference model: 40000 jobs in its parts, its first part says 40007/);
  });

  it('refuses text that is not a model', () => {
    expect(() => decodeDataRefs('{"jobs":{}}')).toThrow(/not a storage reference model/);
    expect(() => decodeDataRefs('null')).toThrow(/not a storage reference model/);
  });
});

describe('superseded jobs (decision 0048)', () => {
  it('a job that named a dataset leaves the model once a later job of the team keeps the same bytes under that name', () => {
    const history: RefEvent[] = [];
    for (let i = 1; i <= 5; i++) {
      const t = i * 1000;
      history.push(submit(`job-${i}`, [{ name: 'set', sha256: sha('b2'), dataset: 'corpus' }]), finished(`job-${i}`, 'a1', 'completed', t), released(`job-${i}`, 'a1', t), ended(`job-${i}`, t + 10));
    }
    const kept = initialDataRefs();
    for (const e of history) evolve(kept, e, { supersede: false });
    const model = given(...history);
    expect([...kept.jobs.keys()]).toHaveLength(5);
    expect([...model.jobs.keys()]).toEqual(['job-5']);
    // Renamed: the bytes go under the last job to keep them, as with every job kept.
    const renamed = submit('job-6', [{ name: 'set', sha256: sha('c3'), dataset: 'corpus' }]);
    fold(model, renamed);
    evolve(kept, renamed, { supersede: false });
    expect(planFor(model, T0 + HOUR, noFolders)).toEqual(planRemovals(kept, T0 + HOUR, noFolders, retainedIn([])));
    expect(planFor(model, T0 + HOUR, noFolders).map((r) => [r.jobId, shas(r.blobs)])).toEqual([['job-5', [sha('b2')]]]);
  });

  it('a job not yet ended, or holding an input the later job does not keep as long, stays', () => {
    const model = given(
      submit('job-1', [{ name: 'set', sha256: sha('b2'), dataset: 'corpus' }]),
      submit('job-2', [{ name: 'set', sha256: sha('b2'), dataset: 'corpus' }, { name: 'x', sha256: sha('a1'), keepMs: 5000 }]),
      submit('job-3', [{ name: 'x', sha256: sha('a1'), keepMs: 1000 }, { name: 'set', sha256: sha('b2'), dataset: 'corpus' }]),
      // job-1 is released (final) but placement may still run it again: not ended.
      released('job-1', 'a1', 1000),
      released('job-2', 'b1', 2000),
      ended('job-2', 2100),
      released('job-3', 'c1', 3000),
      ended('job-3', 3100),
    );
    // job-2 keeps a1 until 7000, job-3 only until 4000.
    expect([...model.jobs.keys()].sort()).toEqual(['job-1', 'job-2', 'job-3']);
  });

  it('a removal recorded under a job that left the model still settles the blob for the team', () => {
    const model = given(
      submit('job-1', [{ name: 'x', sha256: sha('a1'), keepMs: 1000 }]),
      released('job-1', 'a1', 1000),
      ended('job-1', 1100),
      submit('job-2', [{ name: 'x', sha256: sha('a1'), keepMs: 1000 }]),
      released('job-2', 'b1', 2000),
    );
    expect([...model.jobs.keys()]).toEqual(['job-2']);
    evolve(model, { ...removed('job-1', [{ sha256: sha('a1'), size: 10 }]), metadata: { correlationId: 'corr', team: 'team-a' } });
    expect(model.jobs.size).toBe(0);
  });

  // Random histories of a few jobs of two teams sharing blobs, datasets renamed, keeps, folders,
  // retries, requeues and releases before the attempt's end, with storage's release plans and
  // sweeps applied as it applies them: a model that forgets superseded jobs plans exactly as one
  // that keeps every job, at every step.
  const POOL = [
    { sha256: sha('a1'), kind: 'file' as const },
    { sha256: sha('b2'), kind: 'file' as const },
    { sha256: sha('c3'), kind: 'file' as const },
    { sha256: sha('f6'), kind: 'folder' as const },
    { sha256: sha('f7'), kind: 'folder' as const },
    // The bytes of a folder's manifest named as a file input.
    { sha256: sha('f6'), kind: 'file' as const },
  ];
  const files: FilesOf = (_team, manifest) =>
    manifest === sha('f6') ? [{ sha256: sha('a1'), size: 10 }, { sha256: sha('d4'), size: 10 }] : manifest === sha('f7') ? [{ sha256: sha('d4'), size: 10 }] : [];
  const inputArb = fc.record({ blob: fc.integer({ min: 0, max: POOL.length - 1 }), keepMs: fc.constantFrom(0, 0, 500, 3000), dataset: fc.constantFrom(undefined, undefined, 'corpus', 'weights') });
  const jobArb = fc.record({
    team: fc.constantFrom('team-a', 'team-b'),
    inputs: fc.uniqueArray(inputArb, { minLength: 1, maxLength: 3, selector: (i) => POOL[i.blob]!.sha256 }),
    end: fc.constantFrom('runs', 'runs', 'runs', 'rejected', 'withdrawn', 'staging_failed'),
    again: fc.array(fc.constantFrom('node_lost', 'retry', 'released_first'), { maxLength: 2 }),
    last: fc.constantFrom('completed', 'failed', 'cancelled'),
  });
  type JobSketch = typeof jobArb extends fc.Arbitrary<infer T> ? T : never;
  const seen = { superseded: 0, plansWithRemovals: 0 };

  /** The job's events in order, each made at the time it is folded. */
  function steps(j: JobSketch, jobId: string): ((ms: number) => RefEvent)[] {
    const inputs = j.inputs.map((i, n) => ({ name: `in-${n}`, ...POOL[i.blob]!, keepMs: i.keepMs, ...(i.dataset ? { dataset: i.dataset } : {}) }));
    const out: ((ms: number) => RefEvent)[] = [(ms) => ev('JobSubmitted', submitted(jobId, inputs, j.team, ms))];
    const end = (ms: number) => ended(jobId, ms, j.team);
    if (j.end === 'rejected') return [...out, (ms) => ev('JobRejected', { jobId, rejectedAt: at(ms) }), end];
    if (j.end === 'withdrawn') return [...out, (ms) => ev('JobWithdrawn', { jobId, withdrawnAt: at(ms) }), end];
    if (j.end === 'staging_failed') return [...out, (ms) => ev('StagingFailed', { jobId, failedAt: at(ms) }), end];
    j.again.forEach((how, n) => {
      const attempt = `a${n + 1}`;
      const requeue = (ms: number) => ev('JobRequeued', { jobId, previousAttemptId: attempt, reason: how === 'retry' ? 'retry' : 'node_lost', nextAttempt: n + 2, requeuedAt: at(ms) });
      if (how === 'released_first') out.push((ms) => released(jobId, attempt, ms), (ms) => finished(jobId, attempt, 'node_lost', ms), requeue);
      else out.push((ms) => finished(jobId, attempt, how === 'retry' ? 'failed' : 'node_lost', ms), (ms) => released(jobId, attempt, ms), requeue);
    });
    const attempt = `a${j.again.length + 1}`;
    return [...out, (ms) => finished(jobId, attempt, j.last, ms), (ms) => released(jobId, attempt, ms), end];
  }

  it('plans exactly as a model that keeps every job, through random histories', () => {
    fc.assert(
      fc.property(fc.array(jobArb, { minLength: 1, maxLength: 10 }), fc.array(fc.nat(), { maxLength: 150 }), fc.array(fc.boolean(), { maxLength: 150 }), (jobs, order, sweeps) => {
        const queues = jobs.map((j, n) => steps(j, `job-${n}`));
        const picks = [...order.map((k) => k % jobs.length), ...queues.flatMap((q, n) => q.map(() => n))];
        const forgets = initialDataRefs();
        const keeps = initialDataRefs();
        const none = retainedIn([]);
        let ms = 0;
        const both = (e: RefEvent) => {
          evolve(forgets, e);
          evolve(keeps, e, { supersede: false });
        };
        /** Plans on both, requires them equal, and records the removals on both, as storage does. */
        const plan = (only?: string) => {
          // Teams come in the order their first final job entered the model; within a team, removals in order.
          const byTeam = (rs: Removal[]) => [...rs].sort((a, b) => (a.team < b.team ? -1 : a.team > b.team ? 1 : 0));
          const planned = planRemovals(forgets, T0 + ms, files, none, only);
          expect(byTeam(planned)).toEqual(byTeam(planRemovals(keeps, T0 + ms, files, none, only)));
          if (planned.length > 0) seen.plansWithRemovals++;
          for (const r of planned) {
            both({ eventId: `evt-${++seq}`, type: 'DataRemoved', data: { jobId: r.jobId, scope: 'inputs', blobs: r.blobs, reason: r.reason, removedAt: at(ms) }, metadata: { correlationId: 'corr', team: r.team } });
          }
        };
        picks.forEach((n, k) => {
          const next = queues[n]!.shift();
          if (!next) return;
          ms += 100;
          const e = next(ms);
          both(e);
          if (e.type === 'ComputeReleased') plan((e.data as { jobId: string }).jobId);
          if (sweeps[k]) plan();
          expect(forgets.jobs.size).toBeLessThanOrEqual(keeps.jobs.size);
          if (forgets.jobs.size < keeps.jobs.size) seen.superseded++;
        });
        ms += 10 * HOUR;
        plan();
        // What is left of a job in the forgetting model is what the keeping model has of it.
        for (const [id, job] of forgets.jobs) expect(job).toEqual(keeps.jobs.get(id));
      }),
      { numRuns: 400 },
    );
    // The histories reach what the property is about.
    expect(seen.superseded).toBeGreaterThan(100);
    expect(seen.plansWithRemovals).toBeGreaterThan(100);
    // Bounded work (400 histories, about 1.3 s idle): the time limit only catches a hang, on a busy machine too.
  }, 60_000);
});
