/**
 * The bulk writer of routine runs (issue 7). A check's routine run — nothing changed but its
 * last-run fields, its uptime counters and its history — is kept in memory by the check actor;
 * this writer collects every such check and writes them all in one batch at most
 * `ROUTINE_FLUSH_MS` later, instead of one write per run.
 *
 * What a crash can lose (SIGKILL, power): the routine runs applied in the last
 * `ROUTINE_FLUSH_MS` before it, plus those of a bulk write still in flight — their history
 * records, their last-run fields (`last_check_at` may show an earlier run) and their count in
 * the uptime percentages, consistently (state, counters and history are in one batch). Nothing
 * acknowledged is lost: transitions, outbox events and settings are written at once and awaited
 * (CONTRACT §6, §8); no probe result is acknowledged to the probe. A clean `close()` writes
 * everything.
 */
import type { Clock, TimerHandle } from '../common/clock.js';
import type { Logger } from '../common/logger.js';
import type { Store, StoreOp } from './store/store.js';

/**
 * The longest a routine run waits in memory before its bulk write is issued, ms: the bound on
 * what a crash loses (see the file comment). One second turns the 2,000 writes a second of
 * 120,000 checks at 60 s into one batch a second.
 */
export const ROUTINE_FLUSH_MS = 1000;

/** What the writer needs from a check actor. */
export interface UnsavedSource {
  /** Ops bringing the store up to date with the source, now considered saved. */
  takeUnsaved(): StoreOp[];
  /**
   * The write of ops from `takeUnsaved()` finished; when `ok` is false the source takes them
   * back as unsaved (the writer tries again with its next bulk write).
   */
  unsavedWritten(ops: readonly StoreOp[], ok: boolean): void;
}

/** Collects checks with unsaved routine runs and writes them in bulk; see the file comment. */
export class RoutineWriter {
  private dirty = new Set<UnsavedSource>();
  private timer: TimerHandle | null = null;
  /** Bulk writes issued and not yet settled. */
  private readonly inflight = new Set<Promise<void>>();
  private closed = false;

  /**
   * @param flushMs the longest wait before a bulk write, ms. @default ROUTINE_FLUSH_MS
   */
  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    private readonly log: Logger,
    private readonly flushMs = ROUTINE_FLUSH_MS,
  ) {}

  /** Number of sources waiting for the next bulk write. */
  get pending(): number {
    return this.dirty.size;
  }

  /** `source` has unsaved runs: write them with the next bulk write. */
  add(source: UnsavedSource): void {
    if (this.closed) return;
    this.dirty.add(source);
    this.timer ??= this.clock.setTimer(() => {
      this.timer = null;
      void this.flush();
    }, this.flushMs);
  }

  /**
   * Write everything unsaved now, in one batch, and wait for that and any bulk write still in
   * flight. A failed write is logged and its sources stay unsaved (tried again with the next
   * bulk write); never rejects.
   */
  async flush(): Promise<void> {
    if (this.timer) this.clock.clearTimer(this.timer);
    this.timer = null;
    const writing = this.writeDirty();
    this.inflight.add(writing);
    void writing.finally(() => this.inflight.delete(writing));
    await Promise.all([...this.inflight]);
  }

  private async writeDirty(): Promise<void> {
    if (this.dirty.size === 0) return;
    const sources = this.dirty;
    this.dirty = new Set();
    const parts: Array<[UnsavedSource, StoreOp[]]> = [];
    const ops: StoreOp[] = [];
    for (const source of sources) {
      const part = source.takeUnsaved();
      if (part.length === 0) continue;
      parts.push([source, part]);
      for (const op of part) ops.push(op);
    }
    if (ops.length === 0) return;
    try {
      await this.store.write(ops);
    } catch (err) {
      this.log.error({ err, ops: ops.length }, 'bulk write of routine runs failed');
      for (const [source, part] of parts) {
        source.unsavedWritten(part, false);
        this.add(source);
      }
      return;
    }
    for (const [source, part] of parts) source.unsavedWritten(part, true);
  }

  /** Write everything unsaved and stop; later `add()`s are ignored (the process is stopping). */
  async close(): Promise<void> {
    await this.flush();
    this.closed = true;
    if (this.timer) this.clock.clearTimer(this.timer);
    this.timer = null;
  }
}
