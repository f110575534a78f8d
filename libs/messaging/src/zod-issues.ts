import { formatIssues } from '#contracts';
import type { FieldIssue } from '#errors';
import type { z } from 'zod';

/**
 * zod issues as gpunet field issues, the contracts' way ({@link formatIssues}): the path as people
 * write it (`request.gpus`, `data.inputs[0].path`, `''` for the whole input) and the fix the
 * schema authored split out of the message — so a NATS caller reads the same issues as an HTTP one.
 */
export function toFieldIssues(error: z.ZodError, pathPrefix = ''): FieldIssue[] {
  return formatIssues(error).map((issue) => ({ ...issue, path: joinPath(pathPrefix, issue.path) }));
}

function joinPath(prefix: string, path: string): string {
  if (prefix === '') return path;
  if (path === '') return prefix;
  return path.startsWith('[') ? `${prefix}${path}` : `${prefix}.${path}`;
}

/** `a.b: message; c: message` for error messages and logs. */
export function describeIssues(issues: readonly FieldIssue[]): string {
  return issues.map((i) => `${i.path || '(whole input)'}: ${i.message}`).join('; ');
}
