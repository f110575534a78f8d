import { describe, expect, it } from '@jest/globals';
import type { Work } from '#contracts';
import { planLaunch, shebangInterpreter, UnsupportedWorkError } from './launch.js';

const script = (over: Partial<Extract<Work, { kind: 'script' }>> = {}): Work => ({ kind: 'script', script: { path: 'train.sh' }, args: [], env: {}, ...over });

describe('shebang lines', () => {
  it.each([
    ['#!/bin/bash', { command: 'bash', args: [] }],
    ['#!/bin/bash -eu', { command: 'bash', args: ['-eu'] }],
    ['#! /usr/bin/python3', { command: 'python3', args: [] }],
    ['#!/usr/bin/env python3', { command: 'python3', args: [] }],
    ['#!/usr/bin/env python3 -u', { command: 'python3', args: ['-u'] }],
  ])('%s', (line, expected) => {
    expect(shebangInterpreter(line)).toEqual(expected);
  });

  it.each(['', 'echo hi', '#!', '#!/usr/bin/env'])('%j is not an interpreter line', (line) => {
    expect(shebangInterpreter(line)).toBeUndefined();
  });
});

describe('planning a launch', () => {
  const at = { file: '/w/runs/j/a/inputs/train.sh', firstLine: '#!/bin/bash' };

  it('uses the spec\'s interpreter first, passing the script and the job\'s args', () => {
    expect(planLaunch(script({ interpreter: 'python3', args: ['--epochs', '3'], env: { LR: '0.1' } }), at)).toEqual({
      command: 'python3',
      args: ['/w/runs/j/a/inputs/train.sh', '--epochs', '3'],
      env: { LR: '0.1' },
    });
  });

  it('then the script\'s #! line, then sh', () => {
    expect(planLaunch(script(), at)).toMatchObject({ command: 'bash', args: [at.file] });
    expect(planLaunch(script(), { ...at, firstLine: 'echo hello' })).toMatchObject({ command: 'sh', args: [at.file] });
  });

  it('refuses container work with a message for the job\'s record', () => {
    const work: Work = { kind: 'container', image: 'ghcr.io/acme/train:1', args: [], env: {} };
    expect(() => planLaunch(work, at)).toThrow(UnsupportedWorkError);
    expect(() => planLaunch(work, at)).toThrow(/container work \(ghcr.io\/acme\/train:1\) is not supported/);
  });
});
