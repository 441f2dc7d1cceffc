/**
 * Exponential backoff with jitter, shared by webhook delivery and probe reconnects.
 */

export interface BackoffOptions {
  /** First delay, ms. */
  initialMs: number;
  /** Upper bound of any delay, ms. */
  maxMs: number;
  /** Jitter as a fraction of the delay, 0–1; the delay is drawn from ±jitter around it. */
  jitter: number;
}

/**
 * Delay before retry number `attempt` (1 = the retry after the first failure), ms:
 * `initialMs · 2^(attempt−1)`, capped at `maxMs`, then spread by ±`jitter` (never above
 * `maxMs`). `random` is injectable for tests.
 */
export function backoffDelayMs(
  attempt: number,
  opts: BackoffOptions,
  random: () => number = Math.random,
): number {
  const base = Math.min(opts.maxMs, opts.initialMs * 2 ** Math.max(0, attempt - 1));
  const spread = base * opts.jitter * (random() * 2 - 1);
  return Math.max(0, Math.min(opts.maxMs, Math.round(base + spread)));
}
