import { describe, expect, it } from '@jest/globals';
import { judgeNodeAttempt, manifestsToExpand, unreferenced, type NodeAttemptFacts } from './node-data.js';

const sha = (c: string) => c.repeat(64);
const facts = (over: Partial<NodeAttemptFacts> = {}): NodeAttemptFacts => ({
  team: 'team-a',
  inputs: [
    { kind: 'file', sha256: sha('a') },
    { kind: 'folder', sha256: sha('b') },
  ],
  placedOn: ['node-1'],
  released: false,
  checkpoints: [sha('c')],
  ...over,
});

describe('judgeNodeAttempt', () => {
  it('admits the node the attempt is placed on, with the job\'s team', () => {
    expect(judgeNodeAttempt('node-1', 'job-1', 'job-1-a1', facts())).toEqual({ ok: true, team: 'team-a' });
  });

  it('admits every node of a gang', () => {
    expect(judgeNodeAttempt('node-2', 'job-1', 'job-1-a1', facts({ placedOn: ['node-1', 'node-2'] }))).toMatchObject({ ok: true });
  });

  it('refuses a job never submitted, an attempt of another node or never placed, a released attempt', () => {
    expect(judgeNodeAttempt('node-1', 'job-1', 'a', facts({ team: undefined }))).toMatchObject({ ok: false, reason: 'unknown_job' });
    expect(judgeNodeAttempt('node-2', 'job-1', 'a', facts())).toMatchObject({ ok: false, reason: 'not_placed', message: expect.stringContaining('node-2') });
    expect(judgeNodeAttempt('node-1', 'job-1', 'a', facts({ placedOn: [] }))).toMatchObject({ ok: false, reason: 'not_placed' });
    expect(judgeNodeAttempt('node-1', 'job-1', 'a', facts({ released: true }))).toMatchObject({ ok: false, reason: 'released' });
  });
});

describe('what a node may ask for', () => {
  it('reads no manifest when every blob asked for is a top-level address (inputs, checkpoints)', () => {
    expect(manifestsToExpand(facts(), [sha('a'), sha('b'), sha('c')])).toEqual([]);
    expect(unreferenced(facts(), [sha('a'), sha('b'), sha('c')], new Map())).toEqual([]);
  });

  it('expands the folder inputs and checkpoints for a file of theirs, and admits exactly their files', () => {
    expect(manifestsToExpand(facts(), [sha('d')])).toEqual([sha('b'), sha('c')]);
    const files = new Map([
      [sha('b'), [sha('d')]],
      [sha('c'), [sha('e')]],
    ]);
    expect(unreferenced(facts(), [sha('d'), sha('e')], files)).toEqual([]);
    expect(unreferenced(facts(), [sha('d'), sha('f')], files)).toEqual([sha('f')]);
  });

  it('refuses any other blob, e.g. another job\'s input of the same team', () => {
    expect(unreferenced(facts({ checkpoints: [] }), [sha('a'), sha('9')], new Map())).toEqual([sha('9')]);
  });
});
