/**
 * Value rules of `PUT /webapi/checks/{id}` (spec §2, CONTRACT §2–§3) and the other field
 * checks shared by the API and the CLI.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { validationError } from '../../src/common/errors.js';
import {
  DEFAULT_PLAN_INTERVALS,
  EXPIRY_THRESHOLDS_DAYS,
  INTERVALS_SECONDS,
  NOTIFICATION_THRESHOLDS_SECONDS,
  type Check,
  type Plan,
} from '../../src/domain/check.js';
import {
  emailProblem,
  monitorUrlProblem,
  planProblem,
  validateCheckPatch,
  webhookUrlProblem,
} from '../../src/domain/validate.js';

const uptime: Check = {
  id: 1,
  monitorId: 1,
  userId: 1,
  name: 'uptime',
  enabled: true,
  intervalSeconds: 300,
  notificationThresholdSeconds: 0,
  expiryThresholdDays: null,
};
const cert: Check = { ...uptime, id: 2, name: 'certificate_health', intervalSeconds: 3600 };

const validate = (patch: Record<string, unknown>, check: Check = uptime, plan: Plan = 'business') =>
  validateCheckPatch(patch, check, plan, DEFAULT_PLAN_INTERVALS[plan]);

describe('validateCheckPatch: interval', { timeout: 30_000 }, () => {
  test('every spec interval is accepted on the business plan', () => {
    for (const v of INTERVALS_SECONDS) {
      const r = validate({ interval: v });
      assert.equal(r.errors, null, `interval ${v}`);
      assert.deepEqual(r.change, { intervalSeconds: v });
    }
  });

  test('an interval not in the spec list is refused', () => {
    for (const v of [0, 1, 45, 301, 172800, -60]) {
      const r = validate({ interval: v });
      assert.ok(r.errors?.interval?.length, `interval ${v}`);
      assert.equal(r.change.intervalSeconds, undefined);
    }
  });

  test('an interval not on the plan is refused with the documented message', () => {
    const r = validate({ interval: 30 }, uptime, 'free');
    assert.deepEqual(r.errors, {
      interval: ['The interval 30 is not available on the free plan.'],
    });
    assert.equal(
      validationError(r.errors ?? {}).message,
      'The interval 30 is not available on the free plan.',
    );
    assert.equal(validationError(r.errors ?? {}).code, 'VIGIL_ERR_VALIDATION');
    assert.ok(validate({ interval: 60 }, uptime, 'free').errors?.interval);
    assert.ok(validate({ interval: 30 }, uptime, 'pro').errors?.interval);
    assert.equal(validate({ interval: 60 }, uptime, 'pro').errors, null);
    assert.equal(validate({ interval: 300 }, uptime, 'free').errors, null);
  });

  test('numbers must be JSON numbers: "60" and 60.5 are refused', () => {
    for (const v of ['60', 60.5, null, true, [60], { v: 60 }]) {
      const r = validate({ interval: v });
      assert.ok(r.errors?.interval?.length, `interval ${JSON.stringify(v)}`);
    }
  });
});

describe('validateCheckPatch: notification_threshold', { timeout: 30_000 }, () => {
  test('every spec threshold is accepted', () => {
    for (const v of NOTIFICATION_THRESHOLDS_SECONDS) {
      const r = validate({ notification_threshold: v });
      assert.equal(r.errors, null, `threshold ${v}`);
      assert.deepEqual(r.change, { notificationThresholdSeconds: v });
    }
  });

  test('other values and types are refused', () => {
    for (const v of [-15, 10, 45, 3600, '60', 30.5, null]) {
      const r = validate({ notification_threshold: v });
      assert.ok(r.errors?.notification_threshold?.length, `threshold ${JSON.stringify(v)}`);
    }
  });
});

describe('validateCheckPatch: expiry_threshold_days', { timeout: 30_000 }, () => {
  test('only on certificate_health checks', () => {
    const r = validate({ expiry_threshold_days: 7 }, uptime);
    assert.ok(r.errors?.expiry_threshold_days?.length);
    assert.equal(r.change.expiryThresholdDays, undefined);
  });

  test('null and each allowed value are accepted on certificate_health', () => {
    for (const v of [null, ...EXPIRY_THRESHOLDS_DAYS]) {
      const r = validate({ expiry_threshold_days: v }, cert);
      assert.equal(r.errors, null, `days ${v}`);
      assert.deepEqual(r.change, { expiryThresholdDays: v });
    }
  });

  test('other values are refused', () => {
    for (const v of [0, 2, 90, '7', 7.5]) {
      const r = validate({ expiry_threshold_days: v }, cert);
      assert.ok(r.errors?.expiry_threshold_days?.length, `days ${JSON.stringify(v)}`);
    }
  });
});

describe('validateCheckPatch: the patch as a whole', { timeout: 30_000 }, () => {
  test('an empty patch is refused', () => {
    const r = validate({});
    assert.notEqual(r.errors, null);
    assert.ok(Object.values(r.errors ?? {}).flat().length > 0);
    assert.notEqual(validate({}, cert).errors, null);
  });

  test('unknown fields are ignored, but alone they are not a change', () => {
    const r = validate({ interval: 300, colour: 'blue', id: 99 });
    assert.equal(r.errors, null);
    assert.deepEqual(r.change, { intervalSeconds: 300 });
    assert.notEqual(validate({ colour: 'blue' }).errors, null);
  });

  test('several fields at once; every bad field is reported', () => {
    const good = validate({ interval: 120, notification_threshold: 60 });
    assert.equal(good.errors, null);
    assert.deepEqual(good.change, { intervalSeconds: 120, notificationThresholdSeconds: 60 });
    const bad = validate({ interval: 45, notification_threshold: 7 });
    assert.deepEqual(Object.keys(bad.errors ?? {}).sort(), ['interval', 'notification_threshold']);
  });

  test('one bad field refuses the whole patch', () => {
    const r = validate({ interval: 120, notification_threshold: 7 });
    assert.ok(r.errors?.notification_threshold);
  });
});

describe('other field rules', { timeout: 30_000 }, () => {
  test('monitorUrlProblem', () => {
    assert.equal(monitorUrlProblem('https://example.com/'), null);
    assert.equal(monitorUrlProblem('http://127.0.0.1:9/x'), null);
    for (const bad of [
      '',
      '   ',
      42,
      'ftp://example.com',
      'not a url',
      'https://u:p@example.com',
    ]) {
      assert.equal(typeof monitorUrlProblem(bad), 'string', JSON.stringify(bad));
    }
    assert.equal(typeof monitorUrlProblem(`https://example.com/${'a'.repeat(2048)}`), 'string');
  });

  test('webhookUrlProblem: null is allowed, messages name the webhook url', () => {
    assert.equal(webhookUrlProblem(null), null);
    assert.equal(webhookUrlProblem('http://127.0.0.1:8080/hook'), null);
    assert.match(webhookUrlProblem('ftp://x') ?? '', /^The webhook url/);
  });

  test('emailProblem and planProblem', () => {
    assert.equal(emailProblem('a@example.com'), null);
    assert.equal(typeof emailProblem('nope'), 'string');
    assert.equal(typeof emailProblem(undefined), 'string');
    for (const p of ['free', 'pro', 'business']) assert.equal(planProblem(p), null);
    assert.equal(typeof planProblem('gold'), 'string');
  });
});
