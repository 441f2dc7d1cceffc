/**
 * The uptime state machine of spec §3 with the detection → verification → threshold rules of
 * CONTRACT §5, as one pure function. The check actor feeds it results and timer ticks and
 * carries out the effects it returns; nothing here does I/O or reads a clock.
 */
import {
  certificateFromDetail,
  expiresInDays,
  isUnreachable,
  type CertificateInfo,
} from './certificate.js';
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
  /**
   * certificate_health: "Expires soon" already sent, as `<fingerprint256>:<threshold days>`
   * keys, newest last (a few kept). A renewed certificate or a new threshold is a new key.
   */
  expiryNotices?: string[];
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

/** Webhook-worthy transitions of a certificate_health check (spec §6). */
export type CertificateEvent =
  | { type: 'certificate.invalid'; at: number; error: string }
  | { type: 'certificate.recovered'; at: number; certificate: CertificateInfo }
  | {
      type: 'certificate.expires_soon';
      at: number;
      certificate: CertificateInfo;
      expiresInDays: number;
    };

/** Any event a transition emits. */
export type CheckEvent = UptimeEvent | CertificateEvent;

/** What the actor must do after a step. */
export type Effect =
  /** Run the check again now from a location other than `excludeLocation`. */
  | { type: 'verify'; excludeLocation: string }
  /** Run the check again at `at` (ms since epoch), from any location. */
  | { type: 'recheck'; at: number }
  /** Emit this webhook event (written to the outbox with the new state). */
  | { type: 'event'; event: CheckEvent };

export interface Step {
  state: CheckState;
  effects: Effect[];
}

/**
 * Whether `step` (applied to `before`) is a routine run: it changed nothing but the last-run
 * fields (`lastCheckAt`, `lastLocation`, `lastHttpStatusCode`, `lastError`,
 * `lastResponseTimeMs`) — same status, the same outage (none, or the very same object), the same
 * "Expires soon" keys, and no effect. Everything else is a transition, which the check actor
 * writes to the store before it carries out the effects; a routine run may be written later, in
 * bulk (issue 7).
 */
export function isRoutineStep(before: CheckState, step: Step): boolean {
  const after = step.state;
  return (
    step.effects.length === 0 &&
    after.status === before.status &&
    after.outage === before.outage &&
    after.expiryNotices === before.expiryNotices
  );
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

/** Settings the certificate machine reads. */
export interface CertificateRules {
  /** CONTRACT §3 `expiry_threshold_days`; null = no "Expires soon". */
  expiryThresholdDays: number | null;
}

/** How many "Expires soon" keys a check remembers. */
const EXPIRY_NOTICES_KEPT = 8;

/**
 * Apply one run's outcome to a certificate_health check (spec §3, CONTRACT §5). Invalid and
 * valid-again follow the uptime rules (verified from a second location, no threshold) and
 * become "SSL Certificate - Invalid" / "- Recovered". A run that could not connect changes
 * only the last-run fields. A valid certificate with `expiry_threshold_days` set and that
 * many days or fewer left sends "Expires soon" once per certificate per threshold.
 */
export function applyCertificateResult(
  state: CheckState,
  run: RunOutcome,
  rules: CertificateRules,
): Step {
  if (state.lastCheckAt !== null && run.at < state.lastCheckAt) return { state, effects: [] };
  const certificate = certificateFromDetail(run.detail);
  if (!run.ok && (isUnreachable(run.detail) || certificate === null)) {
    return {
      state: {
        ...state,
        lastCheckAt: run.at,
        lastLocation: run.location,
        lastHttpStatusCode: run.httpStatusCode,
        lastError: run.error,
        lastResponseTimeMs: run.responseTimeMs,
      },
      effects: [],
    };
  }
  const step = applyUptimeResult(state, run, { notificationThresholdSeconds: 0 });
  const effects: Effect[] = [];
  for (const effect of step.effects) {
    if (effect.type !== 'event') effects.push(effect);
    else if (effect.event.type === 'uptime.down') {
      effects.push({
        type: 'event',
        event: { type: 'certificate.invalid', at: effect.event.at, error: effect.event.error },
      });
    } else if (effect.event.type === 'uptime.recovered' && certificate) {
      effects.push({
        type: 'event',
        event: { type: 'certificate.recovered', at: run.at, certificate },
      });
    }
  }
  let next = step.state;
  if (run.ok && certificate && rules.expiryThresholdDays !== null) {
    const days = expiresInDays(certificate.validTo, run.at);
    const key = `${certificate.fingerprint256}:${rules.expiryThresholdDays}`;
    const notices = next.expiryNotices ?? [];
    if (days <= rules.expiryThresholdDays && !notices.includes(key)) {
      next = { ...next, expiryNotices: [...notices, key].slice(-EXPIRY_NOTICES_KEPT) };
      effects.push({
        type: 'event',
        event: { type: 'certificate.expires_soon', at: run.at, certificate, expiresInDays: days },
      });
    }
  }
  return { state: next, effects };
}
