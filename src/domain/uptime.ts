/**
 * Uptime percentages of a check over 24 h, 7 d and 30 d (issue 6), from compact counters:
 * successful and total runs per hour for the last day and per day for the last 30 days. A
 * window's percentage is over the buckets that overlap it, so the edges are whole hours (24 h)
 * or whole days (7 d, 30 d).
 *
 * In memory the counters of a check are 114 numbers in a shared slab (`RunCounters`), updated
 * in place. Stored, they are split in two so that a run rewrites only a few bytes (issue 7): the
 * newest hour and day bucket (`RunHead`) travel with the check's state record, and the full set
 * (`PackedRunStats`) is written only when a new hour starts — i.e. when an older bucket is final.
 */

/** `[bucket index, successful runs, all runs]`; index = floor(time / bucket length). */
export type Bucket = [number, number, number];

/** Run counters per hour and per day, oldest first: the readable form of `RunCounters`. */
export interface RunStats {
  hours: Bucket[];
  days: Bucket[];
}

/**
 * The stored full set: `[h, …h hourly triples, …daily triples]`, each triple `index, ok, all`,
 * oldest first — one flat array of numbers, cheap to write and to read back.
 */
export type PackedRunStats = number[];

/**
 * The newest hour and day bucket, what one more run changes:
 * `[hour index, ok, all, day index, ok, all]`.
 */
export type RunHead = [number, number, number, number, number, number];

/** Uptime windows the API reports. */
export type UptimeWindow = '24h' | '7d' | '30d';

const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;
/** Hourly buckets kept: the current hour and the 24 before it. */
const HOURS = 25;
/** Daily buckets kept: today and the 30 days before. */
const DAYS = 31;
/** Layout of one check's counters: [newest hour + 1, newest day + 1, hours (ok, all) × 25, days × 31]. */
const HOUR_BASE = 2;
const DAY_BASE = HOUR_BASE + 2 * HOURS;
const SIZE = DAY_BASE + 2 * DAYS;

/**
 * The process-wide slab the counters live in: chunks of `SLAB_CHUNK` checks' counters, and
 * slots given back by `release()` for reuse. One typed array per check would cost an
 * ArrayBuffer, a backing store and GC bookkeeping each (~300 bytes and ~2 µs to allocate).
 */
const SLAB_CHUNK = 1024;
const slab = { chunks: [] as Uint32Array[], free: [] as number[], used: 0 };

/**
 * Successful and total runs of one check per hour (25 kept) and per day (31 kept), as rings of
 * 114 numbers in a shared slab, changed in place. Bucket indexes are whole hours or days since
 * the Unix epoch. A run older than the newest bucket of its kind is not counted there (late
 * results cannot move a window much). `release()` gives the slot back once the check is gone.
 */
export class RunCounters {
  /** The slab chunk holding these counters, from `o` on; see the layout constants. */
  private readonly a: Uint32Array;
  /** Offset in `a`. Indexes are stored + 1 so that 0 means "no run yet". */
  private readonly o: number;
  /** Slab slot, −1 once released. */
  private slot: number;

  constructor() {
    const slot = slab.free.pop() ?? slab.used++;
    const chunk = Math.floor(slot / SLAB_CHUNK);
    this.a = slab.chunks[chunk] ??= new Uint32Array(SLAB_CHUNK * SIZE);
    this.o = (slot % SLAB_CHUNK) * SIZE;
    this.a.fill(0, this.o, this.o + SIZE);
    this.slot = slot;
  }

  /**
   * Counters holding `stats` (the stored full set, packed or — from earlier versions — as
   * lists), then `head` (the newer newest buckets kept with the state record; they replace the
   * buckets of the same index). Either may be absent.
   */
  static restore(stats?: RunStats | PackedRunStats | null, head?: RunHead | null): RunCounters {
    const c = new RunCounters();
    if (Array.isArray(stats)) {
      const hours = stats[0] ?? 0;
      for (let i = 1; i + 2 < stats.length; i += 3) {
        const b = [stats[i], stats[i + 1], stats[i + 2]] as Bucket;
        if (i < 1 + 3 * hours) c.put(0, HOUR_BASE, HOURS, b);
        else c.put(1, DAY_BASE, DAYS, b);
      }
    } else if (stats) {
      for (const b of stats.hours) c.put(0, HOUR_BASE, HOURS, b);
      for (const b of stats.days) c.put(1, DAY_BASE, DAYS, b);
    }
    if (head) {
      c.put(0, HOUR_BASE, HOURS, [head[0], head[1], head[2]]);
      c.put(1, DAY_BASE, DAYS, [head[3], head[4], head[5]]);
    }
    return c;
  }

  /** Whether no run was ever counted. */
  get empty(): boolean {
    return this.a[this.o] === 0;
  }

  /** Give the slab slot back; the counters must not be used afterwards. */
  release(): void {
    if (this.slot < 0) return;
    slab.free.push(this.slot);
    this.slot = -1;
  }

  /**
   * Count one run that started at `at` (ms since epoch).
   * @returns true when it opened a new hour: the earlier buckets are final now, and the full
   *   set (`pack()`) must be stored before the head moves on.
   */
  record(at: number, ok: boolean): boolean {
    const opened = this.count(0, HOUR_BASE, HOURS, Math.floor(at / HOUR_MS), ok);
    this.count(1, DAY_BASE, DAYS, Math.floor(at / DAY_MS), ok);
    return opened;
  }

  /** Uptime in percent (0–100, two decimals) over the last `window` before `now`; null when no run. */
  percent(now: number, window: UptimeWindow): number | null {
    const [which, base, keep, length, count]: [0 | 1, number, number, number, number] =
      window === '24h'
        ? [0, HOUR_BASE, HOURS, HOUR_MS, 24]
        : [1, DAY_BASE, DAYS, DAY_MS, window === '7d' ? 7 : 30];
    const newest = this.newest(which);
    if (newest < 0) return null;
    const first = Math.max(Math.floor(now / length) - count + 1, newest - keep + 1, 0);
    let up = 0;
    let total = 0;
    for (let i = first; i <= newest; i++) {
      const at = this.o + base + 2 * (i % keep);
      up += this.a[at] as number;
      total += this.a[at + 1] as number;
    }
    return total === 0 ? null : Math.round((up / total) * 10_000) / 100;
  }

  /** The newest hour and day bucket, or null before the first run. */
  head(): RunHead | null {
    if (this.empty) return null;
    const [h, hOk, hAll] = this.bucket(0, HOUR_BASE, HOURS, 0);
    const [d, dOk, dAll] = this.bucket(1, DAY_BASE, DAYS, 0);
    return [h, hOk, hAll, d, dOk, dAll];
  }

  /** Every non-empty bucket, oldest first, in the stored form. */
  pack(): PackedRunStats {
    const { hours, days } = this.toStats();
    const out: PackedRunStats = [hours.length];
    for (const b of hours) out.push(b[0], b[1], b[2]);
    for (const b of days) out.push(b[0], b[1], b[2]);
    return out;
  }

  /** Every non-empty bucket, oldest first. */
  toStats(): RunStats {
    const list = (which: 0 | 1, base: number, keep: number): Bucket[] => {
      const out: Bucket[] = [];
      if (this.newest(which) < 0) return out;
      for (let back = keep - 1; back >= 0; back--) {
        const b = this.bucket(which, base, keep, back);
        if (b[2] > 0) out.push(b);
      }
      return out;
    };
    return { hours: list(0, HOUR_BASE, HOURS), days: list(1, DAY_BASE, DAYS) };
  }

  /** The newest bucket index of hours (0) or days (1); −1 before the first run. */
  private newest(which: 0 | 1): number {
    return (this.a[this.o + which] as number) - 1;
  }

  /** The bucket `back` steps before the newest of its kind. */
  private bucket(which: 0 | 1, base: number, keep: number, back: number): Bucket {
    const index = this.newest(which) - back;
    if (index < 0) return [index, 0, 0];
    const at = this.o + base + 2 * (index % keep);
    return [index, this.a[at] as number, this.a[at + 1] as number];
  }

  /** Add one run to bucket `index`; true when that moved the newest bucket forward. */
  private count(which: 0 | 1, base: number, keep: number, index: number, ok: boolean): boolean {
    const moved = this.advance(which, base, keep, index);
    if (index !== this.newest(which)) return moved; // older than the newest bucket: not counted
    const at = this.o + base + 2 * (index % keep);
    if (ok) this.a[at] = (this.a[at] as number) + 1;
    this.a[at + 1] = (this.a[at + 1] as number) + 1;
    return moved;
  }

  /** Make `index` the newest bucket if it is newer, emptying the slots it passes over. */
  private advance(which: 0 | 1, base: number, keep: number, index: number): boolean {
    const newest = this.newest(which);
    if (index <= newest) return false;
    const from = newest < 0 || index - newest >= keep ? index - keep + 1 : newest + 1;
    for (let i = from; i <= index; i++) {
      const at = this.o + base + 2 * (((i % keep) + keep) % keep);
      this.a[at] = 0;
      this.a[at + 1] = 0;
    }
    this.a[this.o + which] = index + 1;
    return true;
  }

  /** Set one stored bucket (restore); buckets outside the kept range are dropped. */
  private put(which: 0 | 1, base: number, keep: number, b: Bucket): void {
    const [index, ok, all] = b;
    if (!Number.isInteger(index) || index < 0) return;
    this.advance(which, base, keep, index);
    if (index <= this.newest(which) - keep) return;
    const at = this.o + base + 2 * (index % keep);
    this.a[at] = ok;
    this.a[at + 1] = all;
  }
}
