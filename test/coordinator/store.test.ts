/**
 * The store contract (CONTRACT §8, STYLE habit 7): one suite, run against every Store
 * implementation. Each test gets a fresh temp dir and a real store in it.
 */
import assert from 'node:assert/strict';
import { Level } from 'level';
import { describe, test, type TestContext } from 'node:test';
import { VigilError } from '../../src/common/errors.js';
import { LevelStore } from '../../src/coordinator/store/level-store.js';
import {
  INITIAL_SEQUENCES,
  type Sequences,
  type Store,
  type StoreOp,
} from '../../src/coordinator/store/store.js';
import type { Check, Monitor, User } from '../../src/domain/check.js';
import type { OutboxEvent } from '../../src/domain/events.js';
import type { StoredResult } from '../../src/domain/result.js';
import type { CheckState } from '../../src/domain/transition.js';
import type { PackedRunStats, RunHead, RunStats } from '../../src/domain/uptime.js';
import { tempDir } from '../helpers.js';

/** Every test here does real I/O; none may hang the run. */
const LIMIT = { timeout: 30_000 };

const T = Date.UTC(2026, 0, 1);
/** A record id as LevelStore keys it. */
const key = (id: number): string => String(id).padStart(12, '0');

const user = (id: number, email = `u${id}@example.com`): User => ({
  id,
  email,
  plan: 'pro',
  apiToken: `token-${id}-${'x'.repeat(40)}`,
  apiEnabled: true,
  webhookUrl: 'http://127.0.0.1:1/hook',
  createdAt: T,
});
const monitor = (id: number): Monitor => ({
  id,
  userId: 1,
  url: `https://m${id}.example.com/`,
  alias: `m${id}`,
  createdAt: T,
});
const check = (id: number): Check => ({
  id,
  monitorId: 1,
  userId: 1,
  name: id % 2 === 0 ? 'certificate_health' : 'uptime',
  enabled: true,
  intervalSeconds: 300,
  notificationThresholdSeconds: 60,
  expiryThresholdDays: id % 2 === 0 ? 14 : null,
});
const state = (lastCheckAt: number): CheckState => ({
  status: 'nok',
  lastCheckAt,
  lastLocation: 'local-b',
  lastHttpStatusCode: 503,
  lastError: '503 - Service Unavailable',
  lastResponseTimeMs: 120,
  outage: {
    detectedAt: lastCheckAt - 1000,
    detectedBy: 'local-a',
    verifiedVia: 'local-b',
    httpStatusCode: 503,
    error: '503 - Service Unavailable',
    lastFailureAt: lastCheckAt,
    notified: true,
  },
});
const event = (id: number): OutboxEvent => ({
  id,
  userId: 1,
  monitorId: 1,
  checkId: 1,
  type: 'uptime.down',
  body: `{"check":{"name":"uptime","n":${id}},"monitor":{"id":1}}`,
  signature: 'a'.repeat(40),
  createdAt: T + id,
  status: 'pending',
  parentAttemptId: 5,
  attempts: [
    { id: 5, try: 1, at: T + id, url: 'http://h/', status: 500, error: null, durationMs: 3 },
    {
      id: 6,
      try: 2,
      at: T + id + 10_000,
      url: 'http://h/',
      status: null,
      error: 'Connection refused',
      durationMs: 1,
    },
  ],
  nextAttemptAt: T + id + 30_000,
});

/** Resolve with `p`, or fail after `ms` (so a hanging store fails a test instead of the run). */
function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  return Promise.race([
    p,
    new Promise<T>((_, reject) =>
      setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms).unref(),
    ),
  ]);
}

/**
 * The contract every Store implementation keeps.
 * @param open opens (creating if needed) a store in `dir`
 */
export function storeContract(name: string, open: (dir: string) => Promise<Store>): void {
  describe(`Store contract: ${name}`, () => {
    /** A store in a fresh dir, closed after the test (unless the test closed it). */
    async function fresh(t: TestContext): Promise<{ dir: string; store: Store }> {
      const dir = await tempDir(t);
      const store = await open(dir);
      let closed = false;
      const close = store.close.bind(store);
      store.close = async () => {
        if (closed) return;
        closed = true;
        await close();
      };
      t.after(() => within(store.close(), 5000, 'close').catch(() => undefined));
      return { dir, store };
    }

    async function reopen(t: TestContext, dir: string, store: Store): Promise<Store> {
      await store.close();
      const again = await open(dir);
      t.after(() => within(again.close(), 5000, 'close').catch(() => undefined));
      return again;
    }

    test('a new store is empty, with the initial sequences', LIMIT, async (t) => {
      const { store } = await fresh(t);
      const snap = await store.load();
      assert.deepEqual(snap.users, []);
      assert.deepEqual(snap.monitors, []);
      assert.deepEqual(snap.checks, []);
      assert.equal(snap.states.size, 0);
      assert.equal(snap.counters.size, 0);
      assert.deepEqual(snap.events, []);
      assert.deepEqual(snap.seq, INITIAL_SEQUENCES);
    });

    test('every kind of record round-trips, also across a reopen', LIMIT, async (t) => {
      const { dir, store } = await fresh(t);
      const seq: Sequences = { user: 3, monitor: 4, check: 5, event: 6, attempt: 7 };
      await store.write([
        { kind: 'user', id: 1, value: user(1) },
        { kind: 'user', id: 2, value: { ...user(2), webhookUrl: null, apiEnabled: false } },
        { kind: 'monitor', id: 3, value: monitor(3) },
        { kind: 'check', id: 1, value: check(1) },
        { kind: 'check', id: 2, value: check(2) },
        { kind: 'state', id: 1, value: state(T + 5000) },
        { kind: 'state', id: 2, value: { ...state(T), outage: null, status: null } },
        { kind: 'event', id: 4, value: event(4) },
        { kind: 'seq', value: seq },
      ]);
      const expect = async (s: Store): Promise<void> => {
        const snap = await s.load();
        assert.deepEqual(snap.users, [
          user(1),
          { ...user(2), webhookUrl: null, apiEnabled: false },
        ]);
        assert.deepEqual(snap.monitors, [monitor(3)]);
        assert.deepEqual(snap.checks, [check(1), check(2)]);
        assert.deepEqual(
          snap.states,
          new Map<number, CheckState>([
            [1, state(T + 5000)],
            [2, { ...state(T), outage: null, status: null }],
          ]),
        );
        assert.deepEqual(snap.events, [event(4)]);
        assert.deepEqual(snap.seq, seq);
      };
      await expect(store);
      await expect(await reopen(t, dir, store));
    });

    test(
      'uptime counters: the head rides with the state, the full set is its own record',
      LIMIT,
      async (t) => {
        const { dir, store } = await fresh(t);
        const h = Math.floor(T / 3_600_000);
        const d = Math.floor(T / 86_400_000);
        const stats: PackedRunStats = [2, h - 1, 59, 60, h, 1, 1, d, 60, 61];
        const head: RunHead = [h, 30, 31, d, 89, 91];
        await store.write([
          { kind: 'state', id: 1, value: state(T), head },
          { kind: 'stats', id: 1, value: stats },
          { kind: 'state', id: 2, value: state(T), head: null }, // never ran
          { kind: 'state', id: 3, value: state(T), head },
        ]);
        // A later state write with a newer head leaves the full set as it was.
        const newer: RunHead = [h, 31, 32, d, 90, 92];
        await store.write([{ kind: 'state', id: 1, value: state(T + 1), head: newer }]);
        const expect = async (s: Store): Promise<void> => {
          const snap = await s.load();
          assert.deepEqual(snap.states.get(1), state(T + 1), 'the state itself is unchanged');
          assert.deepEqual(
            snap.counters,
            new Map([
              [1, { stats, head: newer }],
              [3, { stats: null, head }],
            ]),
          );
        };
        await expect(store);
        const again = await reopen(t, dir, store);
        await expect(again);
        // Deleting the check's records deletes its counters.
        await again.write([
          { kind: 'state', id: 1, value: null },
          { kind: 'stats', id: 1, value: null },
        ]);
        assert.deepEqual([...(await again.load()).counters.keys()], [3]);
      },
    );

    test('results: newest first per check, every field kept, limit applied', LIMIT, async (t) => {
      const { dir, store } = await fresh(t);
      const r = (checkId: number, at: number, location: string, ok: boolean): StoredResult => ({
        checkId,
        at,
        location,
        ok,
        httpStatusCode: ok ? 200 : 0,
        responseTimeMs: at - T,
        error: ok ? null : '0 - Connection refused',
      });
      const all = [
        r(1, T + 10, 'a', true),
        r(1, T + 20, 'b', false),
        r(1, T + 20, 'a', true), // same ms, two locations: both kept
        r(2, T + 30, 'a!b', true), // another check; a location with the separator in it
        r(1, T + 5, 'b', true),
      ];
      await store.write(all.map((value): StoreOp => ({ kind: 'result', value })));
      const expect = async (s: Store): Promise<void> => {
        const one = await s.results(1, 10);
        assert.deepEqual(
          one.map((x) => [x.at, x.location]),
          [
            [T + 20, 'b'],
            [T + 20, 'a'],
            [T + 10, 'a'],
            [T + 5, 'b'],
          ],
        );
        assert.deepEqual(one[0], all[1]);
        assert.deepEqual(one[2], all[0]);
        assert.deepEqual(await s.results(2, 10), [all[3]]);
        assert.equal((await s.results(1, 2)).length, 2);
        assert.deepEqual(await s.results(3, 10), []);
      };
      await expect(store);
      const again = await reopen(t, dir, store);
      await expect(again);
      await again.clearResults(1, T + 11);
      assert.deepEqual(
        (await again.results(1, 10)).map((x) => x.at),
        [T + 20, T + 20],
      );
      await again.clearResults(1, Infinity);
      assert.deepEqual(await again.results(1, 10), []);
      assert.equal((await again.results(2, 10)).length, 1, 'other checks keep theirs');
    });

    test('records load in ascending numeric id order', LIMIT, async (t) => {
      const { store } = await fresh(t);
      const ids = [10, 2, 100, 1, 9];
      await store.write(ids.map((id): StoreOp => ({ kind: 'event', id, value: event(id) })));
      await store.write(ids.map((id): StoreOp => ({ kind: 'user', id, value: user(id) })));
      const snap = await store.load();
      assert.deepEqual(
        snap.events.map((e) => e.id),
        [1, 2, 9, 10, 100],
      );
      assert.deepEqual(
        snap.users.map((u) => u.id),
        [1, 2, 9, 10, 100],
      );
    });

    test('a later write replaces a record; value null deletes it', LIMIT, async (t) => {
      const { dir, store } = await fresh(t);
      await store.write([
        { kind: 'user', id: 1, value: user(1) },
        { kind: 'monitor', id: 1, value: monitor(1) },
        { kind: 'check', id: 1, value: check(1) },
        { kind: 'state', id: 1, value: state(T) },
        { kind: 'event', id: 1, value: event(1) },
        { kind: 'event', id: 2, value: event(2) },
      ]);
      await store.write([{ kind: 'user', id: 1, value: { ...user(1), plan: 'free' } }]);
      await store.write([
        { kind: 'monitor', id: 1, value: null },
        { kind: 'check', id: 1, value: null },
        { kind: 'state', id: 1, value: null },
        { kind: 'event', id: 1, value: null },
        { kind: 'user', id: 77, value: null }, // deleting what is not there is fine
      ]);
      const expect = async (s: Store): Promise<void> => {
        const snap = await s.load();
        assert.deepEqual(snap.users, [{ ...user(1), plan: 'free' }]);
        assert.deepEqual(snap.monitors, []);
        assert.deepEqual(snap.checks, []);
        assert.equal(snap.states.size, 0);
        assert.deepEqual(
          snap.events.map((e) => e.id),
          [2],
        );
      };
      await expect(store);
      await expect(await reopen(t, dir, store));
    });

    test('all ops of one write appear together', LIMIT, async (t) => {
      const { store } = await fresh(t);
      // A reader running while a big write is applied sees all of it or none of it (load()
      // reads one kind at a time, so only within one kind is this observable).
      const ops: StoreOp[] = [];
      for (let id = 1; id <= 300; id++) {
        ops.push(
          { kind: 'check', id, value: check(id) },
          { kind: 'state', id, value: state(T + id) },
        );
      }
      const writing = store.write(ops);
      const seen: number[] = [];
      let done = false;
      void writing.then(() => (done = true));
      while (!done) seen.push((await store.load()).checks.length);
      for (const n of seen) assert.ok(n === 0 || n === 300, `partial write visible: ${n}`);
      const snap = await store.load();
      assert.equal(snap.checks.length, 300);
      assert.equal(snap.states.size, 300);
    });

    test(
      'a write that cannot be stored rejects, stores none of its ops, and the store goes on',
      LIMIT,
      async (t) => {
        const { store } = await fresh(t);
        const circular: Record<string, unknown> = { id: 2 };
        circular.self = circular;
        const bad = store.write([
          { kind: 'user', id: 1, value: user(1) },
          { kind: 'user', id: 2, value: circular as unknown as User },
        ]);
        await assert.rejects(within(bad, 2000, 'the failing write'), (err: Error) => {
          assert.doesNotMatch(
            err.message,
            /no answer within/,
            'the write hung instead of rejecting',
          );
          return true;
        });
        // The store still works, and nothing of the failed write is there.
        await within(store.write([{ kind: 'user', id: 3, value: user(3) }]), 2000, 'a later write');
        const snap = await within(store.load(), 2000, 'load');
        assert.deepEqual(
          snap.users.map((u) => u.id),
          [3],
        );
      },
    );

    test('a failing write does not fail other writes grouped with it', LIMIT, async (t) => {
      const { store } = await fresh(t);
      const circular: Record<string, unknown> = { id: 1 };
      circular.self = circular;
      // Issued in the same tick, so a group-committing store batches them together.
      const bad = store.write([{ kind: 'user', id: 1, value: circular as unknown as User }]);
      const good = store.write([{ kind: 'user', id: 2, value: user(2) }]);
      const [badResult, goodResult] = await within(
        Promise.allSettled([bad, good]),
        2000,
        'the two writes',
      );
      assert.equal(badResult.status, 'rejected');
      assert.equal(goodResult.status, 'fulfilled', 'a valid write fails because of its neighbour');
      assert.deepEqual((await store.load()).users, [user(2)]);
    });

    test('concurrent writes all land, in call order (last writer wins)', LIMIT, async (t) => {
      const { dir, store } = await fresh(t);
      const writes: Promise<void>[] = [];
      const order: number[] = [];
      for (let i = 1; i <= 200; i++) {
        writes.push(
          store
            .write([
              { kind: 'event', id: i, value: event(i) },
              { kind: 'user', id: 1, value: user(1, `v${i}@example.com`) },
            ])
            .then(() => void order.push(i)),
        );
      }
      await Promise.all(writes);
      assert.deepEqual(
        order,
        Array.from({ length: 200 }, (_, i) => i + 1),
        'writes resolve in the order they were issued',
      );
      const expect = async (s: Store): Promise<void> => {
        const snap = await s.load();
        assert.equal(snap.events.length, 200);
        assert.deepEqual(snap.users, [user(1, 'v200@example.com')]);
      };
      await expect(store);
      await expect(await reopen(t, dir, store));
    });

    test('writes queued before close() are durable', LIMIT, async (t) => {
      const { dir, store } = await fresh(t);
      const pending = store.write([{ kind: 'user', id: 1, value: user(1) }]);
      const again = await reopen(t, dir, store);
      await pending;
      assert.deepEqual((await again.load()).users, [user(1)]);
    });

    test('the sequences persist, the latest write wins', LIMIT, async (t) => {
      const { dir, store } = await fresh(t);
      await store.write([
        { kind: 'seq', value: { user: 2, monitor: 2, check: 3, event: 1, attempt: 1 } },
      ]);
      await store.write([
        { kind: 'event', id: 1, value: event(1) },
        { kind: 'seq', value: { user: 2, monitor: 2, check: 3, event: 2, attempt: 9 } },
      ]);
      const again = await reopen(t, dir, store);
      assert.deepEqual((await again.load()).seq, {
        user: 2,
        monitor: 2,
        check: 3,
        event: 2,
        attempt: 9,
      });
    });

    test(
      'a second open of a dir in use is refused with VIGIL_ERR_DATA_DIR_LOCKED',
      LIMIT,
      async (t) => {
        const { dir, store } = await fresh(t);
        await assert.rejects(open(dir), (err: unknown) => {
          assert.ok(err instanceof VigilError, `not a VigilError: ${String(err)}`);
          assert.equal(err.code, 'VIGIL_ERR_DATA_DIR_LOCKED');
          assert.equal(err.status, 409);
          return true;
        });
        // Once closed, the dir can be opened again.
        await store.close();
        const again = await open(dir);
        await again.close();
      },
    );
  });
}

storeContract('LevelStore', (dir) => LevelStore.open(dir));

describe('LevelStore: data dirs of earlier versions', () => {
  test('states with embedded counters and results as objects are read', LIMIT, async (t) => {
    const dir = await tempDir(t);
    // Records as the object forms were written before the compact ones (issue 7).
    const raw = new Level<string, unknown>(`${dir}/store`, { valueEncoding: 'json' });
    const stats: RunStats = { hours: [[493_000, 1, 2]], days: [[20_541, 1, 2]] };
    const old = { ...state(T), stats };
    const result: StoredResult = {
      checkId: 7,
      at: T,
      location: 'local-a',
      ok: false,
      httpStatusCode: 503,
      responseTimeMs: 12,
      error: '503 - Service Unavailable',
    };
    await raw.sublevel<string, unknown>('state', { valueEncoding: 'json' }).put(key(7), old);
    await raw
      .sublevel<string, unknown>('result', { valueEncoding: 'json' })
      .put(`${key(7)}!${String(T).padStart(15, '0')}!local-a`, result);
    await raw.close();

    const store = await LevelStore.open(dir);
    t.after(() => store.close());
    const snap = await store.load();
    assert.deepEqual(snap.states.get(7), state(T), 'the counters are not part of the state');
    assert.deepEqual(snap.counters.get(7), { stats, head: null });
    assert.deepEqual(await store.results(7, 10), [result]);
  });
});
