/**
 * Times in certificate error texts: `YYYY-MM-DD HH:MM:SS` in UTC (the shape of every
 * timestamp Vigil shows, CONTRACT §5) and "N days ago" / "in N days". A local copy of the
 * domain's formatter because workers import nothing from src/.
 */

/** One day, ms. */
export const DAY_MS = 86_400_000;

/** `YYYY-MM-DD HH:MM:SS` in UTC, e.g. `2026-10-01 12:00:00`. */
export function formatUtc(ms: number): string {
  if (!Number.isFinite(ms)) return 'an unknown date';
  const d = new Date(ms);
  if (Number.isNaN(d.getTime())) return 'an unknown date';
  const p = (n: number, width = 2): string => String(n).padStart(width, '0');
  return (
    `${p(d.getUTCFullYear(), 4)}-${p(d.getUTCMonth() + 1)}-${p(d.getUTCDate())} ` +
    `${p(d.getUTCHours())}:${p(d.getUTCMinutes())}:${p(d.getUTCSeconds())}`
  );
}

/** Whole days in `ms`, rounded down. */
function wholeDays(ms: number): number {
  return Math.floor(Math.abs(ms) / DAY_MS);
}

/** How long ago `thenMs` was at `nowMs`: `"51 days ago"`, `"1 day ago"`, `"less than a day ago"`. */
export function daysAgo(thenMs: number, nowMs: number): string {
  const n = wholeDays(nowMs - thenMs);
  if (n === 0) return 'less than a day ago';
  return n === 1 ? '1 day ago' : `${n} days ago`;
}

/** How far ahead `thenMs` is at `nowMs`: `"in 3 days"`, `"in 1 day"`, `"in less than a day"`. */
export function daysAhead(thenMs: number, nowMs: number): string {
  const n = wholeDays(thenMs - nowMs);
  if (n === 0) return 'in less than a day';
  return n === 1 ? 'in 1 day' : `in ${n} days`;
}
