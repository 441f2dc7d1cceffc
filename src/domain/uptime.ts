/**
 * Uptime percentages of a check over 24 h, 7 d and 30 d (issue 6), from compact counters:
 * successful and total runs per hour for the last day and per day for the last 30 days. A
 * window's percentage is over the buckets that overlap it, so the edges are whole hours (24 h)
 * or whole days (7 d, 30 d).
 *
 * In memory the counters are one fixed-size typed array per check (`RunCounters`), updated in
 * place. Stored, they are split in two so that a run rewrites only a few bytes (issue 7): the
 * newest hour and day bucket (`RunHead`) travel with the check's state record, and the full set
 * (`RunStats`) is written only when a new hour starts — i.e. when an older bucket is final.
 */

/** `[bucket index, successful runs, all runs]`; index = floor(time / bucket length). */
export type Bucket = [number, number, number];

/** Run counters per hour and per day, oldest first: the stored form of `RunCounters`. */
export interface RunStats {
  hours: Bucket[];
  days: Bucket[];
}

/** The newest hour and day bucket: what one more run changes. */
export interface RunHead {
  hour: Bucket;
  day: Bucket;
}

/** Uptime windows the API reports. */
export type UptimeWindow = '24h' | '7d' | '30d';

const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;
/** Hourly buckets kept: the current hour and the 24 before it. */
const HOURS = 25;
/** Daily buckets kept: today and the 30 days before. */
const DAYS = 31;
/** Layout of the array: [newest hour + 1, newest day + 1, hours (ok, all) × 25, days × 31]. */
const HOUR_BASE = 2;
const DAY_BASE = HOUR_BASE + 2 * HOURS;
const SIZE = DAY_BASE + 2 * DAYS;

/**
 * Successful and total runs of one check per hour (25 kept) and per day (31 kept), in rings in
 * one Uint32Array of 114 numbers (456 bytes), changed in place. Bucket indexes are whole hours
 * or days since the Unix epoch. A run older than the newest bucket of its kind is not counted
 * there (late results cannot move a window much).
 */
export class RunCounters {
  /** See the layout constants; indexes are stored + 1 so that 0 means "no run yet". */
  private readonly a = new Uint32Array(SIZE);

  /**
   * Counters holding `stats` (the stored full set), then `head` (the newer newest buckets kept
   * with the state record; they replace the buckets of the same index). Either may be absent.
   */
  static restore(stats?: RunStats | null, head?: RunHead | null): RunCounters {
    const c = new RunCounters();
    const hours = [...(stats?.hours ?? [])];
    const days = [...(stats?.days ?? [])];
    if (head) {
      hours.push(head.hour);
      days.push(head.day);
    }
    for (const b of hours) c.put(0, HOUR_BASE, HOURS, b);
    for (const b of days) c.put(1, DAY_BASE, DAYS, b);
    return c;
  }

  /** Whether no run was ever counted. */
  get empty(): boolean {
    return this.a[0] === 0;
  }

  /**
   * Count one run that started at `at` (ms since epoch).
   * @returns true when it opened a new hour: the earlier buckets are final now, and the full
   *   set (`toStats()`) must be stored before the head moves on.
   */
  record(at: number, ok: boolean): boolean {
    const opened = this.count(0, HOUR_BASE, HOURS, Math.floor(at / HOUR_MS), ok);
    this.count(1, DAY_BASE, DAYS, Math.floor(at / DAY_MS), ok);
    return opened;
  }

  /** Uptime in percent (0–100, two decimals) over the last `window` before `now`; null when no run. */
  percent(now: number, window: UptimeWindow): number | null {
    const [which, base, keep, length, count] =
      window === '24h'
        ? [0, HOUR_BASE, HOURS, HOUR_MS, 24]
        : [1, DAY_BASE, DAYS, DAY_MS, window === '7d' ? 7 : 30];
    const newest = (this.a[which] as number) - 1;
    if (newest < 0) return null;
    const first = Math.max(Math.floor(now / length) - count + 1, newest - keep + 1);
    let up = 0;
    let total = 0;
    for (let i = first; i <= newest; i++) {
      const at = base + 2 * (i % keep);
      up += this.a[at] as number;
      total += this.a[at + 1] as number;
    }
    return total === 0 ? null : Math.round((up / total) * 10_000) / 100;
  }

  /** The newest hour and day bucket, or null before the first run. */
  head(): RunHead | null {
    if (this.empty) return null;
    return { hour: this.bucket(0, HOUR_BASE, HOURS, 0), day: this.bucket(1, DAY_BASE, DAYS, 0) };
  }

  /** Every non-empty bucket, oldest first (the stored form). */
  toStats(): RunStats {
    const list = (which: 0 | 1, base: number, keep: number): Bucket[] => {
      const out: Bucket[] = [];
      if (this.a[which] === 0) return out;
      for (let back = keep - 1; back >= 0; back--) {
        const b = this.bucket(which, base, keep, back);
        if (b[2] > 0) out.push(b);
      }
      return out;
    };
    return { hours: list(0, HOUR_BASE, HOURS), days: list(1, DAY_BASE, DAYS) };
  }

  /** The bucket `back` steps before the newest of its kind. */
  private bucket(which: 0 | 1, base: number, keep: number, back: number): Bucket {
    const index = (this.a[which] as number) - 1 - back;
    if (index < 0) return [index, 0, 0];
    const at = base + 2 * (index % keep);
    return [index, this.a[at] as number, this.a[at + 1] as number];
  }

  /** Add one run to bucket `index`; true when that moved the newest bucket forward. */
  private count(which: 0 | 1, base: number, keep: number, index: number, ok: boolean): boolean {
    const moved = this.advance(which, base, keep, index);
    const newest = (this.a[which] as number) - 1;
    if (index !== newest) return moved; // older than the newest bucket: not counted
    const at = base + 2 * (index % keep);
    if (ok) this.a[at] = (this.a[at] as number) + 1;
    this.a[at + 1] = (this.a[at + 1] as number) + 1;
    return moved;
  }

  /** Make `index` the newest bucket if it is newer, emptying the slots it passes over. */
  private advance(which: 0 | 1, base: number, keep: number, index: number): boolean {
    const newest = (this.a[which] as number) - 1;
    if (index <= newest) return false;
    const from = newest < 0 || index - newest >= keep ? index - keep + 1 : newest + 1;
    for (let i = from; i <= index; i++) {
      const at = base + 2 * (((i % keep) + keep) % keep);
      this.a[at] = 0;
      this.a[at + 1] = 0;
    }
    this.a[which] = index + 1;
    return true;
  }

  /** Set one stored bucket (restore); buckets outside the kept range are dropped. */
  private put(which: 0 | 1, base: number, keep: number, b: Bucket): void {
    const [index, ok, all] = b;
    if (!Number.isInteger(index) || index < 0) return;
    this.advance(which, base, keep, index);
    const newest = (this.a[which] as number) - 1;
    if (index <= newest - keep) return;
    const at = base + 2 * (index % keep);
    this.a[at] = ok;
    this.a[at + 1] = all;
  }
}
