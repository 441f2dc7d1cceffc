/**
 * Time, injectable: everything that waits (schedules, thresholds, backoff, heartbeats) asks a
 * Clock, so tests can run hours of schedule in milliseconds with ManualClock.
 */

export interface TimerHandle {
  readonly id: number;
}

export interface Clock {
  /** Wall time, ms since the Unix epoch. */
  now(): number;
  /** Call `fn` after `delayMs` ms (negative = as soon as possible). */
  setTimer(fn: () => void, delayMs: number): TimerHandle;
  clearTimer(handle: TimerHandle): void;
}

/** The real clock. Timers are unref'd so they never keep a process alive on their own. */
export const systemClock: Clock = (() => {
  let seq = 0;
  const timers = new Map<number, NodeJS.Timeout>();
  return {
    now: () => Date.now(),
    setTimer(fn, delayMs) {
      const id = ++seq;
      const t = setTimeout(
        () => {
          timers.delete(id);
          fn();
        },
        Math.max(0, delayMs),
      );
      t.unref();
      timers.set(id, t);
      return { id };
    },
    clearTimer(handle) {
      const t = timers.get(handle.id);
      if (t) clearTimeout(t);
      timers.delete(handle.id);
    },
  };
})();

interface ManualTimer {
  id: number;
  at: number;
  fn: () => void;
}

/**
 * A clock that only moves when told. `advance(ms)` fires due timers in time order, awaiting
 * pending promise callbacks between them so async work triggered by a timer settles first.
 */
export class ManualClock implements Clock {
  private current: number;
  private seq = 0;
  private timers: ManualTimer[] = [];

  /** @param startMs initial wall time, ms since epoch */
  constructor(startMs = Date.UTC(2026, 0, 1)) {
    this.current = startMs;
  }

  now(): number {
    return this.current;
  }

  setTimer(fn: () => void, delayMs: number): TimerHandle {
    const timer = { id: ++this.seq, at: this.current + Math.max(0, delayMs), fn };
    this.timers.push(timer);
    return { id: timer.id };
  }

  clearTimer(handle: TimerHandle): void {
    this.timers = this.timers.filter((t) => t.id !== handle.id);
  }

  /** Number of timers not yet fired. */
  get pending(): number {
    return this.timers.length;
  }

  /** Move time forward by `ms`, firing every timer that falls due, in order. */
  async advance(ms: number): Promise<void> {
    const target = this.current + ms;
    for (;;) {
      await settle();
      let next: ManualTimer | undefined;
      for (const t of this.timers) if (t.at <= target && (!next || t.at < next.at)) next = t;
      if (!next) break;
      this.timers = this.timers.filter((t) => t !== next);
      this.current = Math.max(this.current, next.at);
      next.fn();
    }
    this.current = target;
    await settle();
  }
}

async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise<void>((r) => setImmediate(r));
}
