import { ValidationError } from '#errors';
import type { EventData } from '#contracts';
import { JobViews } from './job-views.js';
import type { JobEvent } from './job-view.js';

const spec: EventData<'JobSubmitted'>['spec'] = {
  work: { kind: 'script', script: { inline: 'true' }, args: [], env: {} },
  data: { inputs: [] },
  request: { gpus: 1, timeLimitMs: 60_000, network: false },
  outputs: { globs: ['**'] },
};

let position = 0n;
function event(type: string, jobId: string, data: Record<string, unknown>): JobEvent {
  position += 1n;
  return { type, position, data: { jobId, ...data }, metadata: { occurredAt: '2025-06-01T00:00:00.000Z', jobId } };
}
const submit = (jobId: string, team = 'team-a') => event('JobSubmitted', jobId, { team, spec, submittedAt: '2025-06-01T00:00:00.000Z' });
const stage = (jobId: string) => event('InputsStaged', jobId, { inputs: [], totalBytes: 0, stagedAt: '2025-06-01T00:00:01.000Z' });

describe('JobViews (all jobs in memory)', () => {
  let views: JobViews;
  beforeEach(() => {
    position = 0n;
    views = new JobViews();
  });

  it('given events of several jobs: each job has its view and the position is the last applied', () => {
    for (const e of [submit('j1'), submit('j2'), stage('j1')]) views.apply(e);
    expect(views.get('j1')?.state).toBe('staged');
    expect(views.get('j2')?.state).toBe('submitted');
    expect(views.get('nope')).toBeUndefined();
    expect(views.position).toBe(3n);
    expect(views.size).toBe(2);
  });

  it('ignores replays: an event at or before the position changes nothing', () => {
    const s = submit('j1');
    const st = stage('j1');
    views.apply(s);
    views.apply(st);
    expect(views.apply(st)).toBeUndefined();
    expect(views.apply(s)).toBeUndefined();
    expect(views.get('j1')?.timeline).toHaveLength(2);
  });

  it('lists a team\'s jobs newest first, never another team\'s', () => {
    for (const e of [submit('j1'), submit('x1', 'team-b'), submit('j2'), submit('j3')]) views.apply(e);
    expect(views.list('team-a', { limit: 50 }).jobs.map((j) => j.jobId)).toEqual(['j3', 'j2', 'j1']);
    expect(views.list('team-b', { limit: 50 }).jobs.map((j) => j.jobId)).toEqual(['x1']);
    expect(views.list('team-c', { limit: 50 })).toEqual({ jobs: [], nextCursor: null, countsByState: [] });
  });

  it('lists every team\'s jobs with the count per team of every filter but team and state, and one team\'s within it', () => {
    for (const e of [submit('j1'), submit('x1', 'team-b'), submit('j2'), stage('j1'), submit('y1', 'team-c')]) views.apply(e);
    const all = views.listAllTeams({ limit: 2 });
    expect(all.jobs.map((j) => j.jobId)).toEqual(['y1', 'j2']);
    expect(all.nextCursor).not.toBeNull();
    expect(all.countsByTeam).toEqual([{ team: 'team-a', count: 2 }, { team: 'team-b', count: 1 }, { team: 'team-c', count: 1 }]);
    const a = views.listAllTeams({ limit: 50, team: 'team-a', states: ['staged'] });
    expect(a.jobs.map((j) => j.jobId)).toEqual(['j1']);
    // Group-by counts stay over the other groups: every team for the team counts, every state of team-a for the state counts.
    expect(a.countsByTeam).toEqual(all.countsByTeam);
    expect(a.countsByState).toEqual(expect.arrayContaining([{ state: 'staged', count: 1 }, { state: 'submitted', count: 1 }]));
    expect(views.listAllTeams({ limit: 50, team: 'team-z' })).toMatchObject({ jobs: [], countsByState: [] });
  });

  it('filters by state', () => {
    for (const e of [submit('j1'), submit('j2'), submit('j3'), stage('j1'), stage('j3')]) views.apply(e);
    expect(views.list('team-a', { limit: 50, states: ['staged'] }).jobs.map((j) => j.jobId)).toEqual(['j3', 'j1']);
    expect(views.list('team-a', { limit: 50, states: ['submitted', 'staged'] }).jobs).toHaveLength(3);
    expect(views.list('team-a', { limit: 50, states: [] }).jobs).toHaveLength(3);
  });

  it('pages with a cursor that stays put when newer jobs arrive', () => {
    for (let i = 1; i <= 5; i++) views.apply(submit(`j${i}`));
    const first = views.list('team-a', { limit: 2 });
    expect(first.jobs.map((j) => j.jobId)).toEqual(['j5', 'j4']);
    expect(first.nextCursor).not.toBeNull();
    views.apply(submit('j6'));
    const second = views.list('team-a', { limit: 2, cursor: first.nextCursor! });
    expect(second.jobs.map((j) => j.jobId)).toEqual(['j3', 'j2']);
    const last = views.list('team-a', { limit: 2, cursor: second.nextCursor! });
    expect(last).toMatchObject({ jobs: [{ jobId: 'j1' }], nextCursor: null });
  });

  it('filters by GPU model, node, outcome and submit time, and counts every matching job per state over all pages', () => {
    const at = (jobId: string, submittedAt: string, gpuModel?: string) =>
      event('JobSubmitted', jobId, { team: 'team-a', spec: { ...spec, request: { ...spec.request, ...(gpuModel ? { gpuModel } : {}) } }, submittedAt });
    views.apply(at('j1', '2025-06-01T00:00:00.000Z', 'A100'));
    views.apply(at('j2', '2025-06-02T00:00:00.000Z', 'H100'));
    views.apply(at('j3', '2025-06-03T00:00:00.000Z', 'A100'));
    views.apply(stage('j3'));
    expect(views.list('team-a', { limit: 50, gpuModel: 'A100' }).jobs.map((j) => j.jobId)).toEqual(['j3', 'j1']);
    expect(views.list('team-a', { limit: 50, submittedFrom: '2025-06-02T00:00:00.000Z' }).jobs.map((j) => j.jobId)).toEqual(['j3', 'j2']);
    expect(views.list('team-a', { limit: 50, submittedTo: '2025-06-02T00:00:00.000Z' }).jobs.map((j) => j.jobId)).toEqual(['j1']);
    expect(views.list('team-a', { limit: 50, nodeId: 'node-1' }).jobs).toEqual([]);
    expect(views.list('team-a', { limit: 50, outcome: 'failed' }).jobs).toEqual([]);
    // The counts ignore the state filter and the page: they are the group-by of the whole filtered table.
    const page = views.list('team-a', { limit: 1, states: ['submitted'] });
    expect(page.jobs.map((j) => j.jobId)).toEqual(['j2']);
    expect(page.countsByState).toEqual(expect.arrayContaining([{ state: 'submitted', count: 2 }, { state: 'staged', count: 1 }]));
    expect(page.countsByState).toHaveLength(2);
  });

  it('with no filter but states, pages and counts exactly as the walk over every job does (cursor found by search, counts kept as events apply)', () => {
    // Three teams interleaved; some jobs staged, one twice over a page boundary; pages of 3.
    for (let i = 1; i <= 40; i++) views.apply(submit(`j${i}`, ['team-a', 'team-b', 'team-a', 'team-c'][i % 4]!));
    for (const i of [2, 3, 7, 11, 19, 22, 23, 38]) views.apply(stage(`j${i}`));
    const all = { submittedFrom: '1970-01-01T00:00:00.000Z' }; // matches every job: the walk
    const byState = (r: { countsByState?: { state: string; count: number }[] | undefined }) => [...(r.countsByState ?? [])].sort((x, y) => x.state.localeCompare(y.state));
    for (const team of ['team-a', 'team-b', 'team-c', 'team-z']) {
      for (const states of [undefined, ['staged' as const], ['submitted' as const, 'staged' as const]]) {
        let cursor: string | undefined;
        let pages = 0;
        do {
          const q = { limit: 3, ...(states ? { states } : {}), ...(cursor ? { cursor } : {}) };
          const fast = views.list(team, q);
          const walked = views.list(team, { ...q, ...all });
          expect(fast.jobs).toEqual(walked.jobs);
          expect(fast.nextCursor).toEqual(walked.nextCursor);
          expect(byState(fast)).toEqual(byState(walked));
          cursor = fast.nextCursor ?? undefined;
          pages++;
        } while (cursor);
        if (team === 'team-a' && !states) expect(pages).toBe(7); // 20 jobs, 3 a page
      }
    }
    // A cursor from before newer jobs came still starts where it did.
    const first = views.list('team-b', { limit: 3 });
    views.apply(submit('j41', 'team-b'));
    expect(views.list('team-b', { limit: 3, cursor: first.nextCursor! }).jobs[0]!.jobId).toBe('j25');
  });

  it('a full last page has no next cursor', () => {
    for (let i = 1; i <= 2; i++) views.apply(submit(`j${i}`));
    expect(views.list('team-a', { limit: 2 }).nextCursor).toBeNull();
  });

  it('refuses a cursor it did not hand out, naming the field', () => {
    const err = (() => {
      try {
        views.list('team-a', { limit: 2, cursor: 'garbage' });
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(ValidationError);
    expect((err as ValidationError).issues[0]).toMatchObject({ path: 'cursor' });
  });
});
