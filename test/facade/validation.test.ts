/**
 * Route schemas inside the JSON error model (issue 6, CONTRACT §3–§4), through `inject()`
 * against the real coordinator: a body field of the wrong type is a 422 naming the field in
 * the service's own words; numbers given as strings are refused; unknown fields are ignored;
 * a body that is not an object is still a 400; a path id that is not a positive integer is
 * still the route's 404; query parameters are 422s naming the parameter.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { InjectOptions } from 'fastify';
import { pino } from 'pino';
import type { CheckView, MonitorView, UserView } from '../../src/common/service.js';
import { Coordinator } from '../../src/coordinator/coordinator.js';
import { buildApp } from '../../src/facade/app.js';

interface Invalid {
  message: string;
  errors: Record<string, string[]>;
}

const silent = pino({ level: 'silent' });

let dir: string;
let coordinator: Coordinator;
let app: ReturnType<typeof buildApp>;
let user: UserView;
let monitor: MonitorView;
let uptime: CheckView;
let cert: CheckView;

async function send(
  method: InjectOptions['method'],
  url: string,
  payload?: string,
  extra: Record<string, string> = {},
): Promise<{ status: number; body: unknown }> {
  const headers: Record<string, string> = { authorization: `Bearer ${user.api_token}`, ...extra };
  if (payload !== undefined) headers['content-type'] ??= 'application/json';
  const res = await app.inject({ method, url, headers, payload });
  assert.match(String(res.headers['content-type']), /^application\/json/, `${method} ${url}`);
  return { status: res.statusCode, body: res.json() };
}

async function invalid(method: InjectOptions['method'], url: string, payload?: string) {
  const res = await send(method, url, payload);
  assert.equal(res.status, 422, `${method} ${url} ${payload ?? ''}`);
  const body = res.body as Invalid;
  assert.deepEqual(Object.keys(body).sort(), ['errors', 'message']);
  const first = Object.values(body.errors)[0]?.[0];
  assert.equal(body.message, first, 'the message is the first field message');
  return body;
}

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'vigil-facade-validation-'));
  coordinator = await Coordinator.open({ dataDir: dir, logger: silent });
  app = buildApp({
    service: coordinator,
    admin: coordinator,
    adminToken: 'x',
    logger: silent,
    rateLimitPerMinute: 100_000,
  });
  await app.ready();
  user = await coordinator.createUser({
    email: 'val@example.test',
    plan: 'free',
    apiEnabled: true,
  });
  monitor = await coordinator.createMonitor(user.id, { url: 'https://val.example.test/' });
  uptime = monitor.checks.find((c) => c.name === 'uptime') as CheckView;
  cert = monitor.checks.find((c) => c.name === 'certificate_health') as CheckView;
});

after(async () => {
  await app?.close();
  await coordinator?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('PUT /webapi/checks/{id}: types', () => {
  const WHOLE_SECONDS = {
    interval: 'The interval must be a whole number of seconds.',
    notification_threshold: 'The notification threshold must be a whole number of seconds.',
  } as const;

  it('numbers given as strings are refused with a 422 naming the field', async () => {
    for (const [field, message] of Object.entries(WHOLE_SECONDS)) {
      const body = await invalid('PUT', `/webapi/checks/${uptime.id}`, `{"${field}": "300"}`);
      assert.deepEqual(body.errors, { [field]: [message] });
    }
    const expiry = await invalid(
      'PUT',
      `/webapi/checks/${cert.id}`,
      '{"expiry_threshold_days": "7"}',
    );
    assert.deepEqual(expiry.errors, {
      expiry_threshold_days: [
        'The expiry threshold must be null or one of 1, 3, 7, 14, 21, 30, 60.',
      ],
    });
  });

  it('other wrong types: fractions, huge numbers, booleans, null, arrays, objects', async () => {
    for (const value of ['1.5', '1e999', '-1e999', 'true', 'null', '[300]', '{"s": 300}', '""']) {
      const body = await invalid('PUT', `/webapi/checks/${uptime.id}`, `{"interval": ${value}}`);
      assert.deepEqual(body.errors, { interval: [WHOLE_SECONDS.interval] }, value);
    }
  });

  it('every wrong field is named at once', async () => {
    const body = await invalid(
      'PUT',
      `/webapi/checks/${cert.id}`,
      '{"interval": "a", "notification_threshold": false, "expiry_threshold_days": "b"}',
    );
    assert.deepEqual(Object.keys(body.errors).sort(), [
      'expiry_threshold_days',
      'interval',
      'notification_threshold',
    ]);
    assert.equal(body.message, WHOLE_SECONDS.interval);
  });

  it('the service still words the value rules', async () => {
    const plan = await invalid('PUT', `/webapi/checks/${uptime.id}`, '{"interval": 30}');
    assert.deepEqual(plan.errors, {
      interval: ['The interval 30 is not available on the free plan.'],
    });
    const list = await invalid('PUT', `/webapi/checks/${uptime.id}`, '{"interval": 45}');
    assert.match(list.errors.interval?.[0] ?? '', /must be one of 30, 60/);
    const none = await invalid('PUT', `/webapi/checks/${uptime.id}`, '{}');
    assert.match(none.message, /Give at least one of/);
  });

  it('unknown fields are ignored, whatever their type', async () => {
    const res = await send(
      'PUT',
      `/webapi/checks/${uptime.id}`,
      '{"interval": 900, "unknown": {"deep": ["x"]}, "enabled": "yes", "id": "7"}',
    );
    assert.deepEqual(res, { status: 200, body: [] });
    assert.equal(coordinator.getCheck(user.id, uptime.id).interval, 900);
    const only = await invalid('PUT', `/webapi/checks/${uptime.id}`, '{"unknown": 1}');
    assert.match(only.message, /Give at least one of/, 'the service, not the schema, decides');
  });

  it('null clears the expiry threshold', async () => {
    await send('PUT', `/webapi/checks/${cert.id}`, '{"expiry_threshold_days": 7}');
    const res = await send('PUT', `/webapi/checks/${cert.id}`, '{"expiry_threshold_days": null}');
    assert.deepEqual(res, { status: 200, body: [] });
    assert.equal(coordinator.getCheck(user.id, cert.id).expiry_threshold_days, null);
  });
});

describe('POST /webapi/monitors and PUT /webapi/account: types', () => {
  it('url: required, a string', async () => {
    assert.deepEqual((await invalid('POST', '/webapi/monitors', '{}')).errors, {
      url: ['The url field is required.'],
    });
    assert.deepEqual((await invalid('POST', '/webapi/monitors', '{"url": 80}')).errors, {
      url: ['The url must be a string.'],
    });
    // A string that is no URL: the service says why.
    const bad = await invalid('POST', '/webapi/monitors', '{"url": "ftp://x.example.test/"}');
    assert.deepEqual(bad.errors, { url: ['The url must start with http:// or https://.'] });
  });

  it('alias: a string of at most 255 characters, or null', async () => {
    for (const alias of ['7', '["a"]', JSON.stringify('a'.repeat(256))]) {
      const body = await invalid(
        'POST',
        '/webapi/monitors',
        `{"url": "https://alias.example.test/", "alias": ${alias}}`,
      );
      assert.deepEqual(body.errors, {
        alias: ['The alias must be a string of at most 255 characters.'],
      });
    }
    const ok = await send(
      'POST',
      '/webapi/monitors',
      '{"url": "https://alias.example.test/", "alias": null, "checks": "ignored"}',
    );
    assert.equal(ok.status, 201);
    assert.equal((ok.body as MonitorView).alias, 'alias.example.test');
  });

  it('webhook_url: required, a string or null', async () => {
    assert.deepEqual((await invalid('PUT', '/webapi/account', '{}')).errors, {
      webhook_url: ['The webhook_url field is required.'],
    });
    assert.deepEqual((await invalid('PUT', '/webapi/account', '{"webhook_url": 1}')).errors, {
      webhook_url: ['The webhook_url must be a string or null.'],
    });
  });
});

describe('what the schemas leave as it was', () => {
  it('a body that is not a JSON object is a 400 on every body route', async () => {
    for (const [method, url] of [
      ['PUT', `/webapi/checks/${uptime.id}`],
      ['POST', '/webapi/monitors'],
      ['PUT', '/webapi/account'],
    ] as const) {
      for (const [payload, message] of [
        ['[]', 'The request body must be a JSON object, not an array.'],
        ['null', 'The request body must be a JSON object, not null.'],
        ['"x"', 'The request body must be a JSON object, not a string.'],
        ['1', 'The request body must be a JSON object, not a number.'],
        ['true', 'The request body must be a JSON object, not a boolean.'],
      ] as const) {
        const res = await send(method, url, payload);
        assert.deepEqual(res, { status: 400, body: { message } }, `${method} ${url} ${payload}`);
      }
      const empty = await app.inject({
        method,
        url,
        headers: { authorization: `Bearer ${user.api_token}` },
      });
      assert.equal(empty.statusCode, 400);
      assert.match(empty.json<{ message: string }>().message, /empty/);
    }
  });

  it('a path id that is not a positive integer is the route’s 404', async () => {
    const cases: [InjectOptions['method'], string, string][] = [
      ['GET', '/webapi/checks/{}', 'Check not found.'],
      ['PUT', '/webapi/checks/{}', 'Check not found.'],
      ['GET', '/webapi/checks/{}/results', 'Check not found.'],
      ['POST', '/webapi/checks/{}/disable', 'Check not found.'],
      ['POST', '/webapi/checks/{}/enable', 'Check not found.'],
      ['GET', '/webapi/monitors/{}', 'Monitor not found.'],
      ['DELETE', '/webapi/monitors/{}', 'Monitor not found.'],
      ['POST', '/webapi/webhooks/{}/redeliver', 'Webhook not found.'],
    ];
    const ids = ['abc', '0', '-1', '01', '+1', '1e3', '1.5', '0x1', '%201', '9007199254740992'];
    for (const [method, template, message] of cases) {
      for (const id of ids) {
        const url = template.replace('{}', id);
        // Even with a body of the wrong type: the id is judged first.
        const payload = method === 'PUT' ? '{"interval": "x"}' : undefined;
        const res = await send(method, url, payload);
        assert.deepEqual(res, { status: 404, body: { message } }, `${method} ${url}`);
      }
    }
  });

  it('DELETE ignores a body, even an empty one sent as JSON (spec §4 headers)', async () => {
    for (const payload of ['', '{"x": 1}', '{broken']) {
      const m = await coordinator.createMonitor(user.id, { url: 'http://del.example.test/' });
      const res = await send('DELETE', `/webapi/monitors/${m.id}`, payload);
      assert.deepEqual(res, { status: 200, body: [] }, JSON.stringify(payload));
    }
  });
});

describe('query parameters', () => {
  it('limit of GET /webapi/checks/{id}/results: 1–1000, else a 422 naming it', async () => {
    const url = `/webapi/checks/${uptime.id}/results`;
    for (const limit of [
      '0',
      '1001',
      '-1',
      '1.5',
      'abc',
      '',
      '1&limit=2',
      '99999999999999999999',
    ]) {
      const body = await invalid('GET', `${url}?limit=${limit}`);
      assert.deepEqual(body.errors, {
        limit: ['The limit must be a whole number from 1 to 1000.'],
      });
    }
    for (const limit of ['1', '01', '1000']) {
      const res = await send('GET', `${url}?limit=${limit}`);
      assert.deepEqual(res, { status: 200, body: [] }, limit);
    }
    assert.deepEqual(await send('GET', url), { status: 200, body: [] });
  });

  it('status, page and per_page of GET /webapi/webhooks', async () => {
    const body = await invalid('GET', '/webapi/webhooks?status=lost&page=0&per_page=101');
    assert.deepEqual(body.errors, {
      status: ['The status must be one of pending, delivered, failed.'],
      page: ['The page must be a whole number from 1 to 1000000.'],
      per_page: ['The per_page must be a whole number from 1 to 100.'],
    });
    for (const q of ['page=abc', 'page=1.5', 'page=-1', 'page=1&page=2']) {
      const res = await invalid('GET', `/webapi/webhooks?${q}`);
      assert.deepEqual(Object.keys(res.errors), ['page'], q);
    }
    const ok = await send('GET', '/webapi/webhooks?status=failed&page=2&per_page=10&other=1');
    assert.deepEqual(ok, { status: 200, body: { data: [], page: 2, per_page: 10, total: 0 } });
    const defaults = await send('GET', '/webapi/webhooks');
    assert.deepEqual(defaults.body, { data: [], page: 1, per_page: 50, total: 0 });
  });
});
