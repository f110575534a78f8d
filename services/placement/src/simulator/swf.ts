/**
 * The Standard Workload Format (SWF) of the Parallel Workloads Archive: `;` header comments
 * (`; MaxProcs: 128`), then one job per line with 18 whitespace-separated numeric fields, `-1`
 * meaning unknown. Pure: text in, jobs out.
 */
import type { FieldIssue } from '#contracts';
import { ValidationError } from '#errors';

/** The 18 fields, in file order (the archive's names). */
export const SWF_FIELDS = [
  'jobNumber',
  'submitTime',
  'waitTime',
  'runTime',
  'allocatedProcessors',
  'averageCpuTime',
  'usedMemory',
  'requestedProcessors',
  'requestedTime',
  'requestedMemory',
  'status',
  'userId',
  'groupId',
  'executable',
  'queue',
  'partition',
  'precedingJob',
  'thinkTime',
] as const;

export type SwfField = (typeof SWF_FIELDS)[number];

/** One job line: every field as a number (seconds for times), `-1` where the trace does not know. */
export type SwfJob = Record<SwfField, number> & {
  /** 1-based line of the file, for messages. */
  line: number;
};

/** A parsed trace: the header's `Key: value` comments and the jobs in file order. */
export interface SwfTrace {
  header: Record<string, string>;
  jobs: SwfJob[];
}

/** A line of the trace is not a valid SWF job line; the message names the line and the field. */
export class SwfParseError extends ValidationError {
  override readonly code = 'swf_invalid';
  constructor(
    readonly line: number,
    readonly field: SwfField | undefined,
    message: string,
    options?: { cause?: unknown },
  ) {
    const issue: FieldIssue = { path: field === undefined ? `line ${line}` : `line ${line}: ${field}`, message };
    super(`SWF line ${line}${field === undefined ? '' : `, field ${SWF_FIELDS.indexOf(field) + 1} (${field})`}: ${message}`, [issue], options);
  }
}

const NUMBER = /^-?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?$/;

/** Parses SWF text. Throws {@link SwfParseError} at the first bad line. */
export function parseSwf(text: string): SwfTrace {
  const header: Record<string, string> = {};
  const jobs: SwfJob[] = [];
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const lineNo = i + 1;
    const raw = lines[i]!.trim();
    if (raw === '') continue;
    if (raw.startsWith(';')) {
      const m = /^;\s*([A-Za-z][\w ]*?)\s*:\s*(.*)$/.exec(raw);
      if (m) header[m[1]!] = m[2]!.trim();
      continue;
    }
    const parts = raw.split(/\s+/);
    if (parts.length !== SWF_FIELDS.length) {
      throw new SwfParseError(lineNo, undefined, `expected ${SWF_FIELDS.length} whitespace-separated fields, found ${parts.length}`);
    }
    const job = { line: lineNo } as SwfJob;
    SWF_FIELDS.forEach((field, k) => {
      const token = parts[k]!;
      if (!NUMBER.test(token)) throw new SwfParseError(lineNo, field, `\`${token}\` is not a number`);
      job[field] = Number(token);
    });
    jobs.push(job);
  }
  return { header, jobs };
}
