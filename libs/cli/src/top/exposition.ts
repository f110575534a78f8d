/**
 * Reads the Prometheus text exposition format (what every gpunet `/metrics` answers) into
 * samples. Only what `gpunet top` needs: name, labels, value; comments, HELP and TYPE lines are
 * skipped. Pure.
 */

export interface Sample {
  name: string;
  labels: Readonly<Record<string, string>>;
  value: number;
}

const LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)(\s+-?\d+)?\s*$/;

/** Samples of one exposition text; a line that is not a sample is ignored. */
export function parseExposition(text: string): Sample[] {
  const out: Sample[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const m = LINE.exec(line);
    if (!m) continue;
    const value = parseValue(m[4]!);
    if (value === undefined) continue;
    out.push({ name: m[1]!, labels: m[3] ? parseLabels(m[3]) : {}, value });
  }
  return out;
}

function parseValue(text: string): number | undefined {
  if (text === '+Inf') return Infinity;
  if (text === '-Inf') return -Infinity;
  if (text === 'NaN') return NaN;
  const n = Number(text);
  return Number.isNaN(n) ? undefined : n;
}

/** `a="x",b="y\"z"` → `{ a: 'x', b: 'y"z' }` (escapes `\\`, `\"`, `\n`). */
function parseLabels(text: string): Record<string, string> {
  const labels: Record<string, string> = {};
  let i = 0;
  while (i < text.length) {
    while (text[i] === ',' || text[i] === ' ') i++;
    const eq = text.indexOf('=', i);
    if (eq < 0) break;
    const name = text.slice(i, eq).trim();
    i = eq + 1;
    if (text[i] !== '"') break;
    i++;
    let value = '';
    while (i < text.length && text[i] !== '"') {
      if (text[i] === '\\' && i + 1 < text.length) {
        const next = text[i + 1]!;
        value += next === 'n' ? '\n' : next;
        i += 2;
      } else value += text[i++];
    }
    i++;
    labels[name] = value;
  }
  return labels;
}
