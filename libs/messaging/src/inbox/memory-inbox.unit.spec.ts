import { MemoryInbox } from './memory-inbox.js';

describe('MemoryInbox', () => {
  it('remembers records per consumer', async () => {
    const inbox = new MemoryInbox();
    await inbox.record('ledger', 'e1');
    expect(inbox.has('ledger', 'e1')).toBe(true);
    expect(inbox.has('placement', 'e1')).toBe(false);
    expect(inbox.has('ledger', 'e2')).toBe(false);
  });

  it('forgets the oldest record beyond its capacity, and a re-record refreshes an entry', async () => {
    const inbox = new MemoryInbox(3);
    for (const id of ['a', 'b', 'c']) await inbox.record('c', id);
    await inbox.record('c', 'a'); // a is now the newest
    await inbox.record('c', 'd'); // evicts b, the oldest
    expect(['a', 'b', 'c', 'd'].map((id) => inbox.has('c', id))).toEqual([true, false, true, true]);
    expect(inbox.size).toBe(3);
  });
});
