import { mapLimit } from './pool.js';
import { PhaseCounter, type TransferProgress } from './progress.js';

describe('PhaseCounter', () => {
  it('given per-file cumulative reports, emits one folder-wide cumulative count', () => {
    const seen: TransferProgress[] = [];
    const counter = new PhaseCounter('uploading', 30, (p) => seen.push(p));
    const a = counter.forFile('a');
    const b = counter.forFile('b');

    a({ phase: 'uploading', bytesDone: 5, bytesTotal: 10 });
    b({ phase: 'uploading', bytesDone: 20, bytesTotal: 20 });
    a({ phase: 'uploading', bytesDone: 10, bytesTotal: 10 });

    expect(seen).toEqual([
      { phase: 'uploading', bytesDone: 5, bytesTotal: 30, file: 'a' },
      { phase: 'uploading', bytesDone: 25, bytesTotal: 30, file: 'b' },
      { phase: 'uploading', bytesDone: 30, bytesTotal: 30, file: 'a' },
    ]);
  });
});

describe('mapLimit', () => {
  it('keeps order and never runs more than the limit at once', async () => {
    let running = 0;
    let peak = 0;
    const out = await mapLimit([5, 1, 4, 2, 3], 2, async (n) => {
      running++;
      peak = Math.max(peak, running);
      await new Promise((r) => setTimeout(r, n));
      running--;
      return n * 10;
    });
    expect(out).toEqual([50, 10, 40, 20, 30]);
    expect(peak).toBe(2);
  });

  it('rejects with the failure and starts nothing new after it', async () => {
    const started: number[] = [];
    await expect(
      mapLimit([1, 2, 3, 4], 1, async (n) => {
        started.push(n);
        if (n === 2) throw new Error('boom');
        return n;
      }),
    ).rejects.toThrow('boom');
    expect(started).toEqual([1, 2]);
  });

  it('handles an empty list', async () => {
    expect(await mapLimit([], 4, async () => 1)).toEqual([]);
  });
});
