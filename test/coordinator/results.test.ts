/**
 * Check history and uptime figures through a real Coordinator on LevelDB (issue 6): every
 * applied run is kept, listed newest first, counted in the check object's percentages, and
 * dropped once older than the retention.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ManualClock } from '../../src/common/clock.js';
import { VigilError } from '../../src/common/errors.js';
import { Coordinator } from '../../src/coordinator/coordinator.js';
import { answer, FakeSession, quietLogger, tempDir, waitFor } from '../helpers.js';

const H = 3_600_000;

test(
  'runs are listed newest first, counted in uptime, and pruned by retention',
  { timeout: 30_000 },
  async (t) => {
    const dir = await tempDir(t);
    const clock = new ManualClock(Date.UTC(2026, 10, 1));
    const c = await Coordinator.open({
      dataDir: dir,
      clock,
      logger: quietLogger,
      resultRetentionMs: 2 * H,
    });
    t.after(() => c.close());
    c.start();
    const probe = new FakeSession('p1', 'here', 10, clock.now());
    const other = new FakeSession('p2', 'there', 10, clock.now());
    c.scheduler.sessionOpened(probe);
    c.scheduler.sessionOpened(other);
    const user = await c.createUser({ email: 'r@example.com', plan: 'pro', apiEnabled: true });
    const monitor = await c.createMonitor(user.id, { url: 'http://127.0.0.1:9/r' });
    const checkId = monitor.checks[0]?.id ?? 0;

    // Three runs: ok, a failure that the other location disagrees with, ok.
    const outcomes = [true, false, true];
    let applied = 0;
    for (const ok of outcomes) {
      await c.setCheckEnabled(user.id, checkId, true); // runs at once
      await clock.advance(0);
      const [session, req] = await waitFor(() => {
        const p = probe.take()[0];
        if (p) return [probe, p] as const;
        const o = other.take()[0];
        return o ? ([other, o] as const) : undefined;
      }, 'a run request');
      const peer = session === probe ? other : probe;
      answer(c.scheduler, session, req, { ok, startedAt: clock.now() });
      applied++;
      if (!ok) {
        await clock.advance(0);
        const verify = await waitFor(
          () => peer.take()[0],
          'the verification from the other location',
        );
        await clock.advance(1000); // the verifying run starts after the failed one
        answer(c.scheduler, peer, verify, { ok: true, startedAt: clock.now() });
        applied++;
      }
      const expected = applied;
      await waitFor(
        async () => (await c.listResults(user.id, checkId, undefined)).length >= expected,
        `the runs to be applied (${expected})`,
      );
      await clock.advance(60_000);
    }

    const results = await c.listResults(user.id, checkId, undefined);
    assert.equal(results.length, 4, 'three runs and one verification');
    const times = results.map((r) => r.checked_at);
    assert.deepEqual([...times].sort().reverse(), times, 'newest first');
    assert.deepEqual(
      results.map((r) => r.status),
      ['ok', 'ok', 'nok', 'ok'],
    );
    const failed = results[2];
    assert.equal(failed?.http_status_code, 503);
    assert.equal(failed?.error, '503 - Service Unavailable');
    assert.equal((await c.listResults(user.id, checkId, '2')).length, 2);
    for (const bad of ['0', '1001', 'x', '1.5']) {
      await assert.rejects(c.listResults(user.id, checkId, bad), (e: unknown) => {
        return e instanceof VigilError && e.code === 'VIGIL_ERR_VALIDATION';
      });
    }

    const view = c.getCheck(user.id, checkId);
    assert.deepEqual(view.uptime, { '24h': 75, '7d': 75, '30d': 75 });

    // Past the 2 h retention the hourly sweep removes them.
    await clock.advance(3 * H);
    await new Promise((r) => setTimeout(r, 50));
    const left = await c.listResults(user.id, checkId, undefined);
    assert.ok(left.length < 4, `old results pruned (left: ${left.length})`);
  },
);
