/**
 * Webhook signatures (spec §6 "Verifying a webhook", CONTRACT §6): lowercase hex HMAC-SHA1
 * of the raw body, keyed with the user's API token.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

/** `X-Service-Signature` for `rawBody` (40 lowercase hex chars). */
export function signWebhook(rawBody: string | Buffer, apiToken: string): string {
  return createHmac('sha1', apiToken).update(rawBody).digest('hex');
}

/**
 * True when `signatureHeader` is the signature of `rawBody` under `apiToken`; constant-time.
 * For receivers: pass the body bytes exactly as received, before any JSON parsing.
 */
export function verifyWebhook(
  rawBody: string | Buffer,
  signatureHeader: string | undefined | null,
  apiToken: string,
): boolean {
  if (typeof signatureHeader !== 'string' || !/^[0-9a-f]{40}$/.test(signatureHeader)) return false;
  const expected = Buffer.from(signWebhook(rawBody, apiToken), 'hex');
  return timingSafeEqual(expected, Buffer.from(signatureHeader, 'hex'));
}
