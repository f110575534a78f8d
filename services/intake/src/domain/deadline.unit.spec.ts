import { describe, expect, it } from '@jest/globals';
import { resolveDeadline, zonedToEpoch, type DeadlineResolution } from './deadline.js';

const BERLIN = 'Europe/Berlin';

function at(text: string, now: string, timeZone?: string): string {
  const r: DeadlineResolution = resolveDeadline(text, { now: new Date(now), timeZone });
  if (!r.ok) throw new Error(`${text}: ${r.issue.message}`);
  return r.at.toISOString();
}

describe('resolveDeadline', () => {
  it('takes an ISO time with offset as written, and a local ISO time in the team zone', () => {
    const now = '2026-06-01T12:00:00Z';
    expect(at('2026-06-02T02:00:00+02:00', now, BERLIN)).toBe('2026-06-02T00:00:00.000Z');
    expect(at('2026-06-02T18:00:00Z', now)).toBe('2026-06-02T18:00:00.000Z');
    expect(at('2026-06-02 18:00', now, BERLIN)).toBe('2026-06-02T16:00:00.000Z');
    expect(at('2026-06-02T18:00', now)).toBe('2026-06-02T18:00:00.000Z');
  });

  it('counts `+<duration>` and `in <duration>` from now', () => {
    const now = '2026-06-01T12:00:00Z';
    expect(at('+6h', now)).toBe('2026-06-01T18:00:00.000Z');
    expect(at('in 6h', now)).toBe('2026-06-01T18:00:00.000Z');
    expect(at('In 90m', now)).toBe('2026-06-01T13:30:00.000Z');
    expect(at('in 1h 30m', now)).toBe('2026-06-01T13:30:00.000Z');
  });

  it('given a Berlin team the evening before summer time ends (Sat 24 Oct 2026, 22:00 CEST)', () => {
    const now = '2026-10-24T20:00:00Z';
    // tonight: still summer time (+02:00)
    expect(at('tonight', now, BERLIN)).toBe('2026-10-24T21:59:00.000Z');
    expect(at('by end of day', now, BERLIN)).toBe('2026-10-24T21:59:00.000Z');
    // tomorrow 09:00 is after the change: winter time (+01:00)
    expect(at('tomorrow 09:00', now, BERLIN)).toBe('2026-10-25T08:00:00.000Z');
    expect(at('tomorrow', now, BERLIN)).toBe('2026-10-25T22:59:00.000Z');
    // 02:30 happens twice that night: the earlier one (still +02:00)
    expect(at('tomorrow 02:30', now, BERLIN)).toBe('2026-10-25T00:30:00.000Z');
    // a duration is elapsed time, whatever the wall clock does
    expect(at('in 6h', now, BERLIN)).toBe('2026-10-25T02:00:00.000Z');
    // end of week: Friday 30 Oct 23:59 CET
    expect(at('by end of week', now, BERLIN)).toBe('2026-10-30T22:59:00.000Z');
  });

  it('moves a local time inside the spring-forward gap forward by the gap', () => {
    // 29 Mar 2026, 01:00 CET; 02:00–03:00 does not exist in Berlin that night.
    expect(at('today 02:30', '2026-03-29T00:00:00Z', BERLIN)).toBe('2026-03-29T01:30:00.000Z');
    expect(zonedToEpoch({ y: 2026, m: 3, d: 29 }, 3, 30, BERLIN)).toBe(Date.parse('2026-03-29T01:30:00Z'));
  });

  it('tonight after 23:59 local is the next night; end of week on a Friday night or weekend is the next Friday', () => {
    expect(at('tonight', '2026-06-01T23:59:30Z')).toBe('2026-06-02T23:59:00.000Z');
    // Friday 5 Jun 2026, 10:00 UTC → today; Saturday → next Friday
    expect(at('end of week', '2026-06-05T10:00:00Z')).toBe('2026-06-05T23:59:00.000Z');
    expect(at('eow', '2026-06-06T10:00:00Z')).toBe('2026-06-12T23:59:00.000Z');
    expect(at('end of week', '2026-06-05T23:59:30Z')).toBe('2026-06-12T23:59:00.000Z');
  });

  it('resolves phrases in the team zone, UTC by default', () => {
    // 03:00 UTC on 2 Jun is still 1 Jun 23:00 in New York: tonight is 1 Jun 23:59 EDT.
    expect(at('tonight', '2026-06-02T03:00:00Z', 'America/New_York')).toBe('2026-06-02T03:59:00.000Z');
    expect(at('tonight', '2026-06-02T03:00:00Z')).toBe('2026-06-02T23:59:00.000Z');
  });

  it('refuses a deadline that has passed, naming request.deadline and the accepted forms', () => {
    const r = resolveDeadline('today 08:00', { now: new Date('2026-06-01T10:00:00Z') });
    expect(r).toMatchObject({ ok: false, issue: { path: 'request.deadline', message: 'has already passed (2026-06-01T08:00:00.000Z)' } });
    expect(resolveDeadline('2026-05-01T00:00:00Z', { now: new Date('2026-06-01T10:00:00Z') }).ok).toBe(false);
    expect(resolveDeadline('+0s', { now: new Date('2026-06-01T10:00:00Z') }).ok).toBe(false);
  });

  it('refuses what it cannot read, listing every form', () => {
    const now = { now: new Date('2026-06-01T10:00:00Z') };
    for (const text of ['next tuesday', 'tomorrow 25:00', '2026-02-30 10:00', 'in soon', '']) {
      const r = resolveDeadline(text, now);
      expect(r.ok).toBe(false);
      if (!r.ok) {
        expect(r.issue.path).toBe('request.deadline');
        expect(r.issue.fix).toContain('tomorrow 09:00');
        expect(r.issue.fix).toContain('end of week');
      }
    }
  });
});
