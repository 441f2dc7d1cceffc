/**
 * The webhook events of spec §6 and how their bodies are built (CONTRACT §6: exactly
 * `{"check": {…}, "monitor": {"id","url","alias"}}`, no other fields).
 */
import type { CheckName, Monitor } from './check.js';
import { formatDuration, formatTimestamp } from './format.js';
import type { CertificateInfo } from './certificate.js';
import type { CheckEvent } from './transition.js';

/** Display names of the five webhook types (spec §6), keyed by Vigil's event type. */
export const EVENT_TITLES = {
  'uptime.down': 'Uptime Website - Down',
  'uptime.recovered': 'Uptime Website - Recovered',
  'certificate.invalid': 'SSL Certificate - Invalid',
  'certificate.recovered': 'SSL Certificate - Recovered',
  'certificate.expires_soon': 'SSL Certificate - Expires soon',
} as const;

export type EventType = keyof typeof EVENT_TITLES;

/** `check` member of a webhook body (spec §2 "Check object inside a webhook"). */
export interface WebhookCheck {
  name: CheckName;
  status: 'ok' | 'nok';
  last_check_at: string;
  error?: string;
  meta?: Record<string, string | number>;
}

/** A whole webhook body (spec §6). Member order is fixed so the bytes are stable. */
export interface WebhookBody {
  check: WebhookCheck;
  monitor: { id: number; url: string; alias: string };
}

/** Certificate meta of spec §6 (Recovered, Expires soon), in the spec's field order. */
function certificateMeta(c: CertificateInfo): Record<string, string> {
  return {
    issuer: c.issuer,
    signature_algorithm: c.signatureAlgorithm,
    valid_from: formatTimestamp(c.validFrom),
    valid_to: formatTimestamp(c.validTo),
  };
}

/**
 * The body of the webhook for `event` (spec §6 table, CONTRACT §6):
 * - Uptime Down: status nok, `error`, meta `http_status_code`, `detected_by`, `verified_via`.
 * - Uptime Recovered: status ok, meta `http_status_code`, `downtime` (`HH:MM:SS`).
 * - SSL Invalid: status nok, `error`, no meta.
 * - SSL Recovered: status ok, meta `issuer`, `signature_algorithm`, `valid_from`, `valid_to`.
 * - SSL Expires soon: status ok, meta `expires_in_days` and the four above.
 */
export function webhookBody(event: CheckEvent, monitor: Monitor): WebhookBody {
  const last_check_at = formatTimestamp(event.at);
  let check: WebhookCheck;
  switch (event.type) {
    case 'uptime.down':
      check = {
        name: 'uptime',
        status: 'nok',
        last_check_at,
        error: event.error,
        meta: {
          http_status_code: event.httpStatusCode,
          detected_by: event.detectedBy,
          verified_via: event.verifiedVia,
        },
      };
      break;
    case 'uptime.recovered':
      check = {
        name: 'uptime',
        status: 'ok',
        last_check_at,
        meta: {
          http_status_code: event.httpStatusCode,
          downtime: formatDuration(event.downtimeMs),
        },
      };
      break;
    case 'certificate.invalid':
      check = { name: 'certificate_health', status: 'nok', last_check_at, error: event.error };
      break;
    case 'certificate.recovered':
      check = {
        name: 'certificate_health',
        status: 'ok',
        last_check_at,
        meta: certificateMeta(event.certificate),
      };
      break;
    case 'certificate.expires_soon':
      check = {
        name: 'certificate_health',
        status: 'ok',
        last_check_at,
        meta: { expires_in_days: event.expiresInDays, ...certificateMeta(event.certificate) },
      };
      break;
  }
  return { check, monitor: { id: monitor.id, url: monitor.url, alias: monitor.alias } };
}

/** Delivery state of an outbox event (CONTRACT §6). */
export type DeliveryStatus = 'pending' | 'delivered' | 'failed';

/** One POST of an event to the receiver. Times ms since epoch. */
export interface DeliveryAttempt {
  /** `X-Service-Webhook` of this POST; unique across all attempts. */
  id: number;
  /** `X-Service-Current-Try`, 1-based. */
  try: number;
  at: number;
  url: string;
  /** HTTP status answered, or null when none came. */
  status: number | null;
  /** Why it failed when no status came (timeout, refused…), else null. */
  error: string | null;
  durationMs: number;
}

/**
 * A webhook event in the durable outbox. The body bytes and signature are fixed when the
 * event is created (CONTRACT §6) and sent unchanged on every try.
 */
export interface OutboxEvent {
  id: number;
  userId: number;
  monitorId: number;
  checkId: number;
  type: EventType;
  /** Serialized body: exactly the bytes that are POSTed and signed. */
  body: string;
  /** Lowercase hex HMAC-SHA1 of `body` keyed with the user's token at event time. */
  signature: string;
  createdAt: number;
  status: DeliveryStatus;
  /** `X-Service-Parent-Webhook`: id of the first attempt, null before any. */
  parentAttemptId: number | null;
  attempts: DeliveryAttempt[];
  /** Earliest time of the next try, ms since epoch (pending only). */
  nextAttemptAt: number;
  /**
   * Redelivery starts a new attempt chain: tries count from 1 again from this index of
   * `attempts`, and the 3-day limit runs from `chainStartedAt`. Absent = 0 / `createdAt`.
   */
  chainStart?: number;
  chainStartedAt?: number;
}
