import type { FieldIssue } from '#errors';
import type { z } from 'zod';

/** zod issues as gpunet field issues: dotted path (`request.gpus`, `''` for the whole input), message. */
export function toFieldIssues(error: z.ZodError, pathPrefix = ''): FieldIssue[] {
  return error.issues.map((issue) => {
    const path = [pathPrefix, ...issue.path.map(String)].filter((p) => p !== '').join('.');
    return { path, message: issue.message };
  });
}

/** `a.b: message; c: message` for error messages and logs. */
export function describeIssues(issues: readonly FieldIssue[]): string {
  return issues.map((i) => `${i.path || '(whole input)'}: ${i.message}`).join('; ');
}
