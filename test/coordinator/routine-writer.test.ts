/**
 * Routine runs written in bulk (issue 7) and what a crash can lose: real LevelDB in temp dirs,
 * a ManualClock. A crash is simulated by copying the data dir while the coordinator runs: LevelDB
 * hands every batch to the OS before the write resolves, so the copy holds exactly what a
 * SIGKILL at that moment would leave behind.
 */
import assert from 'node:assert/strict';
import { cp } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, test, type TestContext } from 'node:test';
import { ManualClock } from '../../src/common/clock.js';
import { Coordinator } from '../../src/coordinator/coordinator.js';
import {
  ROUTINE_FLUSH_MS,
  RoutineWriter,
  type UnsavedSource,
} from '../../src/coordinator/routine-writer.js';
import { LevelStore } from '../../src/coordinator/store/level-store.js';
import type { Store, StoreOp } from '../../src/coordinator/store/store.js';
import type { User } from '../../src/domain/check.js';
import { formatTimestamp } from '../../src/domain/format.js';
import { answer, FakeSession, quietLogger, tempDir, waitFor } from '../helpers.js';

const LIMIT = { timeout: 30_000 };
const S = 1000;

const user = (id: number, email = `u${id}@example.com`): User => ({
  id,
  email,
  plan: 'pro',
  apiToken: 'x'.repeat(43),
  apiEnabled: true,
  webhookUrl: null,
  createdAt: 0,
});

/** A store whose writes are counted (the real LevelStore underneath). */
async function countingStore(t: TestContext): Promise<{ store: Store; writes: StoreOp[][] }> {
  const store = await LevelStore.open(await tempDir(t));
  t.after(() => store.close());
  const writes: StoreOp[][] = [];
  const write = store.write.bind(store);
  store.write = (ops) => {
    writes.push(ops);
    return write(ops);
  };
  return { store, writes };
}

/** An UnsavedSource handing out `ops` once; failed ops come back as unsaved. */
class Source implements UnsavedSource {
  failed: StoreOp[][] = [];
  constructor(public ops: StoreOp[]) {}
  takeUnsaved(): StoreOp[] {
    const out = this.ops;
    this.ops = [];
    return out;
  }
  unsavedWritten(ops: readonly StoreOp[], ok: boolean): void {
    if (ok) return;
    this.failed.push([...ops]);
    this.ops = [...ops, ...this.ops];
  }
}

describe('RoutineWriter', () => {
  test('writes every source in one batch, ROUTINE_FLUSH_MS after the first', LIMIT, async (t) => {
    const { store, writes } = await countingStore(t);
    const clock = new ManualClock();
    const writer = new RoutineWriter(store, clock, quietLogger);
    const a = new Source([{ kind: 'user', id: 1, value: user(1) }]);
    const b = new Source([{ kind: 'user', id: 2, value: user(2) }]);
    writer.add(a);
    await clock.advance(ROUTINE_FLUSH_MS / 2);
    writer.add(b);
    writer.add(a); // twice: still once in the batch
    assert.equal(writer.pending, 2);
    await clock.advance(ROUTINE_FLUSH_MS / 2 - 1);
    assert.equal(writes.length, 0, 'nothing before ROUTINE_FLUSH_MS');
    await clock.advance(1);
    await writer.flush(); // waits for the write in flight
    assert.equal(writes.length, 1, 'one batch');
    assert.deepEqual(
      (await store.load()).users.map((u) => u.id),
      [1, 2],
    );
    await clock.advance(10 * ROUTINE_FLUSH_MS);
    assert.equal(writes.length, 1, 'no timer while nothing is unsaved');
  });

  test(
    'a failed write is logged, given back, and written by the next bulk write',
    LIMIT,
    async (t) => {
      const { store } = await countingStore(t);
      const clock = new ManualClock();
      const writer = new RoutineWriter(store, clock, quietLogger);
      const circular: Record<string, unknown> = { id: 1 };
      circular.self = circular;
      const bad = new Source([{ kind: 'user', id: 1, value: circular as unknown as User }]);
      writer.add(bad);
      await writer.flush();
      assert.equal(bad.failed.length, 1, 'the source got its ops back');
      // Fix the value; the source is already queued again for the next bulk write.
      bad.ops = [{ kind: 'user', id: 1, value: user(1) }];
      assert.equal(writer.pending, 1);
      await clock.advance(ROUTINE_FLUSH_MS);
      await writer.flush();
      assert.deepEqual((await store.load()).users, [user(1)]);
    },
  );

  test('close() writes what is unsaved; later runs are not taken', LIMIT, async (t) => {
    const { store, writes } = await countingStore(t);
    const clock = new ManualClock();
    const writer = new RoutineWriter(store, clock, quietLogger);
    writer.add(new Source([{ kind: 'user', id: 1, value: user(1) }]));
    await writer.close();
    assert.equal(writes.length, 1);
    writer.add(new Source([{ kind: 'user', id: 2, value: user(2) }]));
    assert.equal(writer.pending, 0);
    await clock.advance(10 * ROUTINE_FLUSH_MS);
    assert.equal(writes.length, 1);
  });
});

describe('a crash loses at most the routine runs of the last ROUTINE_FLUSH_MS', () => {
  test(
    'transitions are durable at once, routine runs after the bulk write; uptime and history agree',
    LIMIT,
    async (t) => {
      const dir = await tempDir(t);
      // 10:55, so that the second run (11:00) opens a new hour of the uptime counters.
      const clock = new ManualClock(Date.UTC(2026, 10, 2, 10, 55, 0));
      const c = await Coordinator.open({ dataDir: dir, clock, logger: quietLogger });
      t.after(() => c.close());
      c.start();
      const sessions = [
        new FakeSession('pa', 'a', 10, clock.now()),
        new FakeSession('pb', 'b', 10, clock.now()),
      ];
      for (const s of sessions) c.scheduler.sessionOpened(s);
      const owner = await c.createUser({ email: 'o@example.com', plan: 'pro', apiEnabled: true });
      const monitor = await c.createMonitor(owner.id, { url: 'http://127.0.0.1:9/crash' });
      const checkId = monitor.checks[0]?.id ?? 0;
      const times: number[] = [];

      /** Answer the one run request sent now, and wait until the actor applied it. */
      const run = async (ok: boolean): Promise<void> => {
        await clock.advance(0);
        const [session, req] = await waitFor(() => {
          for (const s of sessions) {
            const r = s.take()[0];
            if (r) return [s, r] as const;
          }
          return undefined;
        }, 'a run request');
        answer(c.scheduler, session, req, { ok, startedAt: clock.now() });
        times.push(clock.now());
        const at = formatTimestamp(clock.now());
        await waitFor(
          () => c.getCheck(owner.id, checkId).last_check_at === at,
          'the run to be applied',
        );
      };

      /** What a SIGKILL now would leave: a copy of the data dir, opened as after a restart. */
      const images: Array<{ name: string; dir: string }> = [];
      const crash = async (name: string): Promise<void> => {
        const copy = join(await tempDir(t), 'data');
        await cp(dir, copy, { recursive: true });
        images.push({ name, dir: copy });
      };

      await run(true); // the first run: status null → ok, a transition
      await crash('after the first run');
      await clock.advance(300 * S);
      await run(true); // routine, and the first of a new hour
      await crash('a routine run, before the bulk write');
      await clock.advance(ROUTINE_FLUSH_MS);
      await c.flush(); // the timer issued the bulk write; wait until it is durable
      await crash('a routine run, after the bulk write');
      await clock.advance(300 * S - ROUTINE_FLUSH_MS);
      await run(true); // routine
      await clock.advance(300 * S);
      await run(false); // opens an outage: a transition, written with the routine run before it
      await crash('an outage opened');
      await run(false); // the verification: Down, an outbox event
      await crash('Down emitted');

      const expected = [
        { runs: 1, last: times[0], status: 'ok', uptime: 100, events: 0 },
        { runs: 1, last: times[0], status: 'ok', uptime: 100, events: 0 },
        { runs: 2, last: times[1], status: 'ok', uptime: 100, events: 0 },
        { runs: 4, last: times[3], status: 'ok', uptime: 75, events: 0 },
        { runs: 5, last: times[4], status: 'nok', uptime: 60, events: 1 },
      ];
      for (const [i, image] of images.entries()) {
        const want = expected[i];
        assert.ok(want && want.last !== undefined);
        const after = await Coordinator.open({
          dataDir: image.dir,
          clock: new ManualClock(clock.now()),
          logger: quietLogger,
        });
        try {
          const view = after.getCheck(owner.id, checkId);
          const results = await after.listResults(owner.id, checkId, undefined);
          const got = {
            runs: results.length,
            last: view.last_check_at,
            status: view.status,
            uptime: view.uptime['24h'],
            events: after.listWebhooks(owner.id, {}).total,
          };
          assert.deepEqual(
            got,
            { ...want, last: formatTimestamp(want.last) },
            `crash image "${image.name}"`,
          );
          assert.deepEqual(
            results.map((r) => r.checked_at),
            times.slice(0, want.runs).reverse().map(formatTimestamp),
            `history of "${image.name}"`,
          );
        } finally {
          await after.close();
        }
      }
    },
  );
});
