/**
 * The scheduler's dispatch batching (issue 7): runs due within DISPATCH_AHEAD_MS of the earliest
 * due one go out with it, in one message per probe; none goes out late, none more than that
 * early, and a check's cadence stays on its own phase. Fake in-process probe sessions on a
 * ManualClock, plugged in where the gRPC server plugs in its own.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ManualClock } from '../../src/common/clock.js';
import { ProbeRegistry } from '../../src/coordinator/probe-registry.js';
import { DISPATCH_AHEAD_MS, Scheduler } from '../../src/coordinator/scheduler.js';
import { answer, FakeSession, quietLogger } from '../helpers.js';

const T0 = Date.UTC(2026, 5, 1);

/** A started scheduler with one fake probe; `batches` records each message sent to it. */
function world(dispatchAheadMs?: number): {
  clock: ManualClock;
  scheduler: Scheduler;
  batches: number[][];
} {
  const clock = new ManualClock(T0);
  const scheduler = new Scheduler({
    clock,
    registry: new ProbeRegistry(30_000),
    logger: quietLogger,
    onOutcome: () => undefined,
    ...(dispatchAheadMs === undefined ? {} : { dispatchAheadMs }),
  });
  const batches: number[][] = [];
  const session = new FakeSession('p', 'here', 1000, T0);
  session.send = (requests) => {
    batches.push(requests.map((r) => r.check_id));
    // Answered at once, as the probe would: the check is free for its next slot.
    setImmediate(() => {
      for (const r of requests) answer(scheduler, session, r, { ok: true, startedAt: clock.now() });
    });
  };
  scheduler.sessionOpened(session);
  scheduler.start();
  return { clock, scheduler, batches };
}

const add = (s: Scheduler, id: number, firstAt: number): void =>
  s.add({ id, name: 'uptime', url: `http://127.0.0.1:9/${id}`, intervalSeconds: 60 }, firstAt);

describe('scheduler dispatch batching', () => {
  test('runs due within DISPATCH_AHEAD_MS go out together, at the first one’s time', async () => {
    const { clock, scheduler, batches } = world();
    add(scheduler, 1, T0 + 1000);
    add(scheduler, 2, T0 + 1000 + DISPATCH_AHEAD_MS - 1);
    add(scheduler, 3, T0 + 1000 + DISPATCH_AHEAD_MS);
    add(scheduler, 4, T0 + 1000 + DISPATCH_AHEAD_MS + 1);
    await clock.advance(999);
    assert.deepEqual(batches, [], 'nothing before the first is due');
    await clock.advance(1);
    assert.deepEqual(batches, [[1, 2, 3]], 'one message with every run due within the window');
    await clock.advance(DISPATCH_AHEAD_MS);
    assert.deepEqual(batches, [[1, 2, 3]], 'the next one waits until it is due');
    await clock.advance(1);
    assert.deepEqual(batches, [[1, 2, 3], [4]]);
  });

  test('a run handed out early keeps its check on its own cadence', async () => {
    const { clock, scheduler, batches } = world();
    add(scheduler, 1, T0);
    add(scheduler, 2, T0 + 30); // always rides with check 1, 30 ms early
    await clock.advance(0);
    for (let i = 1; i <= 3; i++) {
      await clock.advance(60_000 - 1);
      assert.equal(batches.length, i, `run ${i + 1} not before its interval`);
      await clock.advance(1);
      assert.deepEqual(batches[i], [1, 2], `run ${i + 1} of both, one interval later`);
    }
  });

  test('dispatchAheadMs 0 hands each run out exactly when due', async () => {
    const { clock, scheduler, batches } = world(0);
    add(scheduler, 1, T0 + 1000);
    add(scheduler, 2, T0 + 1010);
    await clock.advance(1000);
    assert.deepEqual(batches, [[1]]);
    await clock.advance(10);
    assert.deepEqual(batches, [[1], [2]]);
  });

  test('a check removed and added again runs once per interval, not on its old slot too', async () => {
    // Regression: versions restarted at 1 for a re-added check, so the heap item of its old
    // schedule counted as current and the check ran on both slots.
    const { clock, scheduler, batches } = world(0);
    add(scheduler, 1, T0);
    await clock.advance(0);
    assert.deepEqual(batches, [[1]]);
    await clock.advance(10_000);
    scheduler.remove(1); // disable
    await clock.advance(10_000);
    add(scheduler, 1, clock.now()); // enable: runs at once (T0 + 20 s)
    await clock.advance(0);
    assert.deepEqual(batches, [[1], [1]]);
    await clock.advance(40_000); // T0 + 60 s: the old slot
    assert.deepEqual(batches, [[1], [1]], 'nothing on the old slot');
    await clock.advance(20_000); // T0 + 80 s: one interval after the enable
    assert.deepEqual(batches, [[1], [1], [1]]);
    await clock.advance(60_000);
    assert.deepEqual(batches, [[1], [1], [1], [1]], 'and one interval later, once');
  });
});
