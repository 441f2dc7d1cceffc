/**
 * Operations endpoints and rate limits (CONTRACT §4, issue 6) over real HTTP against the real
 * coordinator: /healthz, /readyz (503 until a probe connects), /metrics in Prometheus format,
 * the per-token limit with 429 + Retry-After and X-RateLimit-* on every response (unknown
 * routes, 405, operations routes, body and router errors included), and the per-address limit
 * on failed authentication.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { pino } from 'pino';
import type { UserView } from '../../src/common/service.js';
import { Coordinator } from '../../src/coordinator/coordinator.js';
import type { Run } from '../../src/coordinator/probe-registry.js';
import { buildApp } from '../../src/facade/app.js';

const LIMIT = 5;
let dir: string;
let coordinator: Coordinator;
let app: ReturnType<typeof buildApp>;
let base: string;
let alice: UserView;
let bob: UserView;
let carol: UserView;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'vigil-facade-ops-'));
  coordinator = await Coordinator.open({ dataDir: dir, logger: pino({ level: 'silent' }) });
  coordinator.start();
  app = buildApp({
    service: coordinator,
    admin: coordinator,
    adminToken: 'x'.repeat(32),
    logger: pino({ level: 'silent' }),
    rateLimitPerMinute: LIMIT,
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  alice = await coordinator.createUser({
    email: 'alice@example.com',
    plan: 'pro',
    apiEnabled: true,
  });
  bob = await coordinator.createUser({ email: 'bob@example.com', plan: 'pro', apiEnabled: true });
  carol = await coordinator.createUser({
    email: 'carol@example.com',
    plan: 'pro',
    apiEnabled: true,
  });
});

after(async () => {
  await app.close();
  await coordinator.close();
  await rm(dir, { recursive: true, force: true });
});

describe('operations endpoints', { timeout: 30_000 }, () => {
  it('/healthz answers without a token', async () => {
    const res = await fetch(`${base}/healthz`);
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { status: 'ok' });
  });

  it('/readyz is 503 with no probe and 200 once one is connected', async () => {
    const before = await fetch(`${base}/readyz`);
    assert.equal(before.status, 503);
    assert.match(((await before.json()) as { message: string }).message, /no probe/);
    coordinator.scheduler.sessionOpened({
      id: 'ops-probe',
      location: 'here',
      capacity: 1,
      inflight: new Map<number, Run>(),
      lastSeenAt: Date.now(),
      send: () => undefined,
      close: () => undefined,
    });
    try {
      const ready = await fetch(`${base}/readyz`);
      assert.equal(ready.status, 200);
      assert.deepEqual(await ready.json(), { status: 'ready', probes: 1 });
      const metrics = await (await fetch(`${base}/metrics`)).text();
      assert.match(metrics, /^vigil_probes_connected\{location="here"\} 1$/m);
    } finally {
      coordinator.scheduler.sessionClosed('ops-probe', 'test done');
    }
  });

  it('/metrics speaks the Prometheus text format with vigil_ names', async () => {
    const res = await fetch(`${base}/metrics`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/plain/);
    const text = await res.text();
    for (const name of [
      'vigil_check_runs_total',
      'vigil_schedule_lag_seconds',
      'vigil_verification_latency_seconds',
      'vigil_webhook_attempts_total',
      'vigil_outbox_depth',
      'vigil_api_requests_total',
      'vigil_process_cpu_seconds_total',
    ]) {
      assert.match(text, new RegExp(`^# TYPE ${name} `, 'm'), name);
    }
    assert.match(text, /^vigil_api_requests_total\{route="\/healthz",status="200"\} \d+$/m);
  });
});

describe('rate limits', { timeout: 30_000 }, () => {
  it(`allows ${LIMIT} requests a minute per token, then 429 with Retry-After; other tokens go on`, async () => {
    const get = (token: string) =>
      fetch(`${base}/webapi/monitors`, { headers: { authorization: `Bearer ${token}` } });
    for (let i = 0; i < LIMIT; i++) {
      const res = await get(alice.api_token);
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('x-ratelimit-limit'), String(LIMIT));
      assert.equal(res.headers.get('x-ratelimit-remaining'), String(LIMIT - i - 1));
    }
    const limited = await get(alice.api_token);
    assert.equal(limited.status, 429);
    assert.match(limited.headers.get('retry-after') ?? '', /^\d+$/);
    assert.equal(limited.headers.get('x-ratelimit-remaining'), '0');
    const body = (await limited.json()) as { message: string };
    assert.match(body.message, /Too many requests/);
    const other = await get(bob.api_token);
    assert.equal(other.status, 200, "another user's token has its own budget");
  });

  it('failed authentications from one address are limited too', async () => {
    let last = 0;
    for (let i = 0; i < 40 && last !== 429; i++) {
      const res = await fetch(`${base}/webapi/account?api_key=guess-${i}`);
      last = res.status;
      assert.ok(res.headers.get('x-ratelimit-limit') !== null, 'headers on refused requests too');
      await res.arrayBuffer();
    }
    assert.equal(last, 429);
  });
});

describe('X-RateLimit-* on every response (CONTRACT §4)', { timeout: 30_000 }, () => {
  // Carol's own budget, so that the other tests' spending does not matter.
  const auth = (): Record<string, string> => ({ authorization: `Bearer ${carol.api_token}` });
  const expectHeaders = (
    where: string,
    headers: { get(name: string): string | null },
    remaining: number,
  ): void => {
    assert.equal(headers.get('x-ratelimit-limit'), String(LIMIT), `${where}: limit`);
    assert.equal(headers.get('x-ratelimit-remaining'), String(remaining), `${where}: remaining`);
  };
  const headersOf = (res: { headers: Record<string, unknown> }) => ({
    get: (name: string): string | null =>
      res.headers[name] === undefined ? null : String(res.headers[name]),
  });

  it('unknown routes and 405s are counted; operations routes and early errors only report', async () => {
    const notFound = await fetch(`${base}/webapi/nope`, { headers: auth() });
    assert.equal(notFound.status, 404);
    expectHeaders('404', notFound.headers, LIMIT - 1);
    await notFound.arrayBuffer();

    const notAllowed = await fetch(`${base}/healthz`, { method: 'DELETE', headers: auth() });
    assert.equal(notAllowed.status, 405);
    assert.equal(notAllowed.headers.get('allow'), 'GET, HEAD');
    expectHeaders('405', notAllowed.headers, LIMIT - 2);
    await notAllowed.arrayBuffer();

    // Not counted: they report the budget without spending it.
    for (const path of ['/healthz', '/readyz', '/metrics']) {
      const res = await fetch(`${base}${path}`, { headers: auth() });
      assert.ok(res.status === 200 || res.status === 503, `${path} ${res.status}`);
      expectHeaders(path, res.headers, LIMIT - 2);
      await res.arrayBuffer();
    }

    // Errors raised before the limiter runs: a body over 64 KiB and a malformed body on an
    // unknown route (the body is read before the not-found handler), a malformed URL.
    const tooLarge = await app.inject({
      method: 'POST',
      url: '/nope',
      headers: { ...auth(), 'content-type': 'application/json' },
      payload: JSON.stringify({ pad: 'x'.repeat(70 * 1024) }),
    });
    assert.equal(tooLarge.statusCode, 413);
    expectHeaders('413', headersOf(tooLarge), LIMIT - 2);
    const badJson = await app.inject({
      method: 'POST',
      url: '/nope',
      headers: { ...auth(), 'content-type': 'application/json' },
      payload: '{"broken',
    });
    assert.equal(badJson.statusCode, 400);
    expectHeaders('400 (body)', headersOf(badJson), LIMIT - 2);
    const badUrl = await fetch(`${base}/webapi/checks/%E0%A4%A`, { headers: auth() });
    assert.equal(badUrl.status, 400);
    expectHeaders('400 (URL)', badUrl.headers, LIMIT - 2);
    await badUrl.arrayBuffer();

    // /webapi/openapi.json is counted, and so is a 413 on a /webapi route.
    const doc = await fetch(`${base}/webapi/openapi.json`, { headers: auth() });
    assert.equal(doc.status, 200);
    expectHeaders('openapi.json', doc.headers, LIMIT - 3);
    await doc.arrayBuffer();
    const tooLargeApi = await app.inject({
      method: 'POST',
      url: '/webapi/monitors',
      headers: { ...auth(), 'content-type': 'application/json' },
      payload: JSON.stringify({ pad: 'x'.repeat(70 * 1024) }),
    });
    assert.equal(tooLargeApi.statusCode, 413);
    expectHeaders('413 (/webapi)', headersOf(tooLargeApi), LIMIT - 4);
  });

  it('an unknown route past the budget is a 429 with Retry-After', async () => {
    let last: Response | undefined;
    for (let i = 0; i < LIMIT + 1; i++) {
      last = await fetch(`${base}/webapi/nope`, { headers: auth() });
      await last.arrayBuffer();
      if (last.status === 429) break;
    }
    assert.equal(last?.status, 429);
    assert.match(last.headers.get('retry-after') ?? '', /^\d+$/);
    expectHeaders('429', last.headers, 0);
    const health = await fetch(`${base}/healthz`, { headers: auth() });
    assert.equal(health.status, 200, 'operations routes are never limited');
    expectHeaders('/healthz when spent', health.headers, 0);
    await health.arrayBuffer();
  });

  it('without a token, by address', async () => {
    const res = await fetch(`${base}/healthz`);
    assert.equal(res.headers.get('x-ratelimit-limit'), String(LIMIT));
    assert.match(res.headers.get('x-ratelimit-remaining') ?? '', /^\d+$/);
    await res.arrayBuffer();
  });
});
