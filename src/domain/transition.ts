/**
 * The uptime state machine of spec §3 with the detection → verification → threshold rules of
 * CONTRACT §5, as one pure function. The check actor feeds it results and timer ticks and
 * carries out the effects it returns; nothing here does I/O or reads a clock.
 */
import type { RunOutcome } from './result.js';

/** Status of a check as users see it: `null` until the first run (CONTRACT §3). */
export type CheckStatus = 'ok' | 'nok' | null;

/**
 * An outage that a failed run opened. Phases, derived from the fields:
 * - verifying: `verifiedVia === null` (waiting for the run from another location)
 * - confirmed: verified, `notified === false` (waiting for `notification_threshold`)
 * - notified: the Down webhook was emitted; a Recovered webhook will follow.
 */
export interface Outage {
  /** Start of the detecting run, ms since epoch; `downtime` counts from here. */
  detectedAt: number;
  detectedBy: string;
  verifiedVia: string | null;
  /** Status code and error of the latest failing run. */
  httpStatusCode: number;
  error: string;
  /** Start of the latest failing run, ms since epoch. */
  lastFailureAt: number;
  notified: boolean;
}

/** Everything the coordinator keeps about one check besides its settings. */
export interface CheckState {
  status: CheckStatus;
  /** Start of the latest run whose result was applied, ms since epoch, or null. */
  lastCheckAt: number | null;
  lastLocation: string | null;
  lastHttpStatusCode: number | null;
  lastError: string | null;
  lastResponseTimeMs: number | null;
  outage: Outage | null;
}

/** A fresh check that never ran. */
export function initialCheckState(): CheckState {
  return {
    status: null,
    lastCheckAt: null,
    lastLocation: null,
    lastHttpStatusCode: null,
    lastError: null,
    lastResponseTimeMs: null,
    outage: null,
  };
}

/** Webhook-worthy transitions of an uptime check (spec §6). */
export type UptimeEvent =
  | {
      type: 'uptime.down';
      at: number;
      httpStatusCode: number;
      error: string;
      detectedBy: string;
      verifiedVia: string;
    }
  | { type: 'uptime.recovered'; at: number; httpStatusCode: number; downtimeMs: number };

/** What the actor must do after a step. */
export type Effect =
  /** Run the check again now from a location other than `excludeLocation`. */
  | { type: 'verify'; excludeLocation: string }
  /** Run the check again at `at` (ms since epoch), from any location. */
  | { type: 'recheck'; at: number }
  /** Emit this webhook event (written to the outbox with the new state). */
  | { type: 'event'; event: UptimeEvent };

export interface Step {
  state: CheckState;
  effects: Effect[];
}

/** Settings the machine reads. */
export interface UptimeRules {
  /** CONTRACT §5 `notification_threshold`, seconds. */
  notificationThresholdSeconds: number;
}

/**
 * Apply one run's outcome to an uptime check (spec §3, CONTRACT §5).
 *
 * - No outage, run fails → open an outage (detecting location) and ask for verification.
 * - Verifying, a failing run from another location or a verification run → confirmed;
 *   threshold 0 emits Down now, otherwise a re-check is asked for at detection + threshold.
 * - Verifying, a run succeeds → false alarm: the outage is dropped, no webhook.
 * - Confirmed, a failing run at or after detection + threshold → Down.
 * - Any success while an outage is open ends it; Recovered only if Down was emitted.
 * Results older than the latest applied one are ignored (late arrivals).
 */
export function applyUptimeResult(state: CheckState, run: RunOutcome, rules: UptimeRules): Step {
  if (state.lastCheckAt !== null && run.at < state.lastCheckAt) return { state, effects: [] };
  const seen: CheckState = {
    ...state,
    lastCheckAt: run.at,
    lastLocation: run.location,
    lastHttpStatusCode: run.httpStatusCode,
    lastError: run.ok ? null : run.error,
    lastResponseTimeMs: run.responseTimeMs,
  };
  const outage = state.outage;

  if (run.ok) {
    if (outage === null) return { state: { ...seen, status: 'ok' }, effects: [] };
    if (outage.verifiedVia === null) {
      // Verification disagreed: the failure was local to one probe. Keep the status.
      return { state: { ...seen, status: state.status ?? 'ok', outage: null }, effects: [] };
    }
    const effects: Effect[] = outage.notified
      ? [
          {
            type: 'event',
            event: {
              type: 'uptime.recovered',
              at: run.at,
              httpStatusCode: run.httpStatusCode,
              downtimeMs: run.at - outage.detectedAt,
            },
          },
        ]
      : [];
    return { state: { ...seen, status: 'ok', outage: null }, effects };
  }

  if (outage === null) {
    const opened: Outage = {
      detectedAt: run.at,
      detectedBy: run.location,
      verifiedVia: null,
      httpStatusCode: run.httpStatusCode,
      error: run.error,
      lastFailureAt: run.at,
      notified: false,
    };
    return {
      state: { ...seen, status: state.status, outage: opened },
      effects: [{ type: 'verify', excludeLocation: run.location }],
    };
  }

  const failing: Outage = {
    ...outage,
    httpStatusCode: run.httpStatusCode,
    error: run.error,
    lastFailureAt: run.at,
  };
  if (outage.verifiedVia === null) {
    const verifies = run.purpose === 'verify' || run.location !== outage.detectedBy;
    if (!verifies) return { state: { ...seen, outage: failing }, effects: [] };
    return confirm(
      { ...seen, status: 'nok' },
      { ...failing, verifiedVia: run.location },
      run,
      rules,
    );
  }
  if (outage.notified) return { state: { ...seen, status: 'nok', outage: failing }, effects: [] };
  return confirm({ ...seen, status: 'nok' }, failing, run, rules);
}

/**
 * A verified outage: emit Down once the threshold has passed, else ask for the re-check
 * that will decide.
 */
function confirm(seen: CheckState, outage: Outage, run: RunOutcome, rules: UptimeRules): Step {
  const dueAt = outage.detectedAt + rules.notificationThresholdSeconds * 1000;
  if (run.at < dueAt) {
    // Ask for the deciding re-check when newly verified, or again when a re-check came back
    // early (the threshold was raised meanwhile).
    const ask = seen.outage?.verifiedVia === null || run.purpose === 'recheck';
    const effects: Effect[] = ask ? [{ type: 'recheck', at: dueAt }] : [];
    return { state: { ...seen, outage }, effects };
  }
  const verifiedVia = outage.verifiedVia ?? run.location;
  return {
    state: { ...seen, outage: { ...outage, verifiedVia, notified: true } },
    effects: [
      {
        type: 'event',
        event: {
          type: 'uptime.down',
          at: run.at,
          httpStatusCode: outage.httpStatusCode,
          error: outage.error,
          detectedBy: outage.detectedBy,
          verifiedVia,
        },
      },
    ],
  };
}
