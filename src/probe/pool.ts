/**
 * The probe's worker-thread pool (CONTRACT §7): piscina threads running dist/workers/index.js,
 * many checks concurrently per thread (runs are network-bound, not CPU-bound).
 */
import { availableParallelism } from 'node:os';
import { Piscina } from 'piscina';
import { WORKER_LOADED_MESSAGE, type CheckTask, type CheckTaskResult } from './task.js';

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
 * the site; it rejects only for faults of the pool itself (closed, worker crashed).
 */
export class CheckPool {
  /** The options in force. */
  readonly options: ResolvedCheckPoolOptions;
  /** Most runs in flight at once without queueing: threads × concurrentTasksPerWorker. */
  readonly capacity: number;
  /** The piscina pool; null once close() was called. */
  private piscina: Piscina<CheckTask, CheckTaskResult> | null;
  /** Settles when close() has finished; set by the first close(). */
  private closing: Promise<void> | null = null;
  /** Resolves once `threads` workers have reported WORKER_LOADED_MESSAGE. */
  private readonly loaded: Promise<void>;

  constructor(options: CheckPoolOptions = {}) {
    this.options = resolveCheckPoolOptions(options);
    this.capacity = this.options.threads * this.options.concurrentTasksPerWorker;
    this.piscina = new Piscina<CheckTask, CheckTaskResult>({
      filename: WORKER_URL.href,
      minThreads: this.options.threads,
      maxThreads: this.options.threads,
      concurrentTasksPerWorker: this.options.concurrentTasksPerWorker,
      // Piscina's default ('sync') parks an idle thread in Atomics.wait, which freezes every
      // timer and socket of that thread until the next task; checks are all async I/O.
      atomics: 'disabled',
    });
    let loadedCount = 0;
    this.loaded = new Promise<void>((resolve) => {
      const onMessage = (message: unknown): void => {
        const m = message as { vigil?: unknown } | null;
        if (m?.vigil !== WORKER_LOADED_MESSAGE.vigil) return;
        loadedCount += 1;
        if (loadedCount >= this.options.threads) {
          this.piscina?.off('message', onMessage);
          resolve();
        }
      };
      this.piscina?.on('message', onMessage);
    });
  }

  /** Run one check on a worker thread. */
  async run(task: CheckPoolTask): Promise<CheckTaskResult> {
    if (this.piscina === null) throw new Error('CheckPool is closed');
    const full: CheckTask = {
      checkName: task.checkName,
      url: task.url,
      timeoutMs: task.timeoutMs,
      localAddress: task.localAddress === undefined ? this.options.localAddress : task.localAddress,
    };
    return this.piscina.run(full);
  }

  /**
   * Stop the threads. Runs still in flight are abandoned and their `run()` promises reject.
   * Safe to call more than once.
   */
  close(): Promise<void> {
    if (this.closing) return this.closing;
    const piscina = this.piscina;
    this.piscina = null;
    this.closing = piscina ? this.destroyWhenLoaded(piscina) : Promise.resolve();
    return this.closing;
  }

  /**
   * Terminate the threads, but not while one is still loading its entry module: Node 20
   * aborts the process on a worker terminated in the middle of piscina's require() of an
   * ES module (v8 "IsGraphAsync must be used on an instantiated module").
   */
  private async destroyWhenLoaded(piscina: Piscina<CheckTask, CheckTaskResult>): Promise<void> {
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
