/**
 * Operations endpoints and rate limits (CONTRACT §4, issue 6) over real HTTP against the real
 * coordinator: /healthz, /readyz (503 until a probe connects), /metrics in Prometheus format,
 * the per-token limit with 429 + Retry-After and X-RateLimit-* on every /webapi response, and
 * the per-address limit on failed authentication.
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
