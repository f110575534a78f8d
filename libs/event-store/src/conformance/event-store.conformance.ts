/**
 * The one conformance suite every event store adapter passes (SQLite, PostgreSQL, ...).
 * An adapter's `*.int.spec.ts` calls `describeEventStoreConformance(harness)` with a harness that
 * gives each test a fresh database (see `harness.ts`).
 *
 * Not covered here, on purpose: "global order never skips a late commit". It needs two
 * transactions of one database open at once, the first committing after the second. With
 * PostgreSQL that is real (sequences hand out positions before commit), so the PostgreSQL
 * adapter's own spec holds that test. SQLite has a single writer: appends run in
 * `BEGIN IMMEDIATE` transactions that take the database's one write lock before allocating a
 * position, so a position is never allocated while a lower one is still uncommitted, and there
 * is no late commit to skip.
 */
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { ConcurrencyError, ValidationError } from '#errors';
import type { EventStore, ExpectedRevision, RecordedEvent } from '../event-store.js';
import { FencedError, IdempotencyConflictError, WrongExpectedVersionError } from '../errors.js';
import { computeEventHash, GENESIS_HASH } from '../hash-chain.js';
import type { ConformanceContext, ConformanceHarness } from './harness.js';
import { caught, isStrictlyIncreasing, newEvent, newEvents, SubscriptionReader, TIMED_OUT } from './fixtures.js';

/** Registers the shared suite for one adapter. Call it at the top level of an `*.int.spec.ts`. */
export function describeEventStoreConformance(harness: ConformanceHarness): void {
  describe(`event store conformance: ${harness.name}`, () => {
    let ctx: ConformanceContext;
    let store: EventStore;

    beforeEach(async () => {
      ctx = await harness.setup();
      store = ctx.store;
    });

    afterEach(async () => {
      await ctx?.dispose();
    });

    /** All events of the global log, however many. */
    async function readEverything(s: EventStore = store): Promise<RecordedEvent[]> {
      const out: RecordedEvent[] = [];
      let from = 0n;
      for (;;) {
        const page = await s.readAll({ fromPosition: from, maxCount: 1000 });
        out.push(...page);
        if (page.length < 1000) return out;
        from = page[page.length - 1]!.position;
      }
    }

    describe('expectedRevision', () => {
      async function expectWrongVersion(
        streamId: string,
        expected: ExpectedRevision,
        actual: bigint | 'no_stream',
      ): Promise<void> {
        const before = await readEverything();
        const err = await caught(() => store.appendToStream(streamId, [newEvent()], { expectedRevision: expected }));
        expect(err).toBeInstanceOf(WrongExpectedVersionError);
        expect(err).toBeInstanceOf(ConcurrencyError);
        const wev = err as WrongExpectedVersionError;
        expect(wev.streamId).toBe(streamId);
        expect(wev.expected).toBe(expected);
        expect(wev.actual).toBe(actual);
        expect(wev.retryable).toBe(true);
        expect(await readEverything()).toEqual(before);
      }

      it('starts revisions at 0 and returns the last revision and position of the append', async () => {
        const r1 = await store.appendToStream('order-1', newEvents(3), { expectedRevision: 'no_stream' });
        expect(r1.nextExpectedRevision).toBe(2n);
        const events = await store.readStream('order-1');
        expect(events.map((e) => e.revision)).toEqual([0n, 1n, 2n]);
        expect(r1.position).toBe(events[2]!.position);
        expect(typeof r1.position).toBe('bigint');

        const r2 = await store.appendToStream('order-1', newEvents(1), { expectedRevision: 2n });
        expect(r2.nextExpectedRevision).toBe(3n);
        expect(r2.position > r1.position).toBe(true);
      });

      it('any: appends to an empty and to a non-empty stream; it is the default', async () => {
        expect((await store.appendToStream('s', [newEvent()], { expectedRevision: 'any' })).nextExpectedRevision).toBe(0n);
        expect((await store.appendToStream('s', [newEvent()], { expectedRevision: 'any' })).nextExpectedRevision).toBe(1n);
        expect((await store.appendToStream('s', [newEvent()])).nextExpectedRevision).toBe(2n);
        expect((await store.appendToStream('t', [newEvent()], {})).nextExpectedRevision).toBe(0n);
      });

      it('no_stream: appends to an empty stream, refuses a non-empty one', async () => {
        await store.appendToStream('s', newEvents(2), { expectedRevision: 'no_stream' });
        await expectWrongVersion('s', 'no_stream', 1n);
      });

      it('stream_exists: refuses an empty stream, appends to a non-empty one', async () => {
        await expectWrongVersion('s', 'stream_exists', 'no_stream');
        await store.appendToStream('s', [newEvent()]);
        const r = await store.appendToStream('s', [newEvent()], { expectedRevision: 'stream_exists' });
        expect(r.nextExpectedRevision).toBe(1n);
      });

      it('exact revision: refuses an empty stream', async () => {
        await expectWrongVersion('s', 0n, 'no_stream');
        await expectWrongVersion('s', 5n, 'no_stream');
      });

      it('exact revision: appends when it matches, refuses lower and higher revisions', async () => {
        await store.appendToStream('s', newEvents(3));
        await expectWrongVersion('s', 1n, 2n);
        await expectWrongVersion('s', 3n, 2n);
        await expectWrongVersion('s', 0n, 2n);
        const r = await store.appendToStream('s', newEvents(2), { expectedRevision: 2n });
        expect(r.nextExpectedRevision).toBe(4n);
        await expectWrongVersion('s', 2n, 4n);
      });

      it('checks only the stream appended to', async () => {
        await store.appendToStream('a', newEvents(3));
        const r = await store.appendToStream('b', [newEvent()], { expectedRevision: 'no_stream' });
        expect(r.nextExpectedRevision).toBe(0n);
      });

      it('an append of several events is atomic: a failing append leaves nothing', async () => {
        await store.appendToStream('s', newEvents(2));
        const used = newEvent();
        await store.appendToStream('other', [used]);
        const before = await readEverything();
        const head = await store.headPosition();

        // The last event of the batch reuses an id with a different payload.
        const batch = [...newEvents(3), { ...used, data: { changed: true } }];
        expect(await caught(() => store.appendToStream('s', batch, { expectedRevision: 1n }))).toBeInstanceOf(
          IdempotencyConflictError,
        );
        expect(await readEverything()).toEqual(before);
        expect(await store.headPosition()).toBe(head);
        expect((await store.readStream('s')).map((e) => e.revision)).toEqual([0n, 1n]);

        // The stream is still appendable at the revision it had.
        const r = await store.appendToStream('s', newEvents(2), { expectedRevision: 1n });
        expect(r.nextExpectedRevision).toBe(3n);
      });
    });

    describe('fence (a single writer\'s term, decision 0029)', () => {
      const fenceStream = 'leadership-role';
      /** Elects a holder: one event on the fence stream; returns its revision (the holder's fence). */
      async function elect(s: EventStore = store): Promise<bigint> {
        return (await s.appendToStream(fenceStream, [newEvent({ type: 'LeaderElected' })])).nextExpectedRevision;
      }

      it('appends while the fence stream is at the given revision, with expectedRevision checked as usual', async () => {
        const term = await elect();
        const r = await store.appendToStream('decisions-1', newEvents(2), { expectedRevision: 'no_stream', fence: { streamId: fenceStream, revision: term } });
        expect(r.nextExpectedRevision).toBe(1n);
        expect(await store.readStream('decisions-1')).toHaveLength(2);
        const wrong = await caught(() => store.appendToStream('decisions-1', [newEvent()], { expectedRevision: 0n, fence: { streamId: fenceStream, revision: term } }));
        expect(wrong).toBeInstanceOf(WrongExpectedVersionError);
      });

      it('refuses the whole append with FencedError, writing nothing, once the fence stream moved on', async () => {
        const term = await elect();
        await store.appendToStream('decisions-1', [newEvent()], { fence: { streamId: fenceStream, revision: term } });
        const next = await elect(await ctx.openAnother());
        expect(next).toBe(term + 1n);
        const before = await readEverything();
        const err = await caught(() => store.appendToStream('decisions-1', newEvents(3), { expectedRevision: 0n, fence: { streamId: fenceStream, revision: term } }));
        expect(err).toBeInstanceOf(FencedError);
        const fenced = err as FencedError;
        expect(fenced.retryable).toBe(false);
        expect(fenced.code).toBe('fenced');
        expect(fenced.streamId).toBe('decisions-1');
        expect(fenced.actual).toBe(next);
        expect(fenced.fence).toEqual({ streamId: fenceStream, revision: term });
        expect(await readEverything()).toEqual(before);
        // The new term's writer goes on.
        await store.appendToStream('decisions-1', [newEvent()], { expectedRevision: 0n, fence: { streamId: fenceStream, revision: next } });
      });

      it('refuses an append fenced on a stream that does not exist (actual: no_stream)', async () => {
        const err = await caught(() => store.appendToStream('decisions-1', [newEvent()], { fence: { streamId: fenceStream, revision: 0n } }));
        expect(err).toBeInstanceOf(FencedError);
        expect((err as FencedError).actual).toBe('no_stream');
        expect(await store.readStream('decisions-1')).toEqual([]);
      });

      it('no fenced append commits after the election that ends its term (appends racing it)', async () => {
        const term = await elect();
        const old = await ctx.openAnother();
        const fence = { streamId: fenceStream, revision: term };
        let landed = 0;
        let refused = 0;
        let failed: unknown;
        /** The old holder appending as fast as it can until it is fenced off. */
        const writer = async (lane: number) => {
          for (let k = 0; ; k++) {
            // An embedded store's append resolves without a macrotask: yield, or nothing else runs.
            await new Promise((r) => setImmediate(r));
            try {
              await old.appendToStream(`decisions-${lane}`, [newEvent({ data: { lane, k } })], { fence });
              landed++;
            } catch (err) {
              if (!(err instanceof FencedError)) {
                failed = err;
                throw err;
              }
              refused++;
              return;
            }
          }
        };
        const writers = [writer(1), writer(2), writer(3)];
        const newHolder = await ctx.openAnother();
        while (landed < 6 && failed === undefined) await new Promise((r) => setTimeout(r, 1));
        expect(failed).toBeUndefined();
        await elect(newHolder);
        // Everything the old holder got in is visible to the new one right after its election.
        const seen = new Set([...(await newHolder.readStream('decisions-1')), ...(await newHolder.readStream('decisions-2')), ...(await newHolder.readStream('decisions-3'))].map((e) => e.eventId));
        await Promise.all(writers);
        expect(refused).toBe(3);
        const all = [...(await store.readStream('decisions-1')), ...(await store.readStream('decisions-2')), ...(await store.readStream('decisions-3'))];
        expect(all).toHaveLength(landed);
        expect(all.filter((e) => !seen.has(e.eventId))).toEqual([]);
        expect((await store.verify()).ok).toBe(true);
      }, 60_000);

      it('rejects a malformed fence before any I/O', async () => {
        const err = await caught(() => store.appendToStream('decisions-1', [newEvent()], { fence: { streamId: '', revision: -1n } }));
        expect(err).toBeInstanceOf(ValidationError);
        expect((err as ValidationError).issues.map((i) => i.path)).toContain('options.fence');
      });
    });

    describe('20 concurrent appenders to one stream', () => {
      it('exactly one appender wins each revision; no revision is lost or doubled', async () => {
        const appenders = 20;
        const perAppender = 5;
        const total = appenders * perAppender;
        const streamId = 'contested-1';
        const stores = await Promise.all(Array.from({ length: appenders }, () => ctx.openAnother()));

        /** revision → the appenders that were told they won it. */
        const winners = new Map<bigint, { appender: number; eventId: string }[]>();
        let conflicts = 0;

        await Promise.all(
          stores.map(async (s, appender) => {
            for (let k = 0; k < perAppender; k++) {
              const event = newEvent({ type: 'Contended', data: { appender, k } });
              for (;;) {
                const current = await s.readStream(streamId);
                const expected: ExpectedRevision = current.length === 0 ? 'no_stream' : current[current.length - 1]!.revision;
                try {
                  const r = await s.appendToStream(streamId, [event], { expectedRevision: expected });
                  expect(r.nextExpectedRevision).toBe(expected === 'no_stream' ? 0n : (expected as bigint) + 1n);
                  const list = winners.get(r.nextExpectedRevision) ?? [];
                  list.push({ appender, eventId: event.eventId });
                  winners.set(r.nextExpectedRevision, list);
                  break;
                } catch (err) {
                  if (!(err instanceof WrongExpectedVersionError)) throw err;
                  expect(err.expected).toBe(expected);
                  expect(err.actual).not.toBe(expected);
                  conflicts++;
                }
              }
            }
          }),
        );

        // The appenders really raced (all twenty start from an empty stream).
        expect(conflicts).toBeGreaterThan(0);

        const events = await store.readStream(streamId);
        expect(events.map((e) => e.revision)).toEqual(Array.from({ length: total }, (_, i) => BigInt(i)));
        expect(new Set(events.map((e) => e.eventId)).size).toBe(total);
        expect(isStrictlyIncreasing(events.map((e) => e.position))).toBe(true);
        expect(winners.size).toBe(total);
        for (const e of events) {
          const w = winners.get(e.revision);
          expect(w).toHaveLength(1);
          expect(w![0]!.eventId).toBe(e.eventId);
          expect((e.data as { appender: number }).appender).toBe(w![0]!.appender);
        }
        for (let a = 0; a < appenders; a++) {
          expect(events.filter((e) => (e.data as { appender: number }).appender === a)).toHaveLength(perAppender);
        }
        expect((await readEverything()).length).toBe(total);
        expect((await store.verify()).ok).toBe(true);
      }, 120_000);
    });

    describe('idempotent event ids', () => {
      it('the same batch again returns the original result and writes nothing', async () => {
        const batch = newEvents(3);
        const first = await store.appendToStream('s', batch, { expectedRevision: 'no_stream' });
        const before = await readEverything();
        const again = await store.appendToStream('s', batch, { expectedRevision: 'no_stream' });
        expect(again).toEqual(first);
        expect(await readEverything()).toEqual(before);
      });

      it('a retried batch returns the original result even after the stream has moved on', async () => {
        const batch = newEvents(2);
        const first = await store.appendToStream('s', batch, { expectedRevision: 'no_stream' });
        await store.appendToStream('s', newEvents(3), { expectedRevision: 1n });
        await store.appendToStream('t', newEvents(1));
        const before = await readEverything();
        // A lost response: the client retries with the revision it expected back then.
        expect(await store.appendToStream('s', batch, { expectedRevision: 'no_stream' })).toEqual(first);
        expect(await store.appendToStream('s', batch, { expectedRevision: 'any' })).toEqual(first);
        expect(await readEverything()).toEqual(before);
      });

      it('compares payloads by value, not by key order', async () => {
        const e = newEvent({ data: { a: 1, b: { c: [1, 2], d: 'x' } } });
        const first = await store.appendToStream('s', [e]);
        const reordered = { ...e, data: { b: { d: 'x', c: [1, 2] }, a: 1 }, metadata: { ...e.metadata } };
        expect(await store.appendToStream('s', [reordered])).toEqual(first);
        expect(await store.readStream('s')).toHaveLength(1);
      });

      it('a different payload under a used id is an IdempotencyConflictError naming the id', async () => {
        const e = newEvent({ type: 'A', data: { v: 1 } });
        await store.appendToStream('s', [e]);
        const before = await readEverything();
        for (const variant of [
          { ...e, data: { v: 2 } },
          { ...e, type: 'B' },
          { ...e, metadata: { ...e.metadata, team: 'other-team' } },
        ]) {
          const err = await caught(() => store.appendToStream('s', [variant]));
          expect(err).toBeInstanceOf(IdempotencyConflictError);
          expect((err as IdempotencyConflictError).eventId).toBe(e.eventId);
          expect((err as IdempotencyConflictError).retryable).toBe(false);
        }
        expect(await readEverything()).toEqual(before);
      });

      it('the same event under another stream is a conflict: ids are unique across the log', async () => {
        const e = newEvent();
        await store.appendToStream('s', [e]);
        expect(await caught(() => store.appendToStream('t', [e]))).toBeInstanceOf(IdempotencyConflictError);
        expect(await store.readStream('t')).toEqual([]);
      });

      it('a batch that partly overlaps an earlier one is a conflict and writes nothing', async () => {
        const [a, b, c] = newEvents(3);
        await store.appendToStream('s', [a!, b!]);
        const before = await readEverything();
        const err = await caught(() => store.appendToStream('s', [b!, c!]));
        expect(err).toBeInstanceOf(IdempotencyConflictError);
        const err2 = await caught(() => store.appendToStream('s', [a!, b!, c!]));
        expect(err2).toBeInstanceOf(IdempotencyConflictError);
        expect(await readEverything()).toEqual(before);
      });
    });

    describe('reading', () => {
      it('readStream of a stream that does not exist is empty', async () => {
        expect(await store.readStream('nope')).toEqual([]);
      });

      it('returns every field as appended, with bigint revision and position, ISO recordedAt and a hex hash', async () => {
        const e = newEvent({
          type: 'JobSubmitted',
          data: { nested: { list: [1, 'two', null, true, { x: -1.5 }] }, text: 'héllo ✓ 日本', empty: {} },
          metadata: { jobId: 'job-7', team: 'team-a' },
        });
        const plain = newEvent({ type: 'Plain' });
        const r = await store.appendToStream('job-7', [e, plain]);
        const [got, gotPlain] = await store.readStream('job-7');
        expect(got).toMatchObject({
          streamId: 'job-7',
          revision: 0n,
          eventId: e.eventId,
          type: 'JobSubmitted',
          data: e.data,
          metadata: e.metadata,
        });
        expect(got!.metadata).toEqual(e.metadata);
        // Optional metadata fields that were not given stay absent (not null).
        expect(gotPlain!.metadata).toEqual(plain.metadata);
        expect('jobId' in gotPlain!.metadata).toBe(false);
        expect(typeof got!.revision).toBe('bigint');
        expect(typeof got!.position).toBe('bigint');
        expect(gotPlain!.position).toBe(r.position);
        expect(got!.recordedAt).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/);
        expect(Number.isNaN(Date.parse(got!.recordedAt))).toBe(false);
        expect(got!.hash).toMatch(/^[0-9a-f]{64}$/);
        expect(await store.readAll()).toEqual([got, gotPlain]);
      });

      it('chains each hash to the previous event of its stream', async () => {
        await store.appendToStream('a', newEvents(3));
        await store.appendToStream('b', newEvents(2));
        await store.appendToStream('a', newEvents(2));
        for (const streamId of ['a', 'b']) {
          let prev = GENESIS_HASH;
          for (const e of await store.readStream(streamId)) {
            expect(e.hash).toBe(computeEventHash(prev, e, ctx.chainKey));
            prev = e.hash;
          }
        }
      });

      it('readStream honours fromRevision and maxCount', async () => {
        await store.appendToStream('s', newEvents(6));
        expect((await store.readStream('s', { fromRevision: 2n })).map((e) => e.revision)).toEqual([2n, 3n, 4n, 5n]);
        expect((await store.readStream('s', { maxCount: 2 })).map((e) => e.revision)).toEqual([0n, 1n]);
        expect((await store.readStream('s', { fromRevision: 3n, maxCount: 2 })).map((e) => e.revision)).toEqual([3n, 4n]);
        expect(await store.readStream('s', { fromRevision: 6n })).toEqual([]);
      });

      it('readAll interleaves streams in strictly increasing position order', async () => {
        const appended: string[] = [];
        for (let i = 0; i < 5; i++) {
          for (const s of ['x', 'y', 'z']) {
            const batch = newEvents(i % 2 === 0 ? 1 : 2);
            appended.push(...batch.map((e) => e.eventId));
            await store.appendToStream(s, batch);
          }
        }
        const all = await store.readAll();
        expect(all.map((e) => e.eventId)).toEqual(appended);
        expect(isStrictlyIncreasing(all.map((e) => e.position))).toBe(true);
        expect(await store.headPosition()).toBe(all[all.length - 1]!.position);
      });

      it('eventIdAt names the event at each position, and nothing where there is none', async () => {
        await store.appendToStream('x', newEvents(2));
        await store.appendToStream('y', newEvents(3));
        const all = await store.readAll();
        for (const e of all) expect(await store.eventIdAt(e.position)).toBe(e.eventId);
        expect(await store.eventIdAt(0n)).toBeUndefined();
        expect(await store.eventIdAt(all.at(-1)!.position + 1n)).toBeUndefined();
      });

      it('headPosition is 0n on an empty store', async () => {
        expect(await store.headPosition()).toBe(0n);
        expect(await store.readAll()).toEqual([]);
      });

      it('readAll: fromPosition is exclusive, toPosition inclusive, maxCount caps', async () => {
        await store.appendToStream('s', newEvents(10));
        const all = await store.readAll();
        const p = all.map((e) => e.position);
        expect((await store.readAll({ fromPosition: p[3] })).map((e) => e.position)).toEqual(p.slice(4));
        expect((await store.readAll({ toPosition: p[3] })).map((e) => e.position)).toEqual(p.slice(0, 4));
        expect((await store.readAll({ fromPosition: p[2], toPosition: p[6] })).map((e) => e.position)).toEqual(p.slice(3, 7));
        expect((await store.readAll({ fromPosition: p[2], maxCount: 3 })).map((e) => e.position)).toEqual(p.slice(3, 6));
        expect(await store.readAll({ fromPosition: p[9] })).toEqual([]);
        expect(await store.readAll({ fromPosition: p[5], toPosition: p[5] })).toEqual([]);
      });

      it('readAll returns at most 1000 events by default', async () => {
        for (let i = 0; i < 11; i++) await store.appendToStream(`bulk-${i}`, newEvents(100));
        const page = await store.readAll();
        expect(page).toHaveLength(1000);
        expect(await store.readAll({ fromPosition: page[999]!.position })).toHaveLength(100);
      });

      it('readAll filters by types, streamPrefix, jobId and team; all given fields must match', async () => {
        await store.appendToStream('job-1', [
          newEvent({ type: 'JobSubmitted', metadata: { jobId: 'job-1', team: 'red' } }),
          newEvent({ type: 'JobStarted', metadata: { jobId: 'job-1', team: 'red' } }),
        ]);
        await store.appendToStream('job-2', [newEvent({ type: 'JobSubmitted', metadata: { jobId: 'job-2', team: 'blue' } })]);
        await store.appendToStream('node-1', [newEvent({ type: 'NodeRegistered' })]);
        await store.appendToStream('job-1', [newEvent({ type: 'JobFinished', metadata: { jobId: 'job-1', team: 'red' } })]);
        const types = async (filter: Parameters<EventStore['readAll']>[0]) =>
          (await store.readAll(filter)).map((e) => `${e.streamId}:${e.type}`);

        expect(await types({ filter: { types: ['JobSubmitted', 'JobFinished'] } })).toEqual([
          'job-1:JobSubmitted',
          'job-2:JobSubmitted',
          'job-1:JobFinished',
        ]);
        expect(await types({ filter: { streamPrefix: 'job-' } })).toEqual([
          'job-1:JobSubmitted',
          'job-1:JobStarted',
          'job-2:JobSubmitted',
          'job-1:JobFinished',
        ]);
        expect(await types({ filter: { jobId: 'job-1' } })).toEqual(['job-1:JobSubmitted', 'job-1:JobStarted', 'job-1:JobFinished']);
        expect(await types({ filter: { team: 'blue' } })).toEqual(['job-2:JobSubmitted']);
        expect(await types({ filter: { team: 'red', types: ['JobSubmitted'] } })).toEqual(['job-1:JobSubmitted']);
        expect(await types({ filter: { streamPrefix: 'node-', team: 'red' } })).toEqual([]);
        expect(await types({ filter: { types: [] } })).toEqual([]);
        // maxCount counts matching events, not scanned rows.
        expect(await types({ filter: { jobId: 'job-1' }, maxCount: 2 })).toEqual(['job-1:JobSubmitted', 'job-1:JobStarted']);
      });

      it('streamPrefix is a literal prefix: LIKE wildcards in it match only themselves', async () => {
        await store.appendToStream('a_1', [newEvent()]);
        await store.appendToStream('ab1', [newEvent()]);
        await store.appendToStream('a%2', [newEvent()]);
        await store.appendToStream('a\\3', [newEvent()]);
        expect((await store.readAll({ filter: { streamPrefix: 'a_' } })).map((e) => e.streamId)).toEqual(['a_1']);
        expect((await store.readAll({ filter: { streamPrefix: 'a%' } })).map((e) => e.streamId)).toEqual(['a%2']);
        expect((await store.readAll({ filter: { streamPrefix: 'a\\' } })).map((e) => e.streamId)).toEqual(['a\\3']);
      });
    });

    describe('catch-up subscription', () => {
      it('yields historical events, then live ones from this and other instances, in position order', async () => {
        await store.appendToStream('a', newEvents(3));
        await store.appendToStream('b', newEvents(2));
        const reader = new SubscriptionReader(store.subscribeToAll({ batchSize: 2, pollIntervalMs: 50 }));
        try {
          const historical = await reader.take(5);
          expect(historical).toEqual(await store.readAll());

          const other = await ctx.openAnother();
          await store.appendToStream('a', newEvents(2));
          await other.appendToStream('c', newEvents(2)); // another instance with its own connection(s)
          await store.appendToStream('b', newEvents(1));
          const live = await reader.take(5);
          const all = await store.readAll();
          expect([...historical, ...live]).toEqual(all);
          expect(isStrictlyIncreasing(all.map((e) => e.position))).toBe(true);
          await reader.nothingWithin(300);
        } finally {
          await reader.subscription.close();
        }
      });

      it('starts after fromPosition (exclusive) and applies its filter', async () => {
        await store.appendToStream('job-1', newEvents(3, 'A'));
        await store.appendToStream('node-1', newEvents(2, 'B'));
        const all = await store.readAll();
        const reader = new SubscriptionReader(
          store.subscribeToAll({ fromPosition: all[1]!.position, filter: { streamPrefix: 'job-' }, pollIntervalMs: 50 }),
        );
        try {
          expect(await reader.take(1)).toEqual([all[2]]);
          await store.appendToStream('node-1', newEvents(1, 'B'));
          await store.appendToStream('job-1', newEvents(1, 'A'));
          const [live] = await reader.take(1);
          expect(live!.streamId).toBe('job-1');
          expect(live!.revision).toBe(3n);
          await reader.nothingWithin(200);
        } finally {
          await reader.subscription.close();
        }
      });

      it('close() ends a pending iteration', async () => {
        const reader = new SubscriptionReader(store.subscribeToAll({ pollIntervalMs: 50 }));
        await reader.nothingWithin(100);
        await reader.subscription.close();
        const r = await reader.end(2_000);
        expect(r).not.toBe(TIMED_OUT);
        expect((r as IteratorResult<RecordedEvent>).done).toBe(true);
      });

      it('breaking out of for-await stops the subscription', async () => {
        await store.appendToStream('s', newEvents(5));
        const seen: bigint[] = [];
        for await (const e of store.subscribeToAll({ pollIntervalMs: 50 })) {
          seen.push(e.revision);
          if (seen.length === 2) break;
        }
        expect(seen).toEqual([0n, 1n]);
      });

      it('checkpoints: undefined until saved, then the last saved value, per subscriber', async () => {
        expect(await store.loadCheckpoint('projector')).toBeUndefined();
        await store.saveCheckpoint('projector', 5n);
        await store.saveCheckpoint('projector', 9n);
        await store.saveCheckpoint('relay', 3n);
        expect(await store.loadCheckpoint('projector')).toBe(9n);
        expect(await store.loadCheckpoint('relay')).toBe(3n);
      });

      it('resumes from its saved checkpoint after a restart: no event missed, none twice', async () => {
        const subscriberId = 'projector-1';
        for (let i = 0; i < 4; i++) await store.appendToStream(`s-${i % 2}`, newEvents(3));

        // First life: process 7 of the 12 events, saving the checkpoint after each one.
        const seen: RecordedEvent[] = [];
        const from1 = (await store.loadCheckpoint(subscriberId)) ?? 0n;
        const first = new SubscriptionReader(store.subscribeToAll({ fromPosition: from1, batchSize: 5, pollIntervalMs: 50 }));
        for (const e of await first.take(7)) {
          seen.push(e);
          await store.saveCheckpoint(subscriberId, e.position);
        }
        await first.subscription.close();

        // While it is down, another process keeps appending.
        const other = await ctx.openAnother();
        await other.appendToStream('s-0', newEvents(2));
        await other.appendToStream('s-9', newEvents(3));

        // Second life on a fresh instance: resume from the checkpoint.
        const restarted = await ctx.reopen();
        const from2 = await restarted.loadCheckpoint(subscriberId);
        expect(from2).toBe(seen[6]!.position);
        const second = new SubscriptionReader(restarted.subscribeToAll({ fromPosition: from2, batchSize: 5, pollIntervalMs: 50 }));
        try {
          seen.push(...(await second.take(5 + 5)));
          await other.appendToStream('s-1', newEvents(2));
          seen.push(...(await second.take(2)));
          await second.nothingWithin(300);
        } finally {
          await second.subscription.close();
        }

        const all = await readEverything(restarted);
        expect(all).toHaveLength(19);
        expect(seen.map((e) => e.eventId)).toEqual(all.map((e) => e.eventId));
        expect(new Set(seen.map((e) => e.eventId)).size).toBe(19);
      });
    });

    describe('verify', () => {
      /** Three streams, interleaved: a has 4 events, b 3, c 1. Returns the log. */
      async function seed(): Promise<RecordedEvent[]> {
        await store.appendToStream('a', newEvents(2));
        await store.appendToStream('b', newEvents(1));
        await store.appendToStream('a', newEvents(1));
        await store.appendToStream('c', newEvents(1));
        await store.appendToStream('b', newEvents(2));
        await store.appendToStream('a', newEvents(1));
        return store.readAll();
      }

      function at(log: RecordedEvent[], streamId: string, revision: bigint): RecordedEvent {
        const e = log.find((x) => x.streamId === streamId && x.revision === revision);
        if (!e) throw new Error(`no ${streamId}@${revision} in the seeded log`);
        return e;
      }

      it('passes on an empty store', async () => {
        expect(await store.verify()).toEqual({ ok: true, events: 0, headPosition: 0n, streams: 0 });
      });

      it('passes on an untouched store, also after a restart', async () => {
        const log = await seed();
        const expected = { ok: true, events: 8, headPosition: log[7]!.position, streams: 3 };
        expect(await store.verify()).toEqual(expected);
        expect(await (await ctx.reopen()).verify()).toEqual(expected);
      });

      it('names the altered event when a row is edited behind its back', async () => {
        const log = await seed();
        const victim = at(log, 'a', 1n);
        await ctx.tamper.alterData(victim.position, { i: 999 });
        const r = await store.verify();
        expect(r).toMatchObject({ ok: false, firstBadPosition: victim.position, streamId: 'a' });
        expect(r.ok === false && r.reason.length > 0).toBe(true);
      });

      it('names the event after the gap when a row in the middle of a stream is deleted', async () => {
        const log = await seed();
        await ctx.tamper.deleteAt(at(log, 'a', 1n).position);
        expect(await store.verify()).toMatchObject({ ok: false, firstBadPosition: at(log, 'a', 2n).position, streamId: 'a' });
      });

      it('names the first event of a stream when its revision 0 is deleted', async () => {
        const log = await seed();
        await ctx.tamper.deleteAt(at(log, 'b', 0n).position);
        expect(await store.verify()).toMatchObject({ ok: false, firstBadPosition: at(log, 'b', 1n).position, streamId: 'b' });
      });

      it('names the deleted head when the tail of a stream is deleted (the stream head no longer matches)', async () => {
        const log = await seed();
        const tail = at(log, 'b', 2n);
        await ctx.tamper.deleteAt(tail.position);
        expect(await store.verify()).toMatchObject({ ok: false, firstBadPosition: tail.position, streamId: 'b' });
      });

      it('names a whole deleted stream of one event', async () => {
        const log = await seed();
        const only = at(log, 'c', 0n);
        await ctx.tamper.deleteAt(only.position);
        expect(await store.verify()).toMatchObject({ ok: false, firstBadPosition: only.position, streamId: 'c' });
      });

      it('names an inserted row with a wrong hash', async () => {
        const log = await seed();
        const head = log[log.length - 1]!;
        const forged = { ...at(log, 'b', 2n), revision: 3n, position: head.position + 10n, eventId: newEvent().eventId, hash: 'f'.repeat(64) };
        await ctx.tamper.insertRow(forged);
        expect(await store.verify()).toMatchObject({ ok: false, firstBadPosition: forged.position, streamId: 'b' });
      });

      it('names an inserted row even when its hash links correctly (the stream head no longer matches)', async () => {
        const log = await seed();
        const head = log[log.length - 1]!;
        const prev = at(log, 'c', 0n);
        const fields = {
          ...prev,
          revision: 1n,
          position: head.position + 10n,
          eventId: newEvent().eventId,
          data: { forged: true },
        };
        await ctx.tamper.insertRow({ ...fields, hash: computeEventHash(prev.hash, fields, ctx.chainKey) });
        expect(await store.verify()).toMatchObject({ ok: false, firstBadPosition: fields.position, streamId: 'c' });
      });

      it('names an inserted stream the store never wrote', async () => {
        const log = await seed();
        const head = log[log.length - 1]!;
        const fields = { ...head, streamId: 'ghost', revision: 0n, position: head.position + 5n, eventId: newEvent().eventId };
        await ctx.tamper.insertRow({ ...fields, hash: computeEventHash(GENESIS_HASH, fields, ctx.chainKey) });
        expect(await store.verify()).toMatchObject({ ok: false, firstBadPosition: fields.position, streamId: 'ghost' });
      });

      it('names the lowest bad position when several rows are bad', async () => {
        const log = await seed();
        await ctx.tamper.alterData(at(log, 'b', 2n).position, { x: 1 });
        await ctx.tamper.alterData(at(log, 'a', 1n).position, { x: 1 });
        expect(await store.verify()).toMatchObject({ ok: false, firstBadPosition: at(log, 'a', 1n).position, streamId: 'a' });
      });
    });

    describe('append-only, enforced by the database', () => {
      it('refuses UPDATE and DELETE issued as plain SQL', async () => {
        await store.appendToStream('s', newEvents(3));
        const before = await store.readAll();
        await expect(ctx.plainSql.updateAt(before[1]!.position)).rejects.toThrow();
        await expect(ctx.plainSql.deleteAt(before[1]!.position)).rejects.toThrow();
        expect(await store.readAll()).toEqual(before);
        expect((await store.verify()).ok).toBe(true);
      });

      it('still refuses them after a tamper hook re-enabled the guards', async () => {
        await store.appendToStream('s', newEvents(3));
        const log = await store.readAll();
        await ctx.tamper.alterData(log[0]!.position, { altered: true });
        await expect(ctx.plainSql.updateAt(log[1]!.position)).rejects.toThrow();
        await expect(ctx.plainSql.deleteAt(log[2]!.position)).rejects.toThrow();
        expect(await store.readStream('s')).toHaveLength(3);
      });
    });

    describe('input validation', () => {
      async function expectInvalid(call: () => Promise<unknown>, path: RegExp): Promise<void> {
        const before = await readEverything();
        const err = await caught(call);
        expect(err).toBeInstanceOf(ValidationError);
        const issues = (err as ValidationError).issues.map((i) => i.path);
        expect(issues.some((p) => path.test(p))).toBe(true);
        expect(await readEverything()).toEqual(before);
      }

      it('refuses an empty stream id', async () => {
        await expectInvalid(() => store.appendToStream('', [newEvent()]), /^streamId$/);
      });

      it('refuses an empty batch', async () => {
        await expectInvalid(() => store.appendToStream('s', []), /^events$/);
      });

      it('refuses duplicate event ids within one batch', async () => {
        const e = newEvent();
        await expectInvalid(() => store.appendToStream('s', [newEvent(), e, { ...e }]), /^events\W+2\W+eventId$/);
      });

      it('refuses an event id that is not a UUID', async () => {
        await expectInvalid(() => store.appendToStream('s', [newEvent(), newEvent({ eventId: 'not-a-uuid' })]), /^events\W+1\W+eventId$/);
      });
    });
  });
}
