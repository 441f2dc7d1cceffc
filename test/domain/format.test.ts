/**
 * Timestamps and durations (spec §2, CONTRACT §5) and the exact shape of the uptime webhook
 * bodies (spec §6, CONTRACT §6).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Monitor } from '../../src/domain/check.js';
import { EVENT_TITLES, webhookBody } from '../../src/domain/events.js';
import { formatDuration, formatTimestamp } from '../../src/domain/format.js';

describe('formatTimestamp', { timeout: 30_000 }, () => {
  test('UTC YYYY-MM-DD HH:MM:SS, zero-padded, milliseconds dropped', () => {
    assert.equal(formatTimestamp(Date.UTC(2026, 0, 2, 3, 4, 5, 999)), '2026-01-02 03:04:05');
    assert.equal(formatTimestamp(Date.UTC(2025, 11, 31, 23, 59, 59)), '2025-12-31 23:59:59');
    assert.equal(formatTimestamp(0), '1970-01-01 00:00:00');
  });

  test('does not depend on the local time zone', () => {
    // Date.UTC input; a local-time implementation would shift hours here for TZ != UTC.
    const s = formatTimestamp(Date.UTC(2026, 6, 15, 0, 30, 0));
    assert.match(s, /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/);
    assert.equal(s, '2026-07-15 00:30:00');
  });
});

describe('formatDuration', { timeout: 30_000 }, () => {
  const h = 3600_000;
  const m = 60_000;
  const s = 1000;
  test('zero', () => assert.equal(formatDuration(0), '00:00:00'));
  test('59 s, fractions dropped', () => {
    assert.equal(formatDuration(59 * s), '00:00:59');
    assert.equal(formatDuration(59 * s + 999), '00:00:59');
  });
  test('3661 s → 01:01:01', () => assert.equal(formatDuration(3661 * s), '01:01:01'));
  test('exactly 24 h is not wrapped', () => assert.equal(formatDuration(24 * h), '24:00:00'));
  test('over 24 h: 176587000 ms → 49:03:07', () => {
    assert.equal(formatDuration(176_587_000), '49:03:07');
    assert.equal(formatDuration(49 * h + 3 * m + 7 * s), '49:03:07');
  });
  test('100+ hours → three hour digits', () => {
    assert.equal(formatDuration(123 * h + 45 * m + 6 * s), '123:45:06');
    assert.equal(formatDuration(100 * h), '100:00:00');
  });
  test('negative counts as zero', () => assert.equal(formatDuration(-5000), '00:00:00'));
});

describe('webhookBody', { timeout: 30_000 }, () => {
  const monitor: Monitor = {
    id: 7,
    userId: 3,
    url: 'https://example.com/health',
    alias: 'Example',
    createdAt: 123,
  };
  const at = Date.UTC(2026, 2, 4, 5, 6, 7);

  test('Down: exact members in order, monitor only id/url/alias', () => {
    const body = webhookBody(
      {
        type: 'uptime.down',
        at,
        httpStatusCode: 503,
        error: '503 - Service Unavailable',
        detectedBy: 'local-a',
        verifiedVia: 'local-b',
      },
      monitor,
    );
    assert.deepEqual(Object.keys(body), ['check', 'monitor']);
    assert.deepEqual(Object.keys(body.check), ['name', 'status', 'last_check_at', 'error', 'meta']);
    assert.deepEqual(Object.keys(body.check.meta ?? {}), [
      'http_status_code',
      'detected_by',
      'verified_via',
    ]);
    assert.deepEqual(Object.keys(body.monitor), ['id', 'url', 'alias']);
    // The serialized bytes are what is signed and sent: pin them.
    assert.equal(
      JSON.stringify(body),
      '{"check":{"name":"uptime","status":"nok","last_check_at":"2026-03-04 05:06:07",' +
        '"error":"503 - Service Unavailable","meta":{"http_status_code":503,' +
        '"detected_by":"local-a","verified_via":"local-b"}},' +
        '"monitor":{"id":7,"url":"https://example.com/health","alias":"Example"}}',
    );
  });

  test('Recovered: no error, meta http_status_code + downtime HH:MM:SS', () => {
    const body = webhookBody(
      { type: 'uptime.recovered', at, httpStatusCode: 200, downtimeMs: 176_587_000 },
      monitor,
    );
    assert.deepEqual(Object.keys(body), ['check', 'monitor']);
    assert.deepEqual(Object.keys(body.check), ['name', 'status', 'last_check_at', 'meta']);
    assert.equal('error' in body.check, false);
    assert.deepEqual(Object.keys(body.check.meta ?? {}), ['http_status_code', 'downtime']);
    assert.deepEqual(Object.keys(body.monitor), ['id', 'url', 'alias']);
    assert.equal(
      JSON.stringify(body),
      '{"check":{"name":"uptime","status":"ok","last_check_at":"2026-03-04 05:06:07",' +
        '"meta":{"http_status_code":200,"downtime":"49:03:07"}},' +
        '"monitor":{"id":7,"url":"https://example.com/health","alias":"Example"}}',
    );
  });

  test('the five webhook types have their spec titles', () => {
    assert.deepEqual(Object.values(EVENT_TITLES), [
      'Uptime Website - Down',
      'Uptime Website - Recovered',
      'SSL Certificate - Invalid',
      'SSL Certificate - Recovered',
      'SSL Certificate - Expires soon',
    ]);
  });
});
