/**
 * The piscina worker entry of the probe's CheckPool (CONTRACT §7). The pool calls `runBatch`:
 * one task = several runs, each routed by check name; each result is posted back when it is
 * done (with those finished within a few ms), never waiting for the rest of its batch, so a
 * slow site never holds up another site's result. `runCheck` (the default export) runs one
 * check.
 */
import { isMainThread, parentPort } from 'node:worker_threads';
import runCertificate from './certificate.js';
import runUptime from './uptime.js';
import {
  WORKER_LOADED_MESSAGE,
  type CheckBatch,
  type CheckResultsMessage,
  type CheckTask,
  type CheckTaskResult,
} from './lib/task.js';

/**
 * Errors in a check thread carry no stack trace. undici and Node create several errors per
 * run as plain control flow (every Client closed after its request ends with a "destroyed"
 * error, every aborted body with another), and capturing and formatting their stacks was about
 * a tenth of a run's CPU. Nothing here reads a stack: failures are reported by code and
 * message (lib/describe-error.ts), a Vigil bug in a run by its message.
 */
if (!isMainThread) Error.stackTraceLimit = 0;

// Announce the thread as loaded only after the require() that evaluates this module has
// returned: piscina loads the entry synchronously and a terminate() inside that call aborts
// Node 20. setImmediate runs once the loading call stack has unwound.
if (!isMainThread) setImmediate(() => parentPort?.postMessage(WORKER_LOADED_MESSAGE));

/**
 * How long a finished run's result may wait in the thread for others to travel with, ms. Each
 * message wakes the probe's main thread, and at a steady 1,000 runs/s two threads would
 * otherwise post about one message per run. Failed runs are not held: their result starts a
 * verification elsewhere (CONTRACT §5, within 2 s), so it goes out in the next turn.
 */
export const RESULT_WINDOW_MS = 10;

/** Results waiting to be posted, and when they go. */
let outbox: CheckResultsMessage | null = null;
let flushTimer: NodeJS.Timeout | null = null;
let flushSoon = false;

function postResult(id: number, result: CheckTaskResult): void {
  if (outbox === null) outbox = { vigil: 'results', ids: [], results: [] };
  outbox.ids.push(id);
  outbox.results.push(result);
  if (!result.ok) {
    if (!flushSoon) {
      flushSoon = true;
      setImmediate(flushResults);
    }
  } else if (flushTimer === null && !flushSoon) {
    flushTimer = setTimeout(flushResults, RESULT_WINDOW_MS);
  }
}

function flushResults(): void {
  if (flushTimer !== null) clearTimeout(flushTimer);
  flushTimer = null;
  flushSoon = false;
  const message = outbox;
  outbox = null;
  if (message !== null) parentPort?.postMessage(message);
}

/**
 * Run every check of `batch` at once. Each result is posted to the pool in a
 * CheckResultsMessage when it is done (within RESULT_WINDOW_MS); the returned promise resolves
 * with the number of runs once all are done, and never rejects.
 */
export function runBatch(batch: CheckBatch): Promise<number> {
  const count = batch.tasks.length;
  return new Promise((resolve) => {
    let left = count;
    if (left === 0) resolve(0);
    for (let i = 0; i < count; i++) {
      const id = batch.ids[i] as number;
      void runCheck(batch.tasks[i] as CheckTask).then((result) => {
        postResult(id, result);
        left -= 1;
        if (left === 0) resolve(count);
      });
    }
  });
}

/** Run one check. A check this probe cannot run yet comes back marked `unsupported`. */
export default async function runCheck(task: CheckTask): Promise<CheckTaskResult> {
  const startedAtMs = Date.now();
  try {
    switch (task.checkName) {
      case 'uptime':
        return await runUptime(task);
      case 'certificate_health':
        return await runCertificate(task);
      default:
        return unsupported(startedAtMs, `0 - Unknown check ${JSON.stringify(task.checkName)}`);
    }
  } catch (err) {
    // Only a Vigil bug lands here; report it as data so the thread boundary stays clean.
    const message = err instanceof Error ? err.message : String(err);
    return {
      ok: false,
      httpStatusCode: 0,
      error: `0 - Probe error: ${message}`,
      responseTimeMs: Date.now() - startedAtMs,
      startedAtMs,
      // Marked unsupported so the coordinator ignores it instead of opening an outage.
      detail: { unsupported: true, probeError: true },
    };
  }
}

function unsupported(startedAtMs: number, error: string): CheckTaskResult {
  return {
    ok: false,
    httpStatusCode: 0,
    error,
    responseTimeMs: 0,
    startedAtMs,
    detail: { unsupported: true },
  };
}
