/**
 * The shapes that cross the thread boundary between the probe and its check workers
 * (CONTRACT §7). They live in workers/lib/task.ts so that workers import nothing from src/;
 * this module is where probe code takes them from.
 */
import { CHECK_NAMES } from '../domain/check.js';
import type { CheckTask } from '../../workers/lib/task.js';

export type {
  CheckBatch,
  CheckResultsMessage,
  CheckTask,
  CheckTaskResult,
  WorkerCheckName,
} from '../../workers/lib/task.js';
export { WORKER_LOADED_MESSAGE } from '../../workers/lib/task.js';

/**
 * Every check name of the domain, typed as the workers' names: fails to compile if the
 * domain gains a check the worker shapes do not know.
 */
export const WORKER_CHECK_NAMES: readonly CheckTask['checkName'][] = CHECK_NAMES;
