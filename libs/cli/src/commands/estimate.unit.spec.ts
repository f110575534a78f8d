import { describe, expect, it } from '@jest/globals';
import { renderEstimate, submitOnEstimate } from './estimate.js';

const base = { runnable: true, reason: 'Resources', expectedStart: '2026-11-30T12:00:00.000Z', expectedEnd: '2026-11-30T14:00:00.000Z', gpuModel: 'A100', at: '2026-11-30T10:00:00.000Z' };

describe('renderEstimate', () => {
  it('says when it starts, why it waits, and by when it ends', () => {
    const text = renderEstimate({ ...base, nodes: 1 });
    expect(text).toContain('starts:   in 2h');
    expect(text).toContain('it waits for running work to end');
    expect(text).toContain('ends by:  2026-11-30T14:00:00.000Z');
    expect(text.split('\n')).toContain('GPUs:     A100');
  });

  it('says when the job runs over several whole nodes', () => {
    expect(renderEstimate({ ...base, nodes: 3 })).toContain('GPUs:     A100 over 3 whole nodes (the job is larger than any node)');
  });

  it('says a deadline the plan cannot meet is not met', () => {
    expect(renderEstimate({ ...base, deadlineAt: '2026-11-30T13:00:00.000Z' })).toContain('deadline: 2026-11-30T13:00:00.000Z — NOT met by the current plan');
  });

  it('names why a job cannot run at all', () => {
    expect(renderEstimate({ runnable: false, reason: 'NoNodeFits', at: base.at })).toBe(
      'cannot run: the network does not have that many GPUs of one model (of the requested model), even over several nodes (NoNodeFits)',
    );
  });
});

describe('submitOnEstimate', () => {
  it('repeats the file and the request flags of the estimate, then --estimate', () => {
    expect(submitOnEstimate('job.yaml', {}, 'est_1')).toBe('gpunet submit job.yaml --estimate est_1');
    expect(submitOnEstimate('my job.yaml', { gpus: '2', timeLimit: '30m', deadline: 'tomorrow 9am' }, 'est_1')).toBe(
      'gpunet submit \'my job.yaml\' --gpus 2 --time-limit 30m --deadline \'tomorrow 9am\' --estimate est_1',
    );
  });
});
