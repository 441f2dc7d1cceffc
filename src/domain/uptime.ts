/**
 * Uptime percentages of a check over 24 h, 7 d and 30 d (issue 6), from compact counters
 * kept with the check's state: successful and total runs per hour for the last day and per
 * day for the last 30 days. A window's percentage is over the buckets that overlap it, so the
 * edges are whole hours (24 h) or whole days (7 d, 30 d).
 */

/** `[bucket index, successful runs, all runs]`; index = floor(time / bucket length). */
export type Bucket = [number, number, number];

/** Run counters per hour and per day, oldest first. */
export interface RunStats {
  hours: Bucket[];
  days: Bucket[];
}

const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;

/** Counters of a check that never ran. */
export function emptyRunStats(): RunStats {
  return { hours: [], days: [] };
}

function add(buckets: Bucket[], index: number, ok: boolean, keep: number): Bucket[] {
  const next = buckets.filter((b) => b[0] > index - keep);
  const last = next[next.length - 1];
  if (last && last[0] === index) {
    next[next.length - 1] = [index, last[1] + (ok ? 1 : 0), last[2] + 1];
  } else if (!last || last[0] < index) {
    next.push([index, ok ? 1 : 0, 1]);
  }
  return next;
}

/**
 * Count one run that started at `at` (ms since epoch).
 * Runs older than the newest bucket are not counted (they cannot move a window much).
 */
export function recordRun(stats: RunStats | undefined, at: number, ok: boolean): RunStats {
  const s = stats ?? emptyRunStats();
  return {
    hours: add(s.hours, Math.floor(at / HOUR_MS), ok, 25),
    days: add(s.days, Math.floor(at / DAY_MS), ok, 31),
  };
}

/** Uptime in percent (0–100, two decimals) over the last `window` before `now`; null when no run. */
export function uptimePercent(
  stats: RunStats | undefined,
  now: number,
  window: '24h' | '7d' | '30d',
): number | null {
  if (!stats) return null;
  const [buckets, length, count] =
    window === '24h'
      ? [stats.hours, HOUR_MS, 24]
      : window === '7d'
        ? [stats.days, DAY_MS, 7]
        : [stats.days, DAY_MS, 30];
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
