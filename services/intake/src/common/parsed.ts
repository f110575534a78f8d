import { formatIssues } from '#contracts';
import { ValidationError } from '#errors';

/**
 * `value` parsed by `schema`, or a ValidationError naming every field and its problem (`what`
 * says which message, e.g. "SetQuota"): one wording for every command intake takes.
 */
export function parsed<T>(schema: { safeParse(v: unknown): { success: true; data: T } | { success: false; error: Parameters<typeof formatIssues>[0] } }, value: unknown, what: string): T {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issues = formatIssues(result.error);
  throw new ValidationError(`invalid ${what}: ${issues.map((i) => `${i.path}: ${i.message}`).join('; ')}`, issues);
}
