/**
 * The probe's worker-thread pool (CONTRACT §7): piscina threads running dist/workers/index.js,
 * many checks concurrently per thread (runs are network-bound, not CPU-bound).
 *
 * Crossing into a thread and back costs about as much CPU as a tenth of a run, so runs are
 * handed over in batches: every run asked for in one event-loop turn goes out in one piscina
 * task (split over the threads when there are many). Results do not wait for their batch: the
 * thread posts each one as soon as it is done (those of one of its turns together).
 */
import { availableParallelism } from 'node:os';
import { Piscina } from 'piscina';
import {
  WORKER_LOADED_MESSAGE,
  type CheckBatch,
  type CheckResultsMessage,
  type CheckTask,
  type CheckTaskResult,
} from './task.js';

/** Options of a CheckPool. */
export interface CheckPoolOptions {
  /**
   * Worker threads, all started at once and kept.
   * @default min(2, os.availableParallelism())
   */
  threads?: number;
  /**
   * Runs one thread works on at the same time.
   * @default 256
   */
  concurrentTasksPerWorker?: number;
  /**
   * Source IP for every outgoing check connection (`vigil probe --local-address`), or null
   * for the OS default. Applies to tasks that do not set their own.
   * @default null
   */
  localAddress?: string | null;
}

/** CheckPoolOptions with defaults applied. */
export interface ResolvedCheckPoolOptions {
  readonly threads: number;
  readonly concurrentTasksPerWorker: number;
  readonly localAddress: string | null;
}

/** A task for `CheckPool.run`; `localAddress` defaults to the pool's. */
export type CheckPoolTask = Omit<CheckTask, 'localAddress'> & { localAddress?: string | null };

/** Where the compiled worker entry is: this module runs from dist/src/probe/. */
const WORKER_URL = new URL('../../workers/index.js', import.meta.url);

/** Longest close() waits for threads still loading before terminating them anyway, ms. */
const LOAD_WAIT_MS = 10_000;

/**
 * How long a run asked for may wait for others to travel to a thread with it, ms. At a steady
 * 1,000 runs/s, runs arrive about one per millisecond; each crossing costs CPU on both sides
 * (a message and a wake-up), so a few ms of grouping saves most of them. A run's start moves
 * by at most this; nothing else waits for it.
 */
export const DISPATCH_WINDOW_MS = 5;

/** Runs that are handed over at once, without waiting out DISPATCH_WINDOW_MS. */
const DISPATCH_MAX_RUNS = 256;

/**
 * Fewest runs per piscina task when a turn's runs are split over several threads: below this
 * a turn's runs go to one thread (the least busy), which saves crossings.
 */
const MIN_RUNS_PER_SPLIT = 8;

/** A run() waiting for its result. */
interface Waiter {
  resolve: (result: CheckTaskResult) => void;
  reject: (err: Error) => void;
}

function isResultsMessage(message: unknown): message is CheckResultsMessage {
  return (message as { vigil?: unknown } | null)?.vigil === 'results';
}

/** Validate and freeze CheckPool options. Throws TypeError on a bad value. */
export function resolveCheckPoolOptions(options: CheckPoolOptions = {}): ResolvedCheckPoolOptions {
  const threads = options.threads ?? Math.min(2, availableParallelism());
  const concurrentTasksPerWorker = options.concurrentTasksPerWorker ?? 256;
  if (!Number.isInteger(threads) || threads < 1) {
    throw new TypeError(`threads must be a positive integer, got ${threads}`);
  }
  if (!Number.isInteger(concurrentTasksPerWorker) || concurrentTasksPerWorker < 1) {
    throw new TypeError(
      `concurrentTasksPerWorker must be a positive integer, got ${concurrentTasksPerWorker}`,
    );
  }
  return Object.freeze({
    threads,
    concurrentTasksPerWorker,
    localAddress: options.localAddress ?? null,
  });
}

/**
 * Runs checks on worker threads. `run()` resolves with the run's outcome whatever happened to
 * the site; it rejects only for faults of the pool itself (closed, worker crashed). At most
 * `capacity` runs are in flight; further ones wait in the pool, in order.
 */
export class CheckPool {
  /** The options in force. */
  readonly options: ResolvedCheckPoolOptions;
  /** Most runs in flight at once without queueing: threads × concurrentTasksPerWorker. */
  readonly capacity: number;
  /** The piscina pool; null once close() was called. */
  private piscina: Piscina<CheckBatch, number> | null;
  /** Settles when close() has finished; set by the first close(). */
  private closing: Promise<void> | null = null;
  /** Resolves once `threads` workers have reported WORKER_LOADED_MESSAGE. */
  private readonly loaded: Promise<void>;
  /** Id of the next run (CheckBatch.ids). */
  private nextId = 1;
  /** Runs handed to a thread and not answered yet, by id. */
  private readonly inFlight = new Map<number, Waiter>();
  /** Runs not handed to a thread yet, in order: this turn's, and any beyond capacity. */
  private readonly queued: Array<{ id: number; task: CheckTask; waiter: Waiter }> = [];
  /** Pending dispatch (the end of the grouping window); null when none is scheduled. */
  private dispatchTimer: NodeJS.Timeout | null = null;

  constructor(options: CheckPoolOptions = {}) {
    this.options = resolveCheckPoolOptions(options);
    this.capacity = this.options.threads * this.options.concurrentTasksPerWorker;
    this.piscina = new Piscina<CheckBatch, number>({
      filename: WORKER_URL.href,
      name: 'runBatch',
      minThreads: this.options.threads,
      maxThreads: this.options.threads,
      // A task is a batch of at least one run, so this never holds back a run the pool's
      // own capacity admits.
      concurrentTasksPerWorker: this.options.concurrentTasksPerWorker,
      // Piscina's default ('sync') parks an idle thread in Atomics.wait, which freezes every
      // timer and socket of that thread until the next task; checks are all async I/O.
      atomics: 'disabled',
      // Piscina's run/wait-time histograms are never read; they cost a little per task.
      recordTiming: false,
    });
    let loadedCount = 0;
    let resolveLoaded!: () => void;
    this.loaded = new Promise<void>((resolve) => {
      resolveLoaded = resolve;
    });
    this.piscina.on('message', (message: unknown) => {
      if (isResultsMessage(message)) {
        this.onResults(message);
        return;
      }
      const m = message as { vigil?: unknown } | null;
      if (m?.vigil !== WORKER_LOADED_MESSAGE.vigil) return;
      loadedCount += 1;
      if (loadedCount >= this.options.threads) resolveLoaded();
    });
  }

  /** Run one check on a worker thread. Rejects with "CheckPool is closed" after close(). */
  run(task: CheckPoolTask): Promise<CheckTaskResult> {
    if (this.piscina === null) return Promise.reject(new Error('CheckPool is closed'));
    const full: CheckTask = {
      checkName: task.checkName,
      url: task.url,
      timeoutMs: task.timeoutMs,
      localAddress: task.localAddress === undefined ? this.options.localAddress : task.localAddress,
    };
    return new Promise<CheckTaskResult>((resolve, reject) => {
      this.queued.push({ id: this.nextId++, task: full, waiter: { resolve, reject } });
      this.scheduleDispatch();
    });
  }

  /**
   * Hand the queued runs over once the grouping window (DISPATCH_WINDOW_MS) has passed, or
   * at once when DISPATCH_MAX_RUNS are waiting.
   */
  private scheduleDispatch(): void {
    if (this.queued.length >= DISPATCH_MAX_RUNS) {
      if (this.dispatchTimer !== null) clearTimeout(this.dispatchTimer);
      this.dispatchTimer = null;
      this.dispatch();
      return;
    }
    if (this.dispatchTimer !== null) return;
    this.dispatchTimer = setTimeout(() => {
      this.dispatchTimer = null;
      this.dispatch();
    }, DISPATCH_WINDOW_MS);
  }

  /** Send queued runs, up to capacity, as one piscina task per thread at most. */
  private dispatch(): void {
    const piscina = this.piscina;
    if (piscina === null) return;
    const count = Math.min(this.queued.length, this.capacity - this.inFlight.size);
    if (count <= 0) return;
    const runs = this.queued.splice(0, count);
    const parts = Math.max(
      1,
      Math.min(this.options.threads, Math.floor(count / MIN_RUNS_PER_SPLIT)),
    );
    for (let p = 0; p < parts; p++) {
      const from = Math.floor((p * count) / parts);
      const to = Math.floor(((p + 1) * count) / parts);
      const batch: CheckBatch = { ids: [], tasks: [] };
      for (let i = from; i < to; i++) {
        const run = runs[i]!;
        batch.ids.push(run.id);
        batch.tasks.push(run.task);
        this.inFlight.set(run.id, run.waiter);
      }
      // The task settles when all its runs are done; results arrive separately (onResults).
      // Rejected, the thread failed: its runs that have no result yet fail with it.
      piscina.run(batch).then(undefined, (err: unknown) => {
        const error = err instanceof Error ? err : new Error(String(err));
        for (const id of batch.ids) {
          const waiter = this.inFlight.get(id);
          if (waiter === undefined) continue;
          this.inFlight.delete(id);
          waiter.reject(error);
        }
        if (this.queued.length > 0) this.scheduleDispatch();
      });
    }
  }

  private onResults(message: CheckResultsMessage): void {
    const { ids, results } = message;
    for (let i = 0; i < ids.length; i++) {
      const id = ids[i] as number;
      const waiter = this.inFlight.get(id);
      if (waiter === undefined) continue;
      this.inFlight.delete(id);
      waiter.resolve(results[i] as CheckTaskResult);
    }
    if (this.queued.length > 0) this.scheduleDispatch();
  }

  /**
   * Stop the threads. Runs still in flight are abandoned and their `run()` promises reject.
   * Safe to call more than once.
   */
  close(): Promise<void> {
    if (this.closing) return this.closing;
    const piscina = this.piscina;
    this.piscina = null;
    this.closing = (piscina ? this.destroyWhenLoaded(piscina) : Promise.resolve()).finally(() =>
      this.abandon(),
    );
    return this.closing;
  }

  /** Reject every run still waiting (queued, or in flight with its result lost). */
  private abandon(): void {
    if (this.dispatchTimer !== null) clearTimeout(this.dispatchTimer);
    this.dispatchTimer = null;
    const error = new Error('CheckPool is closed');
    for (const run of this.queued.splice(0)) run.waiter.reject(error);
    for (const waiter of this.inFlight.values()) waiter.reject(error);
    this.inFlight.clear();
  }

  /**
   * Terminate the threads, but not while one is still loading its entry module: Node 20
   * aborts the process on a worker terminated in the middle of piscina's require() of an
   * ES module (v8 "IsGraphAsync must be used on an instantiated module").
   */
  private async destroyWhenLoaded(piscina: Piscina<CheckBatch, number>): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const giveUp = new Promise<void>((resolve) => {
      // Ref'd on purpose: piscina's threads are unref'd, and close() must finish even when
      // nothing else keeps the event loop alive.
      timer = setTimeout(resolve, LOAD_WAIT_MS);
    });
    try {
      await Promise.race([this.loaded, giveUp]);
    } finally {
      clearTimeout(timer);
    }
    await piscina.destroy();
  }
}
