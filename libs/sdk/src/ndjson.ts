/**
 * Newline-delimited JSON, read as it arrives: a chunk may end in the middle of a line (or of a
 * UTF-8 character), so text is buffered until its `\n`. Pure: takes any async iterable of bytes.
 */

/** Yields each non-empty line of a byte stream, without its `\n` (or `\r\n`). A last line without `\n` is yielded too. */
export async function* splitLines(chunks: AsyncIterable<Uint8Array | string>): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let buffered = '';
  for await (const chunk of chunks) {
    buffered += typeof chunk === 'string' ? chunk : decoder.decode(chunk, { stream: true });
    let newline: number;
    while ((newline = buffered.indexOf('\n')) >= 0) {
      const line = buffered.slice(0, newline).replace(/\r$/, '');
      buffered = buffered.slice(newline + 1);
      if (line.trim() !== '') yield line;
    }
  }
  buffered += decoder.decode();
  if (buffered.trim() !== '') yield buffered.replace(/\r$/, '');
}

/** Thrown for a line that is not JSON; `lineNumber` counts non-empty lines from 1. */
export class NdjsonSyntaxError extends Error {
  constructor(
    readonly lineNumber: number,
    readonly line: string,
    options?: { cause?: unknown },
  ) {
    super(`line ${lineNumber} is not JSON: ${line.length > 120 ? `${line.slice(0, 120)}…` : line}`, options);
    this.name = 'NdjsonSyntaxError';
  }
}

/** Yields each line of the stream parsed as JSON; a line that is not JSON throws {@link NdjsonSyntaxError}. */
export async function* parseNdjson(chunks: AsyncIterable<Uint8Array | string>): AsyncGenerator<unknown> {
  let n = 0;
  for await (const line of splitLines(chunks)) {
    n += 1;
    try {
      yield JSON.parse(line) as unknown;
    } catch (err) {
      throw new NdjsonSyntaxError(n, line, { cause: err });
    }
  }
}
