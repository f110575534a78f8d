import fc from 'fast-check';
import { LineSplitter, LogCapture, TRUNCATION_MARKER, type LogStream } from './log-capture.js';

const b = (s: string) => Buffer.from(s, 'utf8');
const str = (lines: Buffer[]) => lines.map((l) => l.toString('utf8'));

describe('LineSplitter', () => {
  it('joins lines across chunks and keeps the unterminated rest for flush', () => {
    const s = new LineSplitter(1024);
    expect(str(s.push(b('hel')))).toEqual([]);
    expect(str(s.push(b('lo\nwor')))).toEqual(['hello']);
    expect(str(s.push(b('ld\n\nlast')))).toEqual(['world', '']);
    expect(str(s.flush())).toEqual(['last']);
    expect(s.flush()).toEqual([]);
  });

  it('treats \\r\\n as one break, also when split across chunks, and a lone \\r as a break', () => {
    const s = new LineSplitter(1024);
    expect(str(s.push(b('a\r\nb\r')))).toEqual(['a', 'b']);
    expect(str(s.push(b('\nc\r10%\r20%\n')))).toEqual(['c', '10%', '20%']);
  });

  it('cuts lines longer than the limit into pieces of the limit', () => {
    const s = new LineSplitter(4);
    expect(str(s.push(b('abcd\n')))).toEqual(['abcd']);
    expect(str(s.push(b('abcdefghij')))).toEqual(['abcd', 'efgh']);
    expect(str(s.push(b('k\n')))).toEqual(['ijk']);
  });

  it('keeps a multi-byte character whole when a chunk boundary falls inside it', () => {
    const s = new LineSplitter(1024);
    const bytes = b('grüße\n');
    expect(str([...s.push(bytes.subarray(0, 3)), ...s.push(bytes.subarray(3))])).toEqual(['grüße']);
  });

  it('loses no byte however the input is chunked (property)', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), fc.array(fc.nat(300), { maxLength: 6 }), fc.integer({ min: 1, max: 40 }), (data, cuts, max) => {
        const input = Buffer.from(data);
        const whole = new LineSplitter(max);
        const expected = [...whole.push(input), ...whole.flush()];
        const s = new LineSplitter(max);
        const got: Buffer[] = [];
        let at = 0;
        for (const cut of [...cuts].sort((x, y) => x - y)) {
          const end = Math.min(cut, input.length);
          if (end < at) continue;
          got.push(...s.push(input.subarray(at, end)));
          at = end;
        }
        got.push(...s.push(input.subarray(at)), ...s.flush());
        expect(got.map((l) => l.toString('hex'))).toEqual(expected.map((l) => l.toString('hex')));
        for (const line of got) expect(line.length).toBeLessThanOrEqual(max);
        // every non-break byte comes out exactly once
        const content = Buffer.concat(got).toString('hex');
        const stripped = Buffer.from(data.filter((x) => x !== 0x0a && x !== 0x0d)).toString('hex');
        expect(content).toBe(stripped);
      }),
    );
  });
});

describe('LogCapture', () => {
  function capture(maxBytes: number) {
    const written: Buffer[] = [];
    const seen: [string, LogStream][] = [];
    const cap = new LogCapture({ maxBytes, maxLineBytes: 100, write: (d) => (written.push(d), true), onLog: (l, s) => seen.push([l, s]) });
    return { cap, seen, file: () => Buffer.concat(written).toString('utf8') };
  }

  it('writes each stream line-wise to the file and to the listener', () => {
    const { cap, seen, file } = capture(1000);
    cap.push('stdout', b('out 1\nout'));
    cap.push('stderr', b('err 1\n'));
    cap.push('stdout', b(' 2\n'));
    cap.end('stdout');
    cap.end('stderr');
    expect(file()).toBe('out 1\nerr 1\nout 2\n');
    expect(seen).toEqual([
      ['out 1', 'stdout'],
      ['err 1', 'stderr'],
      ['out 2', 'stdout'],
    ]);
    expect(cap.outputBytes).toBe(18);
    expect(cap.logBytes).toBe(18);
    expect(cap.truncated).toBe(false);
  });

  it('stops at the cap with one visible marker, keeps counting, and sums up at the end', () => {
    const { cap, seen, file } = capture(12);
    cap.push('stdout', b('12345\n12345\n12345\n'));
    cap.push('stderr', b('more\n'));
    cap.end('stdout');
    cap.finish();
    const lines = file().split('\n');
    expect(lines[0]).toBe('12345');
    expect(lines[1]).toBe('12345');
    expect(lines[2].startsWith(TRUNCATION_MARKER)).toBe(true);
    expect(lines[3]).toBe('[gpunet] 11 of 23 bytes of job output were discarded (log cap 12 bytes)');
    expect(lines).toHaveLength(5); // trailing newline
    expect(seen.filter(([, s]) => s === 'system')).toHaveLength(2);
    expect(cap.truncated).toBe(true);
    expect(cap.outputBytes).toBe(23);
    expect(cap.logBytes).toBe(Buffer.byteLength(file()));
  });

  it('passes backpressure on and survives a throwing listener', () => {
    let accept = false;
    const written: string[] = [];
    const cap = new LogCapture({
      maxBytes: 1000,
      maxLineBytes: 100,
      write: (d) => (written.push(d.toString()), accept),
      onLog: () => {
        throw new Error('listener bug');
      },
    });
    expect(cap.push('stdout', b('a\n'))).toBe(false);
    accept = true;
    expect(cap.push('stdout', b('b\n'))).toBe(true);
    expect(written).toEqual(['a\n', '[gpunet] log listener failed and was detached: listener bug\n', 'b\n']);
  });
});
