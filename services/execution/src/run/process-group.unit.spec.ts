import { parseProcStat } from './process-group.js';

describe('parseProcStat', () => {
  it('reads state, parent and group after the command name', () => {
    expect(parseProcStat('4242 (bash) S 4200 4242 4242 0 -1 4194560 ...')).toEqual({ state: 'S', ppid: 4200, pgrp: 4242 });
  });

  it('survives command names with spaces and parentheses', () => {
    expect(parseProcStat('77 (my (odd) prog) Z 1 70 70 0')).toEqual({ state: 'Z', ppid: 1, pgrp: 70 });
  });

  it('returns null for garbage', () => {
    expect(parseProcStat('')).toBeNull();
    expect(parseProcStat('12 (x)')).toBeNull();
  });
});
