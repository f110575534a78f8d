/**
 * Where a command's output goes: results to stdout (text for people, or exactly one JSON
 * document with `--json`), notices and progress to stderr, so `gpunet … --json | jq` works
 * while bars still show on the terminal.
 */
import type { FieldIssue } from '#contracts';
import { GpunetError } from '#errors';
import { GpunetApiError } from '#sdk';
import { LocalNetworkError } from './errors.js';
import { exitCodeForError } from './exit-codes.js';
import { flagForField } from './spec-from-flags.js';

/** The streams and environment a command runs with (process ones in `main`, others in tests). */
export interface Io {
  stdout: NodeJS.WritableStream & { isTTY?: boolean };
  stderr: NodeJS.WritableStream & { isTTY?: boolean };
  env: Readonly<Record<string, string | undefined>>;
  cwd: string;
}

export class Printer {
  constructor(
    private readonly io: Io,
    /** `--json`: stdout carries one JSON document and nothing else. */
    readonly json: boolean,
  ) {}

  /** True when stderr is a terminal: progress bars and spinners are drawn only then. */
  get interactive(): boolean {
    return this.io.stderr.isTTY === true;
  }

  get stderr(): NodeJS.WritableStream {
    return this.io.stderr;
  }

  /** A result line for people (ignored with `--json`). */
  line(text = ''): void {
    if (!this.json) this.io.stdout.write(`${text}\n`);
  }

  /** The one JSON document of `--json` (ignored without it). */
  doc(value: unknown): void {
    if (this.json) this.io.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
  }

  /** A notice on stderr (progress summaries, hints); shown with `--json` too. */
  note(text: string): void {
    this.io.stderr.write(`${text}\n`);
  }

  /** Prints an error: the message, each field issue with its fix; as `{ error }` with `--json`. */
  error(err: unknown, options: { flagHints?: boolean } = {}): void {
    const e = describe(err);
    if (this.json) {
      this.io.stdout.write(`${JSON.stringify({ error: { ...e, exitCode: exitCodeForError(err) } }, null, 2)}\n`);
      return;
    }
    const lines = [`error: ${e.message}${e.code && e.code !== 'internal' ? ` (${e.code})` : ''}`];
    for (const issue of e.issues) {
      const flag = options.flagHints ? flagForField(issue.path) : undefined;
      const where = issue.path ? `${issue.path}${flag && flag !== issue.path ? ` (${flag})` : ''}: ` : '';
      lines.push(`  ${where}${issue.message}`);
      if (issue.fix) lines.push(`    fix: ${issue.fix}`);
    }
    for (const log of e.logs) lines.push(`  see ${log}`);
    this.io.stderr.write(`${lines.join('\n')}\n`);
  }
}

interface Described {
  code: string;
  message: string;
  status?: number;
  issues: FieldIssue[];
  logs: string[];
}

function describe(err: unknown): Described {
  const issues = ((err as { issues?: unknown })?.issues as FieldIssue[] | undefined) ?? [];
  const logs = err instanceof LocalNetworkError ? [...err.logs] : [];
  if (err instanceof GpunetApiError) {
    // With issues the message is a summary of them; say it once, as the list.
    const message = issues.length > 0 && err.code === 'validation_failed' ? 'the server refused the request' : err.message;
    return { code: err.code, message, status: err.status, issues: [...issues], logs };
  }
  if (err instanceof GpunetError) {
    // Our own messages with issues are "<summary>: <the issues again>"; the list follows anyway.
    const message = issues.length > 0 ? (err.message.split(': ')[0] ?? err.message) : err.message;
    return { code: err.code, message, issues: [...issues], logs };
  }
  const code = (err as { code?: unknown })?.code;
  return { code: typeof code === 'string' ? code : 'internal', message: err instanceof Error ? err.message : String(err), issues: [...issues], logs };
}
