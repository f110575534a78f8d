import { UsageError } from '../errors.js';
import { quotaRequest, renderQuotas } from './quota.js';

describe('gpunet quota', () => {
  it('turns the flags into a SetQuota: numbers, none for no limit, borrow on/off', () => {
    expect(quotaRequest({ team: 'team-ml', model: 'H100', gpus: '16', gpuHours: '2000', borrow: 'on' })).toEqual({ team: 'team-ml', gpuModel: 'H100', gpus: 16, gpuHours: 2000, borrow: true });
    expect(quotaRequest({ team: 'team-ml', model: 'H100', gpus: 'none', borrow: 'off' })).toEqual({ team: 'team-ml', gpuModel: 'H100', gpus: null, borrow: false });
    expect(quotaRequest({ team: 'team-ml', model: 'H100' })).toEqual({ team: 'team-ml', gpuModel: 'H100' });
  });

  it('names the flag and the fix of a bad value', () => {
    const issue = (f: () => unknown) => {
      try {
        f();
      } catch (err) {
        expect(err).toBeInstanceOf(UsageError);
        return (err as UsageError).issues?.[0];
      }
      throw new Error('no error');
    };
    expect(issue(() => quotaRequest({ team: 'team-ml', model: 'H100', gpus: '1.5' }))).toMatchObject({ path: '--gpus', fix: 'write e.g. `--gpus 16`' });
    expect(issue(() => quotaRequest({ team: 'team-ml', model: 'H100', gpuHours: '-3' }))).toMatchObject({ path: '--gpu-hours' });
    expect(issue(() => quotaRequest({ team: 'team-ml', model: 'H100', borrow: 'yes' }))).toMatchObject({ path: '--borrow' });
    expect(issue(() => quotaRequest({ model: 'H100' }))).toMatchObject({ path: '--team' });
  });

  it('prints quota, in use, borrowed, GPU-hours used/limit this month and jobs held back per team and model', () => {
    const text = renderQuotas('2026-12', [
      { team: 'team-a', gpuModel: 'H100', gpus: 16, gpuHours: 2000, borrow: true, inUse: 20, borrowed: 4, heldMs: 1_234 * 3_600_000 + 1_800_000, waiting: 0, setAt: '2026-12-01T00:00:00.000Z' },
      { team: 'team-b', gpuModel: 'H100', gpus: null, gpuHours: null, borrow: false, inUse: 2, borrowed: 0, heldMs: 0, waiting: 3 },
    ]);
    const [header, a, b] = text.split('\n');
    expect(header).toMatch(/^TEAM\s+GPU MODEL\s+QUOTA\s+IN USE\s+BORROWED\s+GPU-HOURS 2026-12\s+BORROW\s+WAITING$/);
    expect(a).toMatch(/^team-a\s+H100\s+16\s+20\s+4\s+1234\.5\/2000\s+on\s+0$/);
    expect(b).toMatch(/^team-b\s+H100\s+no limit\s+2\s+0\s+0\.0\/no limit\s+off\s+3$/);
    expect(renderQuotas('2026-12', [])).toBe('no GPU quota is set');
  });
});
