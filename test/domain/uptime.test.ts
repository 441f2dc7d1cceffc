/**
 * Uptime percentages from hourly and daily run counters (issue 6): windows, rounding, pruning;
 * and the compact in-memory form with its split stored form (issue 7), checked against a plain
 * list model of the counters.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  RunCounters,
  type Bucket,
  type PackedRunStats,
  type RunStats,
  type UptimeWindow,
} from '../../src/domain/uptime.js';

const H = 3_600_000;
const D = 24 * H;
const T0 = Date.UTC(2026, 10, 1);

function runs(list: Array<[number, boolean]>): RunCounters {
  const c = new RunCounters();
  for (const [at, ok] of list) c.record(at, ok);
  return c;
}

/**
 * The model: buckets as a list, the newest last, `keep` of them; a run older than the newest
 * bucket is not counted. What the counters did before they were packed into a typed array.
 */
function modelAdd(buckets: Bucket[], index: number, ok: boolean, keep: number): Bucket[] {
  const next = buckets.filter((b) => b[0] > index - keep);
  const last = next[next.length - 1];
  if (last && last[0] === index)
    next[next.length - 1] = [index, last[1] + (ok ? 1 : 0), last[2] + 1];
  else if (!last || last[0] < index) next.push([index, ok ? 1 : 0, 1]);
  return next;
}

function modelPercent(stats: RunStats, now: number, window: UptimeWindow): number | null {
  const [buckets, length, count] =
    window === '24h'
      ? [stats.hours, H, 24]
      : window === '7d'
        ? [stats.days, D, 7]
        : [stats.days, D, 30];
  const first = Math.floor(now / length) - count + 1;
  let up = 0;
  let total = 0;
  for (const [index, ok, all] of buckets) {
    if (index < first) continue;
    up += ok;
    total += all;
  }
  return total === 0 ? null : Math.round((up / total) * 10_000) / 100;
}

/** A small deterministic generator (tests must replay). */
function lcg(seed: number): () => number {
  let x = seed >>> 0;
  return () => {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    return x / 2 ** 32;
  };
}

describe('uptime percentages', () => {
  it('is null with no run in the window', () => {
    assert.equal(new RunCounters().percent(T0, '24h'), null);
    const s = runs([[T0, true]]);
    assert.equal(s.percent(T0 + 2 * D, '24h'), null, 'the only run is two days old');
    assert.equal(s.percent(T0 + 2 * D, '7d'), 100);
  });

  it('counts successful over all runs, to two decimals', () => {
    const s = runs([
      [T0, true],
      [T0 + 60_000, false],
      [T0 + 120_000, true],
    ]);
    assert.equal(s.percent(T0 + 180_000, '24h'), 66.67);
    assert.equal(s.percent(T0 + 180_000, '30d'), 66.67);
  });

  it('separates 24 h, 7 d and 30 d windows', () => {
    const s = runs([
      [T0, false], // 20 days before "now": only in 30 d
      [T0 + 15 * D, false], // 5 days before: in 7 d and 30 d
      [T0 + 20 * D - H, true], // an hour before: in all three
    ]);
    const now = T0 + 20 * D;
    assert.equal(s.percent(now, '24h'), 100);
    assert.equal(s.percent(now, '7d'), 50);
    assert.equal(s.percent(now, '30d'), 33.33);
  });

  it('keeps at most 25 hourly and 31 daily buckets', () => {
    const s = new RunCounters();
    for (let i = 0; i < 60 * 24; i += 7) s.record(T0 + i * H, true);
    const stats = s.toStats();
    assert.ok(stats.hours.length <= 25, `hours: ${stats.hours.length}`);
    assert.ok(stats.days.length <= 31, `days: ${stats.days.length}`);
  });

  it('does not count a run older than the newest bucket', () => {
    const s = runs([
      [T0 + 2 * H, true],
      [T0 + H, false], // a late result from the hour before: not in the hourly buckets
    ]);
    assert.equal(s.percent(T0 + 2 * H, '24h'), 100);
    assert.equal(s.percent(T0 + 2 * H, '7d'), 50, 'but in the day, which is still the newest');
  });

  it('record() says when a new hour starts', () => {
    const s = new RunCounters();
    assert.equal(s.record(T0, true), true, 'the first run');
    assert.equal(s.record(T0 + 60_000, true), false, 'same hour');
    assert.equal(s.record(T0 + H, true), true, 'next hour');
    assert.equal(s.record(T0 + 30_000, true), false, 'a late run from an earlier hour');
    assert.equal(s.record(T0 + D, true), true, 'next day');
  });

  it('matches the list model over 40 days of random runs, at every step', () => {
    const random = lcg(7);
    const c = new RunCounters();
    let model: RunStats = { hours: [], days: [] };
    let at = T0;
    for (let i = 0; i < 4000; i++) {
      // Mostly forward by up to 30 min, sometimes a jump of days, sometimes a late result.
      const r = random();
      at += r < 0.02 ? Math.floor(random() * 3 * D) : Math.floor(random() * 30 * 60_000);
      const runAt = r > 0.97 ? at - Math.floor(random() * 3 * H) : at;
      const ok = random() < 0.9;
      c.record(runAt, ok);
      model = {
        hours: modelAdd(model.hours, Math.floor(runAt / H), ok, 25),
        days: modelAdd(model.days, Math.floor(runAt / D), ok, 31),
      };
      const nonEmpty = (b: Bucket[]): Bucket[] => b.filter((x) => x[2] > 0);
      assert.deepEqual(c.toStats(), { hours: nonEmpty(model.hours), days: nonEmpty(model.days) });
      for (const window of ['24h', '7d', '30d'] as const) {
        const now = at + Math.floor(random() * 2 * D);
        assert.equal(c.percent(now, window), modelPercent(model, now, window), `${window} @${i}`);
      }
    }
  });
});

describe('stored form: the full set written when an hour starts, the head with every run', () => {
  it('restores exactly from the last full set plus the latest head', () => {
    const random = lcg(11);
    const live = new RunCounters();
    let stored: PackedRunStats | null = null;
    let at = T0;
    for (let i = 0; i < 3000; i++) {
      at += Math.floor(random() * 40 * 60_000);
      if (live.record(at, random() < 0.8)) stored = live.pack(); // what the actor writes
      const back = RunCounters.restore(stored, live.head());
      assert.deepEqual(back.toStats(), live.toStats(), `after run ${i}`);
      back.release();
    }
  });

  it('packs into one flat array: the number of hourly buckets, then triples', () => {
    const h = Math.floor(T0 / H);
    const d = Math.floor(T0 / D);
    const c = runs([
      [T0, true],
      [T0 + H, false],
    ]);
    assert.deepEqual(c.pack(), [2, h, 1, 1, h + 1, 0, 1, d, 1, 2]);
    assert.deepEqual(c.head(), [h + 1, 0, 1, d, 1, 2]);
    assert.deepEqual(RunCounters.restore(c.pack(), null).toStats(), c.toStats());
  });

  it('restores from the full set as lists (data dirs of earlier versions)', () => {
    const live = runs([
      [T0, true],
      [T0 + 3 * H, false],
      [T0 + 2 * D, true],
    ]);
    const back = RunCounters.restore(live.toStats(), null);
    assert.deepEqual(back.toStats(), live.toStats());
    assert.equal(back.percent(T0 + 2 * D, '30d'), live.percent(T0 + 2 * D, '30d'));
  });

  it('has no head before the first run, and restores empty from nothing', () => {
    assert.equal(new RunCounters().head(), null);
    const empty = RunCounters.restore(null, null);
    assert.equal(empty.empty, true);
    assert.deepEqual(empty.toStats(), { hours: [], days: [] });
  });

  it('drops stored buckets that are out of range or malformed', () => {
    const back = RunCounters.restore(
      {
        hours: [
          [Math.floor(T0 / H) - 100, 5, 5], // older than 25 hours before the newest
          [-3, 1, 1],
          [Math.floor(T0 / H), 1, 2],
        ],
        days: [[Math.floor(T0 / D), 1, 2]],
      },
      null,
    );
    assert.deepEqual(back.toStats(), {
      hours: [[Math.floor(T0 / H), 1, 2]],
      days: [[Math.floor(T0 / D), 1, 2]],
    });
  });
});

describe('the shared slab', () => {
  it('a released slot is reused empty, and never touches other counters', () => {
    const keep = runs([[T0, true]]);
    const many: RunCounters[] = [];
    for (let i = 0; i < 3000; i++) many.push(runs([[T0 + i * H, i % 2 === 0]])); // > one chunk
    for (const c of many) c.release();
    const again = new RunCounters();
    assert.equal(again.empty, true, 'a reused slot starts empty');
    assert.equal(again.percent(T0, '24h'), null);
    again.record(T0, false);
    assert.equal(keep.percent(T0, '24h'), 100, 'the counters kept are unchanged');
    assert.equal(again.percent(T0, '24h'), 0);
    again.release();
    again.release(); // twice is harmless
    const a = new RunCounters();
    const b = new RunCounters();
    assert.notEqual(a, b);
    a.record(T0, true);
    assert.equal(b.empty, true, 'one slot is not handed out twice');
  });
});
