/**
 * Validation problems as people read them: which field, what is wrong, how to fix it.
 *
 * Zod keeps one `message` per issue. Every message we author carries its fix after
 * {@link FIX_MARKER} (see {@link withFix}), so the text reads well on its own in a log and
 * {@link formatIssues} can still hand the fix back as a separate field.
 */
import { z } from 'zod';

/**
 * One problem with an input. Structurally identical to `FieldIssue` in `libs/errors`
 * (contracts import nothing of ours, so the type is repeated here, not shared).
 */
export interface FieldIssue {
  /** Dotted path of the field, e.g. `request.gpus` or `data.inputs[0].sha256`; `''` for the whole input. */
  path: string;
  message: string;
  /** What to do about it. */
  fix?: string;
}

/** Schema of {@link FieldIssue}, for replies and events that carry issues. */
export const FieldIssue = z
  .object({
    path: z.string().describe('Dotted path of the field, e.g. `request.gpus`; empty for the whole input.'),
    message: z.string().describe('What is wrong.'),
    fix: z.string().optional().describe('What to do about it.'),
  })
  .describe('One problem with an input: where, what, and how to fix it.');

/** Separates the problem from its fix inside an authored zod message. */
export const FIX_MARKER = '. Fix: ';

/** An error message made of a problem and its fix, e.g. `withFix('gpus must be ≥ 1', 'write e.g. `gpus: 2`')`. */
export function withFix(problem: string, fix: string): string {
  return `${problem}${FIX_MARKER}${fix}`;
}

/** Splits an authored message back into problem and fix; messages without a fix come back whole. */
export function splitFix(text: string): { message: string; fix?: string } {
  const at = text.indexOf(FIX_MARKER);
  return at < 0 ? { message: text } : { message: text.slice(0, at), fix: text.slice(at + FIX_MARKER.length) };
}

/** The part of a raw zod issue an error function looks at. */
interface RawIssueLike {
  readonly code?: string;
  readonly input?: unknown;
}

/**
 * A zod `error` function for one field: `field` names it as the user writes it, `rule` says
 * what it must be (`must be a whole number ≥ 1`), `fix` shows how (`write e.g. \`gpus: 2\``).
 * A missing value gets "is missing" instead of a type complaint.
 */
export function fieldError(field: string, rule: string, fix: string): (issue: RawIssueLike) => string {
  return (issue) =>
    issue.code === 'invalid_type' && issue.input === undefined
      ? withFix(`${field} is missing; it ${rule}`, fix)
      : withFix(`${field} ${rule}`, fix);
}

/**
 * A strict object for user-supplied input: unknown fields are refused (a typo such as `gpu:`
 * must not be silently dropped) and the message names the nearest known field.
 * `what` names the object in messages, e.g. `request` or `each input`.
 */
export function strictObject<S extends z.core.$ZodLooseShape>(shape: S, what: string) {
  const known = Object.keys(shape);
  return z.strictObject(shape, {
    error: (issue) => {
      if (issue.code === 'unrecognized_keys') return unknownFieldsMessage(what, issue.keys, known);
      if (issue.code === 'invalid_type') {
        const problem = issue.input === undefined ? `${what} is missing` : `${what} must be a mapping of fields`;
        return withFix(problem, `write it as a mapping with fields ${quoteList(known)}`);
      }
      return undefined;
    },
  });
}

function unknownFieldsMessage(what: string, keys: readonly string[], known: readonly string[]): string {
  const problem = `${what} has unknown field${keys.length > 1 ? 's' : ''} ${quoteList(keys)}`;
  const guesses = keys.flatMap((key) => {
    const guess = nearest(key, known);
    return guess === undefined ? [] : [`\`${key}\` → \`${guess}\``];
  });
  const knownList = `known fields: ${quoteList(known)}`;
  if (keys.length === 1 && guesses.length === 1) return withFix(problem, `did you mean \`${nearest(keys[0]!, known)}\`? ${capitalize(knownList)}`);
  if (guesses.length > 0) {
    const rest = guesses.length < keys.length ? ' and remove the rest' : '';
    return withFix(problem, `rename ${guesses.join(', ')}${rest}; ${knownList}`);
  }
  return withFix(problem, `remove ${keys.length > 1 ? 'them' : 'it'}; ${knownList}`);
}

function capitalize(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

function quoteList(names: readonly string[]): string {
  return names.map((n) => `\`${n}\``).join(', ');
}

/** The known name within edit distance 2 (or a case-insensitive match), if any. */
function nearest(word: string, candidates: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = 3;
  for (const candidate of candidates) {
    const d = candidate.toLowerCase() === word.toLowerCase() ? 0 : editDistance(word, candidate);
    if (d < bestDistance) {
      best = candidate;
      bestDistance = d;
    }
  }
  return best;
}

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = current;
  }
  return previous[b.length]!;
}

/** Renders a zod path as `request.gpus`, `data.inputs[0].sha256`, `work.env["odd.key"]`. */
export function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const segment of path) {
    if (typeof segment === 'number') out += `[${segment}]`;
    else if (typeof segment === 'string' && /^[A-Za-z_$][\w$]*$/.test(segment)) out += out === '' ? segment : `.${segment}`;
    else out += `[${JSON.stringify(String(segment))}]`;
  }
  return out;
}

/**
 * Turns a zod error into field issues: one per bad field (an unknown-fields issue yields one per
 * unknown field), each with the fix when the schema authored one. Matches `FieldIssue` in
 * `libs/errors`, so the result goes straight into a `ValidationError`.
 */
export function formatIssues(error: { readonly issues: readonly z.core.$ZodIssue[] }): FieldIssue[] {
  // A value can fail two checks that share one message (a pattern and a range); say it once.
  const seen = new Set<string>();
  return error.issues
    .flatMap((issue) => fromIssue(issue, []))
    .filter((issue) => {
      const key = `${issue.path}\u0000${issue.message}`;
      if (seen.has(key)) return false;
      seen.add(key);
      return true;
    });
}

function fromIssue(issue: z.core.$ZodIssue, prefix: readonly PropertyKey[]): FieldIssue[] {
  const path = [...prefix, ...issue.path];
  switch (issue.code) {
    case 'unrecognized_keys':
      return issue.keys.map((key) => toFieldIssue([...path, key], issue.message, `remove \`${key}\``));
    case 'invalid_key':
    case 'invalid_element': {
      // The record key (or element) is already the last path segment; the inner issue says why.
      const inner = issue.issues.flatMap((i) => fromIssue({ ...i, path: [] }, path));
      return inner.length > 0 ? inner : [toFieldIssue(path, issue.message)];
    }
    case 'invalid_type':
      // Finalized issues drop `input`; zod's default text is the only sign of a missing field.
      return [toFieldIssue(path, issue.message, issue.message.endsWith('received undefined') ? `add \`${formatPath(path)}\`` : undefined)];
    default:
      return [toFieldIssue(path, issue.message)];
  }
}

function toFieldIssue(path: readonly PropertyKey[], text: string, fallbackFix?: string): FieldIssue {
  const { message, fix } = splitFix(text);
  const chosen = fix ?? fallbackFix;
  return chosen === undefined ? { path: formatPath(path), message } : { path: formatPath(path), message, fix: chosen };
}
