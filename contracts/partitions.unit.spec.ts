import { eventPartition, eventSubject, parseEventSubject, partitionedEventSubject, partitionEventSubjects } from './subjects.js';

/** Whether a NATS subject matches a filter with `*` tokens (what nats-server does for one filter). */
const matches = (filter: string, subject: string) => {
  const f = filter.split('.');
  const s = subject.split('.');
  return f.length === s.length && f.every((t, i) => t === '*' || t === s[i]);
};

describe('event partitions (decision 0030)', () => {
  it('hashes the job id with FNV-1a, so every process computes the same partition', () => {
    // The published FNV-1a 32 test vectors ("a" → 0xe40c292c, "foobar" → 0xbf9cf968): the function is FNV-1a, not a look-alike.
    expect(eventPartition('a', 2 ** 31)).toBe(0xe40c292c % 2 ** 31);
    expect(eventPartition('foobar', 2 ** 31)).toBe(0xbf9cf968 % 2 ** 31);
    expect(eventPartition('a', 7)).toBe(0xe40c292c % 7);
    expect(eventPartition('job_01jz8k4m2n', 1)).toBe(0);
    expect(eventPartition(undefined, 4)).toBe(0);
    expect(() => eventPartition('job_1', 0)).toThrow(/partitions must be a whole number/);
  });

  it('leaves subjects as they are with one partition', () => {
    expect(partitionedEventSubject('JobFinished', { team: 'team-ml', jobId: 'job_1' }, 1)).toBe(eventSubject('JobFinished', { team: 'team-ml', jobId: 'job_1' }));
  });

  it('puts every event of a job on its partition\'s filter and on no other', () => {
    const n = 4;
    const seen = new Set<number>();
    for (let i = 0; i < 400; i++) {
      const jobId = `job_${i.toString(36)}`;
      const p = eventPartition(jobId, n);
      seen.add(p);
      for (const type of ['JobSubmitted', 'ComputeHeld', 'JobFinished', 'JobEnded']) {
        const subject = partitionedEventSubject(type, { team: `team-${i % 3}`, jobId }, n);
        expect(parseEventSubject(subject)).toEqual({ type, team: `team-${i % 3}`, jobId, partition: p });
        for (let q = 0; q < n; q++) expect(matches(partitionEventSubjects(q), subject)).toBe(q === p);
      }
    }
    expect(seen.size).toBe(n);
    expect(partitionedEventSubject('PriceListPublished', {}, n)).toBe('gpunet.evt.PriceListPublished._._.0');
  });
});
