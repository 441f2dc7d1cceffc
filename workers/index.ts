/**
 * The piscina worker entry of the probe's CheckPool (CONTRACT §7): one task = one run of one
 * check, routed by check name. Resolves with a CheckTaskResult in every case.
 */
import { isMainThread, parentPort } from 'node:worker_threads';
import runCertificate from './certificate.js';
import runUptime from './uptime.js';
import { WORKER_LOADED_MESSAGE, type CheckTask, type CheckTaskResult } from './lib/task.js';

// Announce the thread as loaded only after the require() that evaluates this module has
// returned: piscina loads the entry synchronously and a terminate() inside that call aborts
// Node 20. setImmediate runs once the loading call stack has unwound.
if (!isMainThread) setImmediate(() => parentPort?.postMessage(WORKER_LOADED_MESSAGE));

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
