import { NdjsonSyntaxError, parseNdjson, splitLines } from './ndjson.js';

async function* chunks(...parts: (string | Uint8Array)[]): AsyncGenerator<string | Uint8Array> {
  for (const p of parts) yield p;
}

async function collect<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}

describe('NDJSON as it arrives', () => {
  it('given lines split across chunks, when read, then yields whole lines and skips blank ones', async () => {
    const lines = await collect(splitLines(chunks('{"a":1}\n{"b"', ':2}\r\n\n', '{"c":3}')));
    expect(lines).toEqual(['{"a":1}', '{"b":2}', '{"c":3}']);
  });

  it('given a multi-byte character split between chunks, when read, then decodes it whole', async () => {
    const bytes = new TextEncoder().encode('{"line":"é€"}\n');
    const lines = await collect(splitLines(chunks(bytes.slice(0, 11), bytes.slice(11))));
    expect(lines).toEqual(['{"line":"é€"}']);
  });

  it('given a line that is not JSON, when parsed, then names its number', async () => {
    const it = parseNdjson(chunks('{"ok":true}\nnot json\n'));
    await expect(collect(it)).rejects.toThrow(NdjsonSyntaxError);
    await expect(collect(parseNdjson(chunks('{"ok":true}\nnot json\n')))).rejects.toThrow('line 2 is not JSON: not json');
  });
});
