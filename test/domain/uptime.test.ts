/**
 * Uptime percentages from hourly and daily run counters (issue 6): windows, rounding, pruning.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { recordRun, uptimePercent, type RunStats } from '../../src/domain/uptime.js';

const H = 3_600_000;
const D = 24 * H;
const T0 = Date.UTC(2026, 10, 1);

function runs(list: Array<[number, boolean]>): RunStats | undefined {
  let s: RunStats | undefined;
  for (const [at, ok] of list) s = recordRun(s, at, ok);
  return s;
}

describe('uptime percentages', () => {
  it('is null with no run in the window', () => {
    assert.equal(uptimePercent(undefined, T0, '24h'), null);
    const s = runs([[T0, true]]);
    assert.equal(uptimePercent(s, T0 + 2 * D, '24h'), null, 'the only run is two days old');
    assert.equal(uptimePercent(s, T0 + 2 * D, '7d'), 100);
  });

  it('counts successful over all runs, to two decimals', () => {
    const s = runs([
      [T0, true],
      [T0 + 60_000, false],
      [T0 + 120_000, true],
    ]);
    assert.equal(uptimePercent(s, T0 + 180_000, '24h'), 66.67);
    assert.equal(uptimePercent(s, T0 + 180_000, '30d'), 66.67);
  });

  it('separates 24 h, 7 d and 30 d windows', () => {
    const s = runs([
      [T0, false], // 20 days before "now": only in 30 d
      [T0 + 15 * D, false], // 5 days before: in 7 d and 30 d
      [T0 + 20 * D - H, true], // an hour before: in all three
    ]);
    const now = T0 + 20 * D;
    assert.equal(uptimePercent(s, now, '24h'), 100);
    assert.equal(uptimePercent(s, now, '7d'), 50);
    assert.equal(uptimePercent(s, now, '30d'), 33.33);
  });

  it('keeps at most 25 hourly and 31 daily buckets', () => {
    let s: RunStats | undefined;
    for (let i = 0; i < 60 * 24; i += 7) s = recordRun(s, T0 + i * H, true);
    assert.ok(s);
    assert.ok(s.hours.length <= 25, `hours: ${s.hours.length}`);
    assert.ok(s.days.length <= 31, `days: ${s.days.length}`);
  });
});
