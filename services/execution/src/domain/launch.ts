/**
 * From a job's `work` to the command line the run engine starts. Pure: the caller reads the
 * script's first line and writes inline scripts to disk.
 */
import type { Work } from '#contracts';
import { posix } from 'node:path';

/** What to start: a bare program name (looked up on the run's PATH) or a path inside the run. */
export interface Launch {
  readonly command: string;
  readonly args: readonly string[];
  readonly env: Readonly<Record<string, string>>;
}

/** Where the script of a job is, once staged or written. */
export interface ScriptLocation {
  /** Absolute path of the script file: under the run's `inputs/` for `script.path`, or the inline script the agent wrote. */
  readonly file: string;
  /** The script's first line (without its newline), to honour a `#!` line; empty when it has none. */
  readonly firstLine: string;
}

/** The work cannot run on this agent. The message is for the job's record. */
export class UnsupportedWorkError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UnsupportedWorkError';
  }
}

/**
 * The interpreter named by a `#!` line, as a program looked up on the run's PATH:
 * `#!/bin/bash -e` → `bash -e`, `#!/usr/bin/env python3` → `python3`. Only the program's base
 * name is kept because the run engine starts nothing by an absolute path outside the run (the
 * run's PATH decides which `bash` that is). `undefined` when the line is not a `#!` line.
 */
export function shebangInterpreter(firstLine: string): { command: string; args: string[] } | undefined {
  if (!firstLine.startsWith('#!')) return undefined;
  const words = firstLine.slice(2).trim().split(/\s+/).filter((w) => w !== '');
  if (words.length === 0) return undefined;
  let [program, ...args] = words;
  if (posix.basename(program) === 'env') {
    // `env -S "python3 -u"` and `env VAR=x prog` are beyond this; take the first plain word.
    const rest = args.filter((a) => !a.startsWith('-') && !a.includes('='));
    if (rest.length === 0) return undefined;
    program = rest[0];
    args = args.slice(args.indexOf(program) + 1);
  }
  return { command: posix.basename(program), args };
}

/**
 * The command line of a script job: `interpreter script args…`, where the interpreter is the
 * spec's `interpreter`, else the script's `#!` line, else `sh`. The script is passed as an
 * argument rather than executed, so it needs no execute bit (staged inputs are read-only blobs).
 *
 * @throws UnsupportedWorkError for container work (this agent has no container runtime yet).
 */
export function planLaunch(work: Work, script: ScriptLocation): Launch {
  if (work.kind !== 'script') {
    throw new UnsupportedWorkError(`container work (${work.image}) is not supported by this agent: it runs scripts only`);
  }
  const fromShebang = shebangInterpreter(script.firstLine);
  const interpreter = work.interpreter !== undefined ? { command: work.interpreter, args: [] } : (fromShebang ?? { command: 'sh', args: [] });
  return { command: interpreter.command, args: [...interpreter.args, script.file, ...work.args], env: { ...work.env } };
}
