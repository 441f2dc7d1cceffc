/**
 * /webapi routes over real HTTP against the real coordinator (spec §4, CONTRACT §3–§4):
 * success shapes, ownership (another user's id is a plain 404) and the service's 422s.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { pino } from 'pino';
import type { CheckView, MonitorView, UserView } from '../../src/common/service.js';
import { Coordinator } from '../../src/coordinator/coordinator.js';
import { buildApp } from '../../src/facade/app.js';

interface Reply<T = unknown> {
  status: number;
  body: T;
  contentType: string | null;
}

interface CallOptions {
  token?: string;
  body?: unknown;
}

const silent = pino({ level: 'silent' });

let dir: string;
let coordinator: Coordinator;
let app: ReturnType<typeof buildApp>;
let base: string;
let alice: UserView; // free
let bob: UserView; // business

async function call<T = unknown>(
  method: string,
  path: string,
  opts: CallOptions = {},
): Promise<Reply<T>> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (opts.token !== undefined) headers.authorization = `Bearer ${opts.token}`;
  let body: string | undefined;
  if (opts.body !== undefined) {
    body = JSON.stringify(opts.body);
    headers['content-type'] = 'application/json';
  }
  const res = await fetch(base + path, { method, headers, body });
  const text = await res.text();
  return {
    status: res.status,
    body: JSON.parse(text) as T,
    contentType: res.headers.get('content-type'),
  };
}

async function createMonitor(token: string, url: string, alias?: string): Promise<MonitorView> {
  const res = await call<MonitorView>('POST', '/webapi/monitors', {
    token,
    body: alias === undefined ? { url } : { url, alias },
  });
  assert.equal(res.status, 201);
  return res.body;
}

function checkNamed(monitor: MonitorView, name: CheckView['name']): CheckView {
  const check = monitor.checks.find((c) => c.name === name);
  assert.ok(check, `monitor ${monitor.id} has a ${name} check`);
  return check;
}

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'vigil-facade-routes-'));
  coordinator = await Coordinator.open({ dataDir: dir, logger: silent });
  coordinator.start();
  app = buildApp({
    service: coordinator,
    admin: coordinator,
    adminToken: 'admin-secret',
    logger: silent,
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  alice = await coordinator.createUser({
    email: 'alice@example.test',
    plan: 'free',
    apiEnabled: true,
    webhookUrl: null,
  });
  bob = await coordinator.createUser({
    email: 'bob@example.test',
    plan: 'business',
    apiEnabled: true,
    webhookUrl: null,
  });
});

after(async () => {
  await app?.close();
  await coordinator?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('monitors', () => {
  it('POST /webapi/monitors on the free plan: 201, uptime 300/0 and certificate_health 3600/null', async () => {
    const res = await call<MonitorView>('POST', '/webapi/monitors', {
      token: alice.api_token,
      body: { url: 'https://free.example.test/', alias: 'Free site' },
    });
    assert.equal(res.status, 201);
    assert.match(res.contentType ?? '', /^application\/json/);
    const m = res.body;
    assert.equal(typeof m.id, 'number');
    assert.equal(m.url, 'https://free.example.test/');
    assert.equal(m.alias, 'Free site');
    assert.deepEqual(Object.keys(m).sort(), ['alias', 'checks', 'id', 'url']);
    assert.equal(m.checks.length, 2);

    const uptime = checkNamed(m, 'uptime');
    assert.equal(uptime.monitor_id, m.id);
    assert.equal(uptime.interval, 300);
    assert.equal(uptime.notification_threshold, 0);
    assert.equal(uptime.enabled, true);
    assert.ok(uptime.status === null || uptime.status === 'ok' || uptime.status === 'nok');
    assert.ok(!('expiry_threshold_days' in uptime), 'uptime has no expiry_threshold_days');

    const cert = checkNamed(m, 'certificate_health');
    assert.equal(cert.monitor_id, m.id);
    assert.equal(cert.interval, 3600);
    assert.equal(cert.expiry_threshold_days, null);
    assert.equal(cert.enabled, true);
    assert.notEqual(cert.id, uptime.id);
  });

  it('POST /webapi/monitors on the business plan: same defaults', async () => {
    const m = await createMonitor(bob.api_token, 'https://business.example.test/');
    assert.equal(checkNamed(m, 'uptime').interval, 300);
    assert.equal(checkNamed(m, 'uptime').notification_threshold, 0);
    assert.equal(checkNamed(m, 'certificate_health').interval, 3600);
    assert.equal(checkNamed(m, 'certificate_health').expiry_threshold_days, null);
  });

  it('an http:// monitor gets only the uptime check', async () => {
    const m = await createMonitor(alice.api_token, 'http://plain.example.test/');
    assert.deepEqual(
      m.checks.map((c) => c.name),
      ['uptime'],
    );
  });

  it('POST /webapi/monitors with a bad url is a 422 on the url field', async () => {
    const res = await call<{ message: string; errors: Record<string, string[]> }>(
      'POST',
      '/webapi/monitors',
      { token: alice.api_token, body: { url: 'ftp://nope.example.test/' } },
    );
    assert.equal(res.status, 422);
    assert.equal(typeof res.body.message, 'string');
    assert.ok(Array.isArray(res.body.errors.url));
  });

  it('GET /webapi/monitors: an array of the caller’s monitors only', async () => {
    const mine = await createMonitor(alice.api_token, 'https://listed.example.test/');
    const res = await call<MonitorView[]>('GET', '/webapi/monitors', { token: alice.api_token });
    assert.equal(res.status, 200);
    assert.ok(Array.isArray(res.body));
    const found = res.body.find((m) => m.id === mine.id);
    assert.deepEqual(found?.url, mine.url);
    for (const m of res.body) {
      assert.deepEqual(Object.keys(m).sort(), ['alias', 'checks', 'id', 'url']);
      assert.ok(Array.isArray(m.checks));
    }
    const theirs = await call<MonitorView[]>('GET', '/webapi/monitors', { token: bob.api_token });
    assert.ok(!theirs.body.some((m) => m.id === mine.id), 'bob does not see alice’s monitor');
  });

  it('GET /webapi/monitors/{id} returns the monitor object', async () => {
    const m = await createMonitor(alice.api_token, 'https://one.example.test/', 'One');
    const res = await call<MonitorView>('GET', `/webapi/monitors/${m.id}`, {
      token: alice.api_token,
    });
    assert.equal(res.status, 200);
    assert.equal(res.body.id, m.id);
    assert.equal(res.body.alias, 'One');
    assert.deepEqual(res.body.checks.map((c) => c.id).sort(), m.checks.map((c) => c.id).sort());
  });

  it('DELETE /webapi/monitors/{id}: 200 [], then the monitor and its checks are gone', async () => {
    const m = await createMonitor(alice.api_token, 'https://gone.example.test/');
    const del = await call('DELETE', `/webapi/monitors/${m.id}`, { token: alice.api_token });
    assert.equal(del.status, 200);
    assert.deepEqual(del.body, []);
    const get = await call('GET', `/webapi/monitors/${m.id}`, { token: alice.api_token });
    assert.equal(get.status, 404);
    assert.deepEqual(get.body, { message: 'Monitor not found.' });
    const check = await call('GET', `/webapi/checks/${m.checks[0]!.id}`, {
      token: alice.api_token,
    });
    assert.equal(check.status, 404);
    assert.deepEqual(check.body, { message: 'Check not found.' });
  });
});

describe('checks', () => {
  let monitor: MonitorView;
  let uptime: CheckView;
  let cert: CheckView;

  before(async () => {
    monitor = await createMonitor(alice.api_token, 'https://checks.example.test/');
    uptime = checkNamed(monitor, 'uptime');
    cert = checkNamed(monitor, 'certificate_health');
  });

  it('GET /webapi/checks/{id} returns the check object', async () => {
    const res = await call<CheckView>('GET', `/webapi/checks/${uptime.id}`, {
      token: alice.api_token,
    });
    assert.equal(res.status, 200);
    for (const key of [
      'id',
      'monitor_id',
      'name',
      'enabled',
      'interval',
      'notification_threshold',
      'status',
      'last_check_at',
      'uptime',
    ]) {
      assert.ok(key in res.body, `check has ${key}`);
    }
    // Issue 6: percentages per window, null before any run.
    assert.deepEqual(res.body.uptime, { '24h': null, '7d': null, '30d': null });
    assert.equal(res.body.id, uptime.id);
    assert.equal(res.body.monitor_id, monitor.id);
    assert.equal(res.body.name, 'uptime');
    const c = await call<CheckView>('GET', `/webapi/checks/${cert.id}`, { token: alice.api_token });
    assert.equal(c.body.expiry_threshold_days, null);
  });

  it('PUT /webapi/checks/{id}: 200 [] and the change is visible in GET', async () => {
    const res = await call('PUT', `/webapi/checks/${uptime.id}`, {
      token: alice.api_token,
      body: { interval: 900, notification_threshold: 60 },
    });
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, []);
    const get = await call<CheckView>('GET', `/webapi/checks/${uptime.id}`, {
      token: alice.api_token,
    });
    assert.equal(get.body.interval, 900);
    assert.equal(get.body.notification_threshold, 60);

    const put2 = await call('PUT', `/webapi/checks/${cert.id}`, {
      token: alice.api_token,
      body: { expiry_threshold_days: 14, unknown_field: 'ignored' },
    });
    assert.equal(put2.status, 200);
    assert.deepEqual(put2.body, []);
    const get2 = await call<CheckView>('GET', `/webapi/checks/${cert.id}`, {
      token: alice.api_token,
    });
    assert.equal(get2.body.expiry_threshold_days, 14);
    const listed = await call<MonitorView>('GET', `/webapi/monitors/${monitor.id}`, {
      token: alice.api_token,
    });
    assert.equal(checkNamed(listed.body, 'uptime').interval, 900);
  });

  it('PUT interval 30 is accepted on the business plan', async () => {
    const m = await createMonitor(bob.api_token, 'https://fast.example.test/');
    const id = checkNamed(m, 'uptime').id;
    const res = await call('PUT', `/webapi/checks/${id}`, {
      token: bob.api_token,
      body: { interval: 30 },
    });
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, []);
    const get = await call<CheckView>('GET', `/webapi/checks/${id}`, { token: bob.api_token });
    assert.equal(get.body.interval, 30);
  });

  it('POST disable / enable: 200 [] and visible in GET', async () => {
    const dis = await call('POST', `/webapi/checks/${uptime.id}/disable`, {
      token: alice.api_token,
    });
    assert.equal(dis.status, 200);
    assert.deepEqual(dis.body, []);
    let get = await call<CheckView>('GET', `/webapi/checks/${uptime.id}`, {
      token: alice.api_token,
    });
    assert.equal(get.body.enabled, false);
    // Disabling twice is harmless.
    const again = await call('POST', `/webapi/checks/${uptime.id}/disable`, {
      token: alice.api_token,
    });
    assert.equal(again.status, 200);
    const en = await call('POST', `/webapi/checks/${uptime.id}/enable`, { token: alice.api_token });
    assert.equal(en.status, 200);
    assert.deepEqual(en.body, []);
    get = await call<CheckView>('GET', `/webapi/checks/${uptime.id}`, { token: alice.api_token });
    assert.equal(get.body.enabled, true);
  });

  describe('422', () => {
    type Invalid = { message: string; errors: Record<string, string[]> };

    it('interval 45 is not in the allowed list', async () => {
      const res = await call<Invalid>('PUT', `/webapi/checks/${uptime.id}`, {
        token: alice.api_token,
        body: { interval: 45 },
      });
      assert.equal(res.status, 422);
      assert.equal(typeof res.body.message, 'string');
      assert.ok(Array.isArray(res.body.errors.interval));
      assert.equal(res.body.errors.interval.length > 0, true);
    });

    it('interval 30 on the free plan', async () => {
      const res = await call<Invalid>('PUT', `/webapi/checks/${uptime.id}`, {
        token: alice.api_token,
        body: { interval: 30 },
      });
      assert.equal(res.status, 422);
      assert.equal(res.body.message, 'The interval 30 is not available on the free plan.');
      assert.deepEqual(res.body.errors.interval, [
        'The interval 30 is not available on the free plan.',
      ]);
    });

    it('notification_threshold 7', async () => {
      const res = await call<Invalid>('PUT', `/webapi/checks/${uptime.id}`, {
        token: alice.api_token,
        body: { notification_threshold: 7 },
      });
      assert.equal(res.status, 422);
      assert.ok(Array.isArray(res.body.errors.notification_threshold));
    });

    it('interval given as the string "60"', async () => {
      const res = await call<Invalid>('PUT', `/webapi/checks/${uptime.id}`, {
        token: alice.api_token,
        body: { interval: '60' },
      });
      assert.equal(res.status, 422);
      assert.ok(Array.isArray(res.body.errors.interval));
    });

    it('an empty object names the missing fields', async () => {
      const res = await call<Invalid>('PUT', `/webapi/checks/${uptime.id}`, {
        token: alice.api_token,
        body: {},
      });
      assert.equal(res.status, 422);
      assert.equal(typeof res.body.message, 'string');
    });

    it('a rejected change leaves the check as it was', async () => {
      const before = await call<CheckView>('GET', `/webapi/checks/${uptime.id}`, {
        token: alice.api_token,
      });
      await call('PUT', `/webapi/checks/${uptime.id}`, {
        token: alice.api_token,
        body: { interval: 300, notification_threshold: 7 },
      });
      const afterPut = await call<CheckView>('GET', `/webapi/checks/${uptime.id}`, {
        token: alice.api_token,
      });
      assert.equal(afterPut.body.interval, before.body.interval);
      assert.equal(afterPut.body.notification_threshold, before.body.notification_threshold);
    });
  });

  describe('404', () => {
    const checkNotFound = { message: 'Check not found.' };
    const monitorNotFound = { message: 'Monitor not found.' };

    it('an unknown check id, on every check route', async () => {
      const t = alice.api_token;
      for (const [method, path, body] of [
        ['GET', '/webapi/checks/999999', undefined],
        ['PUT', '/webapi/checks/999999', { interval: 300 }],
        ['POST', '/webapi/checks/999999/disable', undefined],
        ['POST', '/webapi/checks/999999/enable', undefined],
      ] as const) {
        const res = await call(method, path, { token: t, body });
        assert.equal(res.status, 404, `${method} ${path}`);
        assert.deepEqual(res.body, checkNotFound);
        assert.match(res.contentType ?? '', /^application\/json/);
      }
    });

    it('a non-numeric or non-canonical id is a 404, not a 400', async () => {
      for (const raw of ['abc', '0', '-1', '1.5', '1e3', '01', '99999999999999999999', '%20']) {
        const check = await call('GET', `/webapi/checks/${raw}`, { token: alice.api_token });
        assert.equal(check.status, 404, `check ${raw}`);
        assert.deepEqual(check.body, checkNotFound);
        const monitor = await call('GET', `/webapi/monitors/${raw}`, { token: alice.api_token });
        assert.equal(monitor.status, 404, `monitor ${raw}`);
        assert.deepEqual(monitor.body, monitorNotFound);
      }
      const put = await call('PUT', '/webapi/checks/abc', {
        token: alice.api_token,
        body: { interval: 300 },
      });
      assert.equal(put.status, 404);
      assert.deepEqual(put.body, checkNotFound);
      const dis = await call('POST', '/webapi/checks/abc/disable', { token: alice.api_token });
      assert.equal(dis.status, 404);
      assert.deepEqual(dis.body, checkNotFound);
      const del = await call('DELETE', '/webapi/monitors/abc', { token: alice.api_token });
      assert.equal(del.status, 404);
      assert.deepEqual(del.body, monitorNotFound);
    });

    it('another user’s check and monitor look exactly like missing ones', async () => {
      const bobs = await createMonitor(bob.api_token, 'https://private.example.test/');
      const bobCheck = checkNamed(bobs, 'uptime');
      const t = alice.api_token;
      const missing = await call('GET', '/webapi/checks/999998', { token: t });
      for (const [method, path, body] of [
        ['GET', `/webapi/checks/${bobCheck.id}`, undefined],
        ['PUT', `/webapi/checks/${bobCheck.id}`, { interval: 300 }],
        ['POST', `/webapi/checks/${bobCheck.id}/disable`, undefined],
        ['POST', `/webapi/checks/${bobCheck.id}/enable`, undefined],
      ] as const) {
        const res = await call(method, path, { token: t, body });
        assert.equal(res.status, 404, `${method} ${path}`);
        assert.deepEqual(res.body, missing.body);
      }
      const missingMonitor = await call('GET', '/webapi/monitors/999998', { token: t });
      for (const method of ['GET', 'DELETE'] as const) {
        const res = await call(method, `/webapi/monitors/${bobs.id}`, { token: t });
        assert.equal(res.status, 404, `${method} monitor`);
        assert.deepEqual(res.body, missingMonitor.body);
      }
      // Nothing alice tried changed bob's monitor.
      const still = await call<MonitorView>('GET', `/webapi/monitors/${bobs.id}`, {
        token: bob.api_token,
      });
      assert.equal(still.status, 200);
      assert.equal(checkNamed(still.body, 'uptime').enabled, true);
      assert.equal(checkNamed(still.body, 'uptime').interval, 300);
    });
  });
});

describe('account', () => {
  it('GET /webapi/account: id, email, plan, webhook_url, api_enabled — no token', async () => {
    const res = await call<Record<string, unknown>>('GET', '/webapi/account', {
      token: alice.api_token,
    });
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, {
      id: alice.id,
      email: 'alice@example.test',
      plan: 'free',
      webhook_url: null,
      api_enabled: true,
    });
  });

  it('PUT /webapi/account sets and clears webhook_url', async () => {
    const set = await call<Record<string, unknown>>('PUT', '/webapi/account', {
      token: alice.api_token,
      body: { webhook_url: 'https://hooks.example.test/vigil' },
    });
    assert.equal(set.status, 200);
    assert.equal(set.body.webhook_url, 'https://hooks.example.test/vigil');
    const get = await call<Record<string, unknown>>('GET', '/webapi/account', {
      token: alice.api_token,
    });
    assert.equal(get.body.webhook_url, 'https://hooks.example.test/vigil');
    const cleared = await call<Record<string, unknown>>('PUT', '/webapi/account', {
      token: alice.api_token,
      body: { webhook_url: null },
    });
    assert.equal(cleared.status, 200);
    assert.equal(cleared.body.webhook_url, null);
  });

  it('PUT /webapi/account with a bad URL is a 422 on webhook_url', async () => {
    const res = await call<{ errors: Record<string, string[]> }>('PUT', '/webapi/account', {
      token: alice.api_token,
      body: { webhook_url: 'not a url' },
    });
    assert.equal(res.status, 422);
    assert.ok(Array.isArray(res.body.errors.webhook_url));
  });
});
