/**
 * Formats shared by the API and the webhooks (spec §2).
 */

const pad2 = (n: number): string => (n < 10 ? `0${n}` : String(n));

/**
 * A point in time as `YYYY-MM-DD HH:MM:SS` in UTC (spec §2 `last_check_at`, CONTRACT §3).
 * @param ms milliseconds since the Unix epoch
 */
export function formatTimestamp(ms: number): string {
  const d = new Date(ms);
  return (
    `${d.getUTCFullYear()}-${pad2(d.getUTCMonth() + 1)}-${pad2(d.getUTCDate())} ` +
    `${pad2(d.getUTCHours())}:${pad2(d.getUTCMinutes())}:${pad2(d.getUTCSeconds())}`
  );
}

/**
 * A duration as `HH:MM:SS`, hours at least two digits and never wrapped at 24
 * (spec §2 `downtime`, CONTRACT §5), e.g. 176_587_000 ms → `"49:03:07"`.
 * Fractions of a second are dropped; a negative duration counts as zero.
 * @param ms duration in milliseconds
 */
export function formatDuration(ms: number): string {
  const total = Math.max(0, Math.floor(ms / 1000));
  const hours = Math.floor(total / 3600);
  const minutes = Math.floor((total % 3600) / 60);
  return `${pad2(hours)}:${pad2(minutes)}:${pad2(total % 60)}`;
}
