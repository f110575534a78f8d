import { etaText, transferRate } from './progress.js';

describe('transfer rate and ETA', () => {
  it('counts only the bytes moved since the first report: a resumed upload starting at 45% is not credited with them', () => {
    const first = { at: 1_000, done: 450 * 1024 * 1024 };
    const now = { at: 11_000, done: 550 * 1024 * 1024, total: 1000 * 1024 * 1024 };
    const { bytesPerSecond, etaMs } = transferRate(first, now);
    expect(bytesPerSecond).toBe(10 * 1024 * 1024);
    expect(etaMs).toBe(45_000);
    expect(etaText(etaMs)).toBe('ETA 45s');
  });

  it('has no ETA before anything moved, and 0 when done', () => {
    expect(transferRate({ at: 0, done: 0 }, { at: 0, done: 0, total: 10 })).toEqual({ bytesPerSecond: 0, etaMs: undefined });
    expect(etaText(undefined)).toBe('ETA –');
    expect(transferRate({ at: 0, done: 10 }, { at: 5, done: 10, total: 10 }).etaMs).toBe(0);
    expect(etaText(3_725_400)).toBe('ETA 1h2m5s');
  });
});
