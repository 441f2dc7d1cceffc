/**
 * The nouns of Vigil: users, monitors, checks and their settings (spec §2, CONTRACT §2–§3).
 * Plain data only; every time is milliseconds since the Unix epoch unless the name says
 * otherwise.
 */

/** The two kinds of check (spec §1). */
export type CheckName = 'uptime' | 'certificate_health';
export const CHECK_NAMES: readonly CheckName[] = ['uptime', 'certificate_health'];

/** Account plans (CONTRACT §2). */
export type Plan = 'free' | 'pro' | 'business';
/** Every plan name, cheapest first. */
export const PLANS: readonly Plan[] = ['free', 'pro', 'business'];

/** Every interval the spec allows, seconds (spec §2). */
export const INTERVALS_SECONDS: readonly number[] = [
  30, 60, 120, 300, 900, 1800, 3600, 7200, 14400, 28800, 86400,
];

/** Every `notification_threshold` the spec allows, seconds (spec §2). */
export const NOTIFICATION_THRESHOLDS_SECONDS: readonly number[] = [
  0, 15, 30, 60, 120, 300, 600, 900, 1800,
];

/** Every `expiry_threshold_days` value allowed besides null (CONTRACT §3). */
export const EXPIRY_THRESHOLDS_DAYS: readonly number[] = [1, 3, 7, 14, 21, 30, 60];

/** Intervals (seconds) each plan may use, by default (CONTRACT §2). */
export const DEFAULT_PLAN_INTERVALS: Readonly<Record<Plan, readonly number[]>> = {
  free: [300, 900, 1800, 3600, 7200, 14400, 28800, 86400],
  pro: [60, 120, 300, 900, 1800, 3600, 7200, 14400, 28800, 86400],
  business: [30, 60, 120, 300, 900, 1800, 3600, 7200, 14400, 28800, 86400],
};

/** An account (CONTRACT §2). */
export interface User {
  id: number;
  /** Unique, stored lower-cased. */
  email: string;
  plan: Plan;
  /** The one API token: 32 random bytes, base64url. Also the webhook signing key. */
  apiToken: string;
  apiEnabled: boolean;
  webhookUrl: string | null;
  createdAt: number;
}

/** A watched website (spec §2 Monitor). */
export interface Monitor {
  id: number;
  userId: number;
  url: string;
  alias: string;
  createdAt: number;
}

/** A check's settings: what the user controls (spec §2 Check, CONTRACT §3). */
export interface Check {
  id: number;
  monitorId: number;
  userId: number;
  name: CheckName;
  enabled: boolean;
  intervalSeconds: number;
  /** Seconds an uptime outage must last before the Down webhook (spec §2). */
  notificationThresholdSeconds: number;
  /** certificate_health only: days-left threshold for "Expires soon"; null = off. */
  expiryThresholdDays: number | null;
}

/**
 * The smallest interval on `allowed` that is ≥ `wanted`, else the largest allowed one.
 * Used for a new monitor's default intervals (CONTRACT §3).
 * @param wanted seconds
 * @param allowed the plan's intervals, seconds, ascending
 */
export function nearestAllowedInterval(wanted: number, allowed: readonly number[]): number {
  for (const s of allowed) if (s >= wanted) return s;
  return allowed[allowed.length - 1] ?? wanted;
}
