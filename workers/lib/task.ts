/**
 * The shapes that cross the thread boundary between the probe's CheckPool and its workers
 * (CONTRACT §7). Plain, structured-clone-safe data only: no classes, no functions, no errors.
 * Defined here so that workers never import from src/; src/probe/task.ts re-exports them.
 */

/**
 * Check names a worker can be asked to run: the domain's CheckName (src/domain/check.ts),
 * spelled out because workers import nothing from src/ (src/probe/task.ts checks they agree).
 */
export type WorkerCheckName = 'uptime' | 'certificate_health';

/** One run of one check, as handed to a worker. */
export interface CheckTask {
  /** Which check to run; decides the worker routine (CONTRACT §5). */
  checkName: WorkerCheckName;
  /** The monitor's URL, absolute, `http:` or `https:`. */
  url: string;
  /** Total time budget for the whole run (DNS, connect, TLS, redirects, body), ms. Normally 30000. */
  timeoutMs: number;
  /** Source IP every outgoing connection of this run binds to (`--local-address`), or null for the OS default. */
  localAddress: string | null;
}

/**
 * What one run produced (proto RunResult minus the ids). A site being down is a result,
 * never an exception: workers always resolve with one of these.
 */
export interface CheckTaskResult {
  /** True when the check passed (uptime: final status 200–399). */
  ok: boolean;
  /** Final HTTP status, or 0 when no HTTP answer came (CONTRACT §5). */
  httpStatusCode: number;
  /** `"<status> - <reason phrase>"` or `"0 - <what happened>"`; empty when ok. */
  error: string;
  /** Wall time of the whole run, from start until the body was read, ms (fractional). */
  responseTimeMs: number;
  /** When the run started, ms since the Unix epoch. */
  startedAtMs: number;
  /**
   * Check-specific details, JSON-serializable, or null. Uptime: phase timings (ms) and the
   * number of redirects followed. certificate_health: `{ certificate }` (the leaf's issuer,
   * signature algorithm, validity and fingerprint) after a handshake, `{ unreachable: true }`
   * without one (workers/certificate.ts). `{ unsupported: true }` marks a check this probe
   * cannot run.
   */
  detail: Record<string, unknown> | null;
}

/**
 * One piscina task: several runs handed to a worker thread in one crossing. The task resolves
 * (with the number of runs) once every run of it is done; each run's result comes back on its
 * own, as soon as it is done, in a CheckResultsMessage.
 */
export interface CheckBatch {
  /** The pool's ids of the runs, one per task, in the same order. */
  ids: number[];
  tasks: CheckTask[];
}

/**
 * Posted by a worker thread on `parentPort` (piscina hands it to the pool as a `'message'`
 * event): results of runs that finished in the same event-loop turn of that thread. `ids[i]`
 * is the pool's id (CheckBatch.ids) of the run whose result is `results[i]`.
 */
export interface CheckResultsMessage {
  vigil: 'results';
  ids: number[];
  results: CheckTaskResult[];
}

/**
 * Posted by a worker thread on `parentPort` once its entry module has loaded. CheckPool waits
 * for it before terminating threads: Node 20 aborts the whole process when a worker is
 * terminated while piscina is still `require()`-ing an ES module entry.
 */
export const WORKER_LOADED_MESSAGE = Object.freeze({ vigil: 'worker-loaded' });
