/**
 * Value rules of the API and the CLI (spec §2, CONTRACT §2–§3), as pure functions that return
 * field errors instead of throwing, so both edges phrase them the same way. Numbers must be
 * JSON numbers: `"60"` (a string) is refused, consistently, with a 422.
 */
import {
  EXPIRY_THRESHOLDS_DAYS,
  INTERVALS_SECONDS,
  NOTIFICATION_THRESHOLDS_SECONDS,
  PLANS,
  type Check,
  type Plan,
} from './check.js';

/** Field name → messages, as in the 422 body (CONTRACT §4). */
export type FieldErrors = Record<string, string[]>;

const list = (values: readonly number[]): string => values.join(', ');

/** A settings change that passed validation. */
export interface CheckChange {
  intervalSeconds?: number;
  notificationThresholdSeconds?: number;
  expiryThresholdDays?: number | null;
}

/**
 * What is wrong with `value` as a check interval (seconds, spec §2) for a user on `plan`,
 * or null when it is a whole number of seconds on the spec's list and on the plan.
 */
export function intervalProblem(
  value: unknown,
  plan: Plan,
  planIntervals: readonly number[],
): string | null {
  if (typeof value !== 'number' || !Number.isInteger(value)) {
    return 'The interval must be a whole number of seconds.';
  }
  if (!INTERVALS_SECONDS.includes(value)) {
    return `The interval must be one of ${list(INTERVALS_SECONDS)}.`;
  }
  if (!planIntervals.includes(value)) {
    return `The interval ${value} is not available on the ${plan} plan.`;
  }
  return null;
}

/**
 * Validate a `PUT /webapi/checks/{id}` body against the check and the user's plan.
 * At least one known field must be present; unknown fields are ignored (CONTRACT §3).
 */
export function validateCheckPatch(
  patch: Record<string, unknown>,
  check: Check,
  plan: Plan,
  planIntervals: readonly number[],
): { change: CheckChange; errors: FieldErrors | null } {
  const errors: FieldErrors = {};
  const change: CheckChange = {};
  const has = (k: string): boolean => Object.prototype.hasOwnProperty.call(patch, k);

  if (has('interval')) {
    const problem = intervalProblem(patch.interval, plan, planIntervals);
    if (problem) errors.interval = [problem];
    else change.intervalSeconds = patch.interval as number;
  }
  if (has('notification_threshold')) {
    const v = patch.notification_threshold;
    if (typeof v !== 'number' || !Number.isInteger(v)) {
      errors.notification_threshold = [
        'The notification threshold must be a whole number of seconds.',
      ];
    } else if (!NOTIFICATION_THRESHOLDS_SECONDS.includes(v)) {
      errors.notification_threshold = [
        `The notification threshold must be one of ${list(NOTIFICATION_THRESHOLDS_SECONDS)}.`,
      ];
    } else change.notificationThresholdSeconds = v;
  }
  if (has('expiry_threshold_days')) {
    const v = patch.expiry_threshold_days;
    if (check.name !== 'certificate_health') {
      errors.expiry_threshold_days = [
        'The expiry threshold applies to certificate_health checks only.',
      ];
    } else if (v !== null && (typeof v !== 'number' || !EXPIRY_THRESHOLDS_DAYS.includes(v))) {
      errors.expiry_threshold_days = [
        `The expiry threshold must be null or one of ${list(EXPIRY_THRESHOLDS_DAYS)}.`,
      ];
    } else change.expiryThresholdDays = v as number | null;
  }
  if (Object.keys(errors).length === 0 && Object.keys(change).length === 0) {
    errors.interval = [
      'Give at least one of interval, notification_threshold' +
        (check.name === 'certificate_health' ? ', expiry_threshold_days.' : '.'),
    ];
  }
  return { change, errors: Object.keys(errors).length > 0 ? errors : null };
}

/** Why `value` is not a usable monitor URL (http/https, a host, no credentials), or null. */
export function monitorUrlProblem(value: unknown): string | null {
  if (typeof value !== 'string' || value.trim() === '') return 'The url is required.';
  if (value.length > 2048) return 'The url must be at most 2048 characters.';
  let u: URL;
  try {
    u = new URL(value);
  } catch {
    return 'The url must be a valid http:// or https:// URL.';
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') {
    return 'The url must start with http:// or https://.';
  }
  if (u.username || u.password) return 'The url must not contain credentials.';
  if (!u.hostname) return 'The url must have a host.';
  return null;
}

/** Why `value` is not a usable webhook URL, or null. `null` itself (no webhook) is fine. */
export function webhookUrlProblem(value: unknown): string | null {
  if (value === null) return null;
  const problem = monitorUrlProblem(value);
  return problem?.replace(/^The url/, 'The webhook url') ?? null;
}

/** Why `value` is not an email address, or null. */
export function emailProblem(value: unknown): string | null {
  if (
    typeof value !== 'string' ||
    !/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(value) ||
    value.length > 254
  ) {
    return 'The email must be a valid email address.';
  }
  return null;
}

/** Why `value` is not a plan name, or null. */
export function planProblem(value: unknown): string | null {
  return typeof value === 'string' && (PLANS as readonly string[]).includes(value)
    ? null
    : `The plan must be one of ${PLANS.join(', ')}.`;
}
