import { HEADERS } from '#contracts';
import { ValidationError } from '#errors';
import { parseDeadlinePolicy, type DeadlinePolicy } from '../domain/deadline-check.js';

/** The `Gpunet-Deadline-Policy` header of a submit (HTTP or NATS); absent: `reject`. A ValidationError naming the header otherwise. */
export function deadlinePolicyHeader(value: string | undefined): DeadlinePolicy {
  const policy = parseDeadlinePolicy(value);
  if (policy) return policy;
  throw new ValidationError(`invalid ${HEADERS.deadlinePolicy} header`, [
    { path: HEADERS.deadlinePolicy, message: `must be \`reject\` or \`warn\`, got ${JSON.stringify(value)}`, fix: 'send `warn` to accept a deadline the plan cannot meet, or leave the header out' },
  ]);
}
