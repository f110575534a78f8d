import { describe, expect, it } from '@jest/globals';
import { getEventListeners } from 'node:events';
import { sleep } from './leadership.js';

describe('leadership: the standby wait', () => {
  it('leaves no abort listener behind however many waits a standby makes on one signal', async () => {
    const waiting = new AbortController();
    for (let i = 0; i < 20; i++) await sleep(1, waiting.signal);
    expect(getEventListeners(waiting.signal, 'abort')).toHaveLength(0);
  });

  it('still ends a wait at once when the signal aborts, with its reason', async () => {
    const waiting = new AbortController();
    const wait = sleep(60_000, waiting.signal);
    waiting.abort(new Error('stopping'));
    await expect(wait).rejects.toThrow('stopping');
    expect(getEventListeners(waiting.signal, 'abort')).toHaveLength(0);
  });
});
