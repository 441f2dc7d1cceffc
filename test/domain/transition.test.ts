/**
 * The uptime state machine (spec §3, CONTRACT §5) as a pure function: every transition,
 * driven by hand-made run outcomes.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { RunOutcome, RunPurpose } from '../../src/domain/result.js';
import {
  applyUptimeResult,
  initialCheckState,
  type CheckState,
  type Effect,
  type Step,
  type UptimeRules,
} from '../../src/domain/transition.js';

const T0 = Date.UTC(2026, 0, 1, 12, 0, 0);
const S = 1000;
const NO_THRESHOLD: UptimeRules = { notificationThresholdSeconds: 0 };
const THRESHOLD_60: UptimeRules = { notificationThresholdSeconds: 60 };

function run(
  ok: boolean,
  at: number,
  location: string,
  purpose: RunPurpose = 'scheduled',
  status = ok ? 200 : 503,
  error = ok ? '' : `${status} - Service Unavailable`,
): RunOutcome {
  return {
    ok,
    httpStatusCode: status,
    error,
    responseTimeMs: 17,
    at,
    location,
    purpose,
    detail: null,
  };
}

const ok = (at: number, location = 'a', purpose: RunPurpose = 'scheduled'): RunOutcome =>
  run(true, at, location, purpose);
const fail = (
  at: number,
  location = 'a',
  purpose: RunPurpose = 'scheduled',
  status = 503,
  error = `${status} - Service Unavailable`,
): RunOutcome => run(false, at, location, purpose, status, error);

/** Apply runs in turn, returning every step. */
function applyAll(state: CheckState, runs: RunOutcome[], rules: UptimeRules): Step[] {
  const steps: Step[] = [];
  for (const r of runs) {
    const step = applyUptimeResult(state, r, rules);
    steps.push(step);
    state = step.state;
  }
  return steps;
}

const events = (step: Step): Effect[] => step.effects.filter((e) => e.type === 'event');

/** A check that is `ok` after one successful run at T0 from `a`. */
function okState(): CheckState {
  return applyUptimeResult(initialCheckState(), ok(T0), NO_THRESHOLD).state;
}

describe('applyUptimeResult', { timeout: 30_000 }, () => {
  test('a fresh check has no status and no outage', () => {
    const s = initialCheckState();
    assert.equal(s.status, null);
    assert.equal(s.lastCheckAt, null);
    assert.equal(s.outage, null);
  });

  test('null → ok on the first success, recording the run, no effects', () => {
    const step = applyUptimeResult(initialCheckState(), ok(T0, 'b'), NO_THRESHOLD);
    assert.deepEqual(step.effects, []);
    assert.deepEqual(step.state, {
      status: 'ok',
      lastCheckAt: T0,
      lastLocation: 'b',
      lastHttpStatusCode: 200,
      lastError: null,
      lastResponseTimeMs: 17,
      outage: null,
    });
  });

  test('ok → a failure from A opens an outage and asks to verify from another location', () => {
    const step = applyUptimeResult(okState(), fail(T0 + 300 * S, 'a'), NO_THRESHOLD);
    assert.deepEqual(step.effects, [{ type: 'verify', excludeLocation: 'a' }]);
    // Not down yet: one probe's failure is not enough.
    assert.equal(step.state.status, 'ok');
    assert.deepEqual(step.state.outage, {
      detectedAt: T0 + 300 * S,
      detectedBy: 'a',
      verifiedVia: null,
      httpStatusCode: 503,
      error: '503 - Service Unavailable',
      lastFailureAt: T0 + 300 * S,
      notified: false,
    });
    assert.equal(step.state.lastError, '503 - Service Unavailable');
    assert.equal(step.state.lastCheckAt, T0 + 300 * S);
  });

  test('verification from B fails, threshold 0 → Down (detected by A, verified via B), status nok', () => {
    const tDetect = T0 + 300 * S;
    const tVerify = tDetect + 1500;
    const [, verified] = applyAll(
      okState(),
      [fail(tDetect, 'a'), fail(tVerify, 'b', 'verify', 500, '500 - Internal Server Error')],
      NO_THRESHOLD,
    );
    assert.ok(verified);
    assert.deepEqual(verified.effects, [
      {
        type: 'event',
        event: {
          type: 'uptime.down',
          at: tVerify,
          httpStatusCode: 500,
          error: '500 - Internal Server Error',
          detectedBy: 'a',
          verifiedVia: 'b',
        },
      },
    ]);
    assert.equal(verified.state.status, 'nok');
    assert.equal(verified.state.outage?.notified, true);
    assert.equal(verified.state.outage?.verifiedVia, 'b');
    assert.equal(
      verified.state.outage?.detectedAt,
      tDetect,
      'downtime still counts from detection',
    );
  });

  test('a scheduled failure from another location also verifies', () => {
    const [, verified] = applyAll(
      okState(),
      [fail(T0 + 300 * S, 'a'), fail(T0 + 301 * S, 'b', 'scheduled')],
      NO_THRESHOLD,
    );
    assert.ok(verified);
    assert.equal(events(verified).length, 1);
    assert.equal(verified.state.outage?.verifiedVia, 'b');
  });

  test('verification that disagrees (B succeeds) → no event, outage cleared, status unchanged', () => {
    const [, disagreed] = applyAll(
      okState(),
      [fail(T0 + 300 * S, 'a'), ok(T0 + 301 * S, 'b', 'verify')],
      NO_THRESHOLD,
    );
    assert.ok(disagreed);
    assert.deepEqual(disagreed.effects, []);
    assert.equal(disagreed.state.outage, null);
    assert.equal(disagreed.state.status, 'ok');
  });

  test('disagreeing verification on a never-run check reports ok', () => {
    const [, disagreed] = applyAll(
      initialCheckState(),
      [fail(T0, 'a'), ok(T0 + 1 * S, 'b', 'verify')],
      NO_THRESHOLD,
    );
    assert.ok(disagreed);
    assert.deepEqual(disagreed.effects, []);
    assert.equal(disagreed.state.outage, null);
    assert.equal(disagreed.state.status, 'ok');
  });

  test('threshold > 0: verification asks for a re-check at detectedAt + threshold, no event yet', () => {
    const tDetect = T0 + 300 * S;
    const [, verified] = applyAll(
      okState(),
      [fail(tDetect, 'a'), fail(tDetect + 800, 'b', 'verify')],
      THRESHOLD_60,
    );
    assert.ok(verified);
    assert.deepEqual(verified.effects, [{ type: 'recheck', at: tDetect + 60 * S }]);
    assert.equal(verified.state.outage?.verifiedVia, 'b');
    assert.equal(verified.state.outage?.notified, false);
  });

  test('threshold > 0: a failing re-check at detectedAt + threshold → Down', () => {
    const tDetect = T0 + 300 * S;
    const steps = applyAll(
      okState(),
      [
        fail(tDetect, 'a'),
        fail(tDetect + 800, 'b', 'verify'),
        fail(tDetect + 60 * S, 'a', 'recheck', 502, '502 - Bad Gateway'),
      ],
      THRESHOLD_60,
    );
    const recheck = steps[2];
    assert.ok(recheck);
    assert.deepEqual(recheck.effects, [
      {
        type: 'event',
        event: {
          type: 'uptime.down',
          at: tDetect + 60 * S,
          httpStatusCode: 502,
          error: '502 - Bad Gateway',
          detectedBy: 'a',
          verifiedVia: 'b',
        },
      },
    ]);
    assert.equal(recheck.state.status, 'nok');
    assert.equal(recheck.state.outage?.notified, true);
  });

  test('threshold > 0: a failing scheduled run before the threshold sends nothing and asks nothing', () => {
    const tDetect = T0 + 300 * S;
    const steps = applyAll(
      okState(),
      [fail(tDetect, 'a'), fail(tDetect + 1 * S, 'b', 'verify'), fail(tDetect + 30 * S, 'a')],
      THRESHOLD_60,
    );
    assert.deepEqual(steps[2]?.effects, []);
    assert.equal(steps[2]?.state.outage?.notified, false);
  });

  test('threshold > 0: a re-check that comes back early asks for the re-check again', () => {
    // The threshold was raised while the re-check was pending.
    const tDetect = T0 + 300 * S;
    const steps = applyAll(
      okState(),
      [fail(tDetect, 'a'), fail(tDetect + 1 * S, 'b', 'verify')],
      THRESHOLD_60,
    );
    const state = steps[1]?.state;
    assert.ok(state);
    const early = applyUptimeResult(state, fail(tDetect + 60 * S, 'a', 'recheck'), {
      notificationThresholdSeconds: 120,
    });
    assert.deepEqual(early.effects, [{ type: 'recheck', at: tDetect + 120 * S }]);
  });

  test('outage shorter than the threshold (success before the re-check) → neither Down nor Recovered', () => {
    const tDetect = T0 + 300 * S;
    const steps = applyAll(
      okState(),
      [
        fail(tDetect, 'a'),
        fail(tDetect + 1 * S, 'b', 'verify'),
        ok(tDetect + 30 * S, 'a'),
        // The re-check, had it still run, would find the site up.
        ok(tDetect + 60 * S, 'b', 'recheck'),
      ],
      THRESHOLD_60,
    );
    for (const step of steps) assert.deepEqual(events(step), []);
    assert.equal(steps[2]?.state.outage, null);
    assert.equal(steps[2]?.state.status, 'ok');
  });

  test('a notified outage ends with Recovered, downtimeMs = success.at − detectedAt', () => {
    const tDetect = T0 + 300 * S;
    const tUp = tDetect + 49 * 3600 * S + 3 * 60 * S + 7 * S;
    const steps = applyAll(
      okState(),
      [
        fail(tDetect, 'a'),
        fail(tDetect + 2 * S, 'b', 'verify'),
        fail(tDetect + 300 * S, 'b'),
        run(true, tUp, 'b', 'scheduled', 301),
      ],
      NO_THRESHOLD,
    );
    assert.deepEqual(steps[2]?.effects, [], 'no second Down while down');
    const up = steps[3];
    assert.ok(up);
    assert.deepEqual(up.effects, [
      {
        type: 'event',
        event: {
          type: 'uptime.recovered',
          at: tUp,
          httpStatusCode: 301,
          downtimeMs: tUp - tDetect,
        },
      },
    ]);
    assert.equal(up.state.status, 'ok');
    assert.equal(up.state.outage, null);
    assert.equal(up.state.lastError, null);
  });

  test('after Recovered, a new failure opens a new outage', () => {
    const steps = applyAll(
      okState(),
      [
        fail(T0 + 300 * S, 'a'),
        fail(T0 + 301 * S, 'b', 'verify'),
        ok(T0 + 600 * S, 'a'),
        fail(T0 + 900 * S, 'b'),
      ],
      NO_THRESHOLD,
    );
    assert.deepEqual(steps[3]?.effects, [{ type: 'verify', excludeLocation: 'b' }]);
    assert.equal(steps[3]?.state.outage?.detectedAt, T0 + 900 * S);
    assert.equal(steps[3]?.state.outage?.notified, false);
  });

  test('late (older) results are ignored', () => {
    const down = applyAll(
      okState(),
      [fail(T0 + 300 * S, 'a'), fail(T0 + 301 * S, 'b', 'verify')],
      NO_THRESHOLD,
    )[1];
    assert.ok(down);
    // A success that started before the latest applied run arrives late.
    const late = applyUptimeResult(down.state, ok(T0 + 200 * S, 'b'), NO_THRESHOLD);
    assert.equal(late.state, down.state, 'state object unchanged');
    assert.deepEqual(late.effects, []);
    // And a late failure on an ok check opens nothing.
    const lateFail = applyUptimeResult(okState(), fail(T0 - 1, 'a'), NO_THRESHOLD);
    assert.equal(lateFail.state.outage, null);
    assert.deepEqual(lateFail.effects, []);
  });

  test('a failing scheduled run from the detecting location while verifying does not verify', () => {
    const steps = applyAll(
      okState(),
      [fail(T0 + 300 * S, 'a'), fail(T0 + 303 * S, 'a', 'scheduled', 504, '504 - Gateway Timeout')],
      NO_THRESHOLD,
    );
    const again = steps[1];
    assert.ok(again);
    assert.deepEqual(again.effects, []);
    assert.equal(again.state.outage?.verifiedVia, null);
    assert.equal(again.state.outage?.notified, false);
    assert.equal(again.state.outage?.detectedAt, T0 + 300 * S);
    assert.equal(again.state.status, 'ok');
  });

  test('a verify run from the same location (single-location fallback) verifies, verifiedVia = it', () => {
    const steps = applyAll(
      okState(),
      [fail(T0 + 300 * S, 'a'), fail(T0 + 305 * S, 'a', 'verify')],
      NO_THRESHOLD,
    );
    const verified = steps[1];
    assert.ok(verified);
    const evs = events(verified);
    assert.equal(evs.length, 1);
    const ev = evs[0];
    assert.ok(ev?.type === 'event' && ev.event.type === 'uptime.down');
    assert.equal(ev.event.detectedBy, 'a');
    assert.equal(ev.event.verifiedVia, 'a');
    assert.equal(verified.state.status, 'nok');
  });

  test('the input state is never mutated', () => {
    const before = okState();
    const copy = structuredClone(before);
    applyAll(before, [fail(T0 + 300 * S, 'a'), fail(T0 + 301 * S, 'b', 'verify')], NO_THRESHOLD);
    applyUptimeResult(before, fail(T0 + 300 * S, 'a'), NO_THRESHOLD);
    assert.deepEqual(before, copy);
  });
});
