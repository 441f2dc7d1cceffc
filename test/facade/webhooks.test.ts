/**
 * `GET /webapi/webhooks` and `POST /webapi/webhooks/{id}/redeliver` (issue 4 item 4) over
 * real HTTP against a real Coordinator: listing newest first with filters and pages, the
 * item shape, ownership (another user's webhook is a plain 404), 409 for a pending one, and
 * redelivery of a failed (and a delivered) webhook as a new chain under the same parent id
 * with the same bytes and signature. Events come from real transitions: the coordinator runs
 * on a ManualClock with fake probe sessions answered the way the gRPC server does.
 */
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { ManualClock } from '../../src/common/clock.js';
import type { UserView, WebhookPage, WebhookView } from '../../src/common/service.js';
import { Coordinator } from '../../src/coordinator/coordinator.js';
import { buildApp } from '../../src/facade/app.js';
import {
  answer,
  FakeSession,
  quietLogger,
  sleep,
  startReceiver,
  tempDir,
  waitFor,
  type Receiver,
} from '../helpers.js';

interface Reply<T = unknown> {
  status: number;
  body: T;
}

const TIMESTAMP = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/;
const ITEM_KEYS = [
  'attempts',
  'body',
  'check_id',
  'created_at',
  'id',
  'monitor_id',
  'next_attempt_at',
  'parent_webhook',
  'signature',
  'status',
  'type',
];
const ATTEMPT_KEYS = ['at', 'duration_ms', 'error', 'id', 'status', 'try', 'url'];

let clock: ManualClock;
let coordinator: Coordinator;
let app: ReturnType<typeof buildApp>;
let base: string;
let sessions: FakeSession[];
/** Alice's receiver answers 500 until told otherwise; her events fail at the first try. */
let rAlice: Receiver;
let rBob: Receiver;
let rCarol: Receiver;
let aliceAnswers = 500;
let alice: UserView;
let bob: UserView;
/** Carol has no webhook URL: her events wait, pending. */
let carol: UserView;
const checkOf = new Map<number, number>(); // user id → uptime check id
const userOfCheck = new Map<number, number>();

const cleanups: Array<() => Promise<unknown>> = [];

async function call<T = unknown>(
  method: string,
  path: string,
  token: string | null,
  opts: { json?: boolean } = {},
): Promise<Reply<T>> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (token !== null) headers.authorization = `Bearer ${token}`;
  if (opts.json) headers['content-type'] = 'application/json';
  const res = await fetch(base + path, { method, headers });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : null) as T };
}

/** Answer every run request the fake probes hold: the driven check as `ok`, others as they are. */
function answerAll(driven: number, ok: boolean): void {
  for (const s of sessions) {
    for (const req of s.take()) {
      const userId = userOfCheck.get(req.check_id);
      const same =
        req.check_id === driven
          ? ok
          : userId === undefined || coordinator.getCheck(userId, req.check_id).status !== 'nok';
      answer(coordinator.scheduler, s, req, {
        ok: same,
        status: same ? 200 : 503,
        startedAt: clock.now(),
      });
    }
  }
}

/**
 * Make the user's check run now and drive it (with verification from the other location) to
 * `ok` or `nok`; the transition writes its webhook event. Then let a minute pass, so events
 * have distinct times.
 */
async function transition(userId: number, ok: boolean): Promise<void> {
  const checkId = checkOf.get(userId)!;
  const want = ok ? 'ok' : 'nok';
  await coordinator.setCheckEnabled(userId, checkId, false);
  await coordinator.setCheckEnabled(userId, checkId, true); // runs at once
  await waitFor(async () => {
    await clock.advance(0);
    answerAll(checkId, ok);
    return coordinator.getCheck(userId, checkId).status === want;
  }, `check ${checkId} ${want}`);
  await clock.advance(60_000);
}

async function list(token: string, query = ''): Promise<Reply<WebhookPage>> {
  return call<WebhookPage>('GET', `/webapi/webhooks${query}`, token);
}

/** Wait until a user's listing shows `n` webhooks, none of them pending (if `settled`). */
async function listed(token: string, n: number, settled = true): Promise<WebhookView[]> {
  return waitFor(async () => {
    const res = await list(token);
    assert.equal(res.status, 200);
    const items = res.body.data;
    return items.length === n && (!settled || items.every((w) => w.status !== 'pending'))
      ? items
      : null;
  }, `${n} webhooks listed`);
}

const hmac = (raw: Buffer, key: string): string =>
  createHmac('sha1', key).update(raw).digest('hex');

before(async () => {
  const fakeT = { after: (fn: () => unknown) => cleanups.push(async () => fn()) };
  const dir = await tempDir(fakeT);
  clock = new ManualClock(Date.UTC(2026, 2, 1, 9, 0, 0));
  coordinator = await Coordinator.open({
    dataDir: dir,
    clock,
    logger: quietLogger,
    allowPrivateWebhooks: true,
    // No retries here: the first failed try fails the event for good.
    delivery: { random: () => 0.5, giveUpAfterMs: 0 },
  });
  coordinator.start();
  sessions = [
    new FakeSession('probe-a', 'a', 50, clock.now()),
    new FakeSession('probe-b', 'b', 50, clock.now()),
  ];
  for (const s of sessions) coordinator.scheduler.sessionOpened(s);
  app = buildApp({
    service: coordinator,
    admin: coordinator,
    adminToken: 'admin-secret',
    logger: quietLogger,
    rateLimitPerMinute: 100_000,
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  rAlice = await startReceiver(() => aliceAnswers);
  rBob = await startReceiver(() => 200);
  rCarol = await startReceiver(() => 200);

  alice = await coordinator.createUser({
    email: 'alice@example.test',
    apiEnabled: true,
    webhookUrl: rAlice.url,
  });
  bob = await coordinator.createUser({
    email: 'bob@example.test',
    apiEnabled: true,
    webhookUrl: rBob.url,
  });
  carol = await coordinator.createUser({
    email: 'carol@example.test',
    apiEnabled: true,
    webhookUrl: null,
  });
  for (const [i, u] of [alice, bob, carol].entries()) {
    const m = await coordinator.createMonitor(u.id, { url: `http://127.0.0.1:9/site-${i}` });
    const uptime = m.checks.find((c) => c.name === 'uptime');
    assert.ok(uptime);
    checkOf.set(u.id, uptime.id);
    userOfCheck.set(uptime.id, u.id);
  }
  // First runs: everything up.
  for (const u of [alice, bob, carol]) await transition(u.id, true);

  // Alice: Down, Recovered, Down — each refused with a 500, so each fails for good.
  await transition(alice.id, false);
  await transition(alice.id, true);
  await transition(alice.id, false);
  // Bob: one Down, delivered. Carol: one Down, waiting for a URL.
  await transition(bob.id, false);
  await transition(carol.id, false);
  await waitFor(() => rAlice.requests.length === 3 && rBob.requests.length === 1, 'first tries');
});

after(async () => {
  await app?.close();
  await coordinator?.close();
  for (const r of [rAlice, rBob, rCarol]) await r?.close();
  for (const fn of cleanups.reverse()) await fn();
});

describe('GET /webapi/webhooks', () => {
  it('lists the user’s own webhooks, newest first, each with its tries', async () => {
    const items = await listed(alice.api_token, 3);
    assert.deepEqual(
      items.map((w) => w.type),
      ['Uptime Website - Down', 'Uptime Website - Recovered', 'Uptime Website - Down'],
    );
    const ids = items.map((w) => w.id);
    assert.deepEqual(
      ids,
      [...ids].sort((a, b) => b - a),
      'newest first',
    );
    assert.ok(items[0]!.created_at > items[2]!.created_at, 'newest first by time too');

    for (const w of items) {
      assert.deepEqual(Object.keys(w).sort(), ITEM_KEYS);
      assert.equal(w.status, 'failed');
      assert.equal(w.monitor_id, coordinator.listMonitors(alice.id)[0]!.id);
      assert.equal(w.check_id, checkOf.get(alice.id));
      assert.match(w.created_at, TIMESTAMP);
      assert.equal(w.next_attempt_at, null, 'nothing due for a failed webhook');
      assert.match(w.signature, /^[0-9a-f]{40}$/);
      assert.equal(w.attempts.length, 1);
      const a = w.attempts[0]!;
      assert.deepEqual(Object.keys(a).sort(), ATTEMPT_KEYS);
      assert.equal(a.try, 1);
      assert.equal(a.status, 500);
      assert.equal(a.error, null);
      assert.equal(a.url, rAlice.url);
      assert.match(a.at, TIMESTAMP);
      assert.equal(typeof a.duration_ms, 'number');
      assert.ok(a.duration_ms >= 0);
      assert.equal(w.parent_webhook, a.id, 'the parent is the first try');

      // What was listed is what was sent: the parsed body, the signature, the ids.
      const sent = rAlice.requests.find(
        (r) => r.headers['x-service-parent-webhook'] === String(w.parent_webhook),
      );
      assert.ok(sent, `webhook ${w.id} was POSTed`);
      assert.deepEqual(w.body, JSON.parse(sent.body));
      assert.equal(w.signature, sent.headers['x-service-signature']);
      assert.equal(w.signature, hmac(sent.raw, alice.api_token));
      assert.equal(sent.headers['x-service-webhook'], String(a.id));
      assert.equal(sent.headers['x-service-current-try'], '1');
    }
    const body = items[0]!.body as { check: Record<string, unknown>; monitor: { id: number } };
    assert.deepEqual(Object.keys(body), ['check', 'monitor']);
    assert.equal(body.check.status, 'nok');
    assert.equal(body.monitor.id, items[0]!.monitor_id);
  });

  it('pending: next_attempt_at set, no tries and no parent yet (no webhook URL)', async () => {
    const items = await listed(carol.api_token, 1, false);
    const w = items[0]!;
    assert.equal(w.status, 'pending');
    assert.match(w.next_attempt_at ?? '', TIMESTAMP);
    assert.deepEqual(w.attempts, []);
    assert.equal(w.parent_webhook, null);
    assert.equal(w.type, 'Uptime Website - Down');
  });

  it('filters by status', async () => {
    const failed = await list(alice.api_token, '?status=failed');
    assert.equal(failed.status, 200);
    assert.equal(failed.body.total, 3);
    assert.ok(failed.body.data.every((w) => w.status === 'failed'));
    for (const status of ['pending', 'delivered']) {
      const res = await list(alice.api_token, `?status=${status}`);
      assert.equal(res.status, 200);
      assert.deepEqual(res.body.data, []);
      assert.equal(res.body.total, 0);
    }
    const delivered = await list(bob.api_token, '?status=delivered');
    assert.equal(delivered.body.total, 1);
    assert.equal(delivered.body.data[0]?.attempts[0]?.status, 200);
    const pending = await list(carol.api_token, '?status=pending');
    assert.equal(pending.body.total, 1);
  });

  it('pages: page / per_page, total counts every match', async () => {
    const all = (await list(alice.api_token)).body;
    assert.equal(all.page, 1);
    assert.equal(all.per_page, 50, 'default page size');
    assert.equal(all.total, 3);
    const ids = all.data.map((w) => w.id);

    const p1 = (await list(alice.api_token, '?per_page=2')).body;
    assert.deepEqual(
      { page: p1.page, per_page: p1.per_page, total: p1.total },
      { page: 1, per_page: 2, total: 3 },
    );
    assert.deepEqual(
      p1.data.map((w) => w.id),
      ids.slice(0, 2),
    );
    const p2 = (await list(alice.api_token, '?per_page=2&page=2')).body;
    assert.equal(p2.page, 2);
    assert.deepEqual(
      p2.data.map((w) => w.id),
      ids.slice(2),
    );
    const p3 = (await list(alice.api_token, '?per_page=2&page=3')).body;
    assert.deepEqual(p3.data, []);
    assert.equal(p3.total, 3);
    const filtered = (await list(alice.api_token, '?status=failed&per_page=1&page=3')).body;
    assert.deepEqual(
      filtered.data.map((w) => w.id),
      [ids[2]],
    );
  });

  it('bad query values are a 422 naming the field', async () => {
    for (const [query, field] of [
      ['?status=bogus', 'status'],
      ['?status=', 'status'],
      ['?page=0', 'page'],
      ['?page=-1', 'page'],
      ['?page=abc', 'page'],
      ['?per_page=0', 'per_page'],
      ['?per_page=101', 'per_page'],
      ['?per_page=1.5', 'per_page'],
    ] as const) {
      const res = await call<{ message: string; errors?: Record<string, string[]> }>(
        'GET',
        `/webapi/webhooks${query}`,
        alice.api_token,
      );
      assert.equal(res.status, 422, query);
      assert.equal(typeof res.body.message, 'string', query);
      assert.ok(
        res.body.errors?.[field],
        `${query}: errors.${field} in ${JSON.stringify(res.body)}`,
      );
    }
  });

  it('never lists another user’s webhooks; no token is a 401', async () => {
    const bobs = (await list(bob.api_token)).body;
    assert.equal(bobs.total, 1);
    const bobMonitor = coordinator.listMonitors(bob.id)[0]!.id;
    assert.ok(bobs.data.every((w) => w.monitor_id === bobMonitor));
    const aliceIds = new Set((await list(alice.api_token)).body.data.map((w) => w.id));
    assert.ok(bobs.data.every((w) => !aliceIds.has(w.id)));
    const anon = await call('GET', '/webapi/webhooks', null);
    assert.equal(anon.status, 401);
    assert.deepEqual(anon.body, { message: 'Unauthenticated.' });
  });
});

describe('POST /webapi/webhooks/{id}/redeliver', () => {
  it('another user’s webhook, an unknown id or a malformed one: 404 Webhook not found', async () => {
    const aliceIds = (await list(alice.api_token)).body.data.map((w) => w.id);
    for (const path of [
      `/webapi/webhooks/${aliceIds[0]}/redeliver`,
      '/webapi/webhooks/999999/redeliver',
      '/webapi/webhooks/abc/redeliver',
      '/webapi/webhooks/0/redeliver',
    ]) {
      const res = await call('POST', path, bob.api_token);
      assert.equal(res.status, 404, path);
      assert.deepEqual(res.body, { message: 'Webhook not found.' }, path);
    }
    // Nothing was re-queued for Alice.
    const still = await list(alice.api_token, '?status=failed');
    assert.equal(still.body.total, 3);
  });

  it('a pending webhook: 409', async () => {
    const w = (await listed(carol.api_token, 1, false))[0]!;
    const res = await call('POST', `/webapi/webhooks/${w.id}/redeliver`, carol.api_token);
    assert.equal(res.status, 409);
    assert.deepEqual(res.body, { message: 'The webhook is still being delivered.' });
  });

  it('a failed webhook: pending again, then delivered — try 1, same parent, bytes, signature', async () => {
    const items = await listed(alice.api_token, 3);
    const oldest = items[2]!; // the first Down
    const original = rAlice.requests.find(
      (r) => r.headers['x-service-parent-webhook'] === String(oldest.parent_webhook),
    );
    assert.ok(original);
    aliceAnswers = 200;
    const before = rAlice.requests.length;

    const res = await call<WebhookView>(
      'POST',
      `/webapi/webhooks/${oldest.id}/redeliver`,
      alice.api_token,
      { json: true }, // the spec's clients send Content-Type: application/json, no body
    );
    assert.equal(res.status, 200);
    assert.deepEqual(Object.keys(res.body).sort(), ITEM_KEYS);
    assert.equal(res.body.id, oldest.id);
    assert.equal(res.body.status, 'pending');
    assert.equal(res.body.parent_webhook, oldest.parent_webhook, 'same parent id');
    assert.equal(res.body.signature, oldest.signature);
    assert.deepEqual(res.body.body, oldest.body);

    await waitFor(() => rAlice.requests.length > before, 'the redelivered POST');
    const again = rAlice.requests[before]!;
    assert.equal(again.headers['x-service-current-try'], '1', 'a new chain starts at try 1');
    assert.equal(again.headers['x-service-parent-webhook'], String(oldest.parent_webhook));
    assert.notEqual(again.headers['x-service-webhook'], String(oldest.parent_webhook));
    assert.ok(again.raw.equals(original.raw), 'the same body bytes');
    assert.equal(again.headers['x-service-signature'], original.headers['x-service-signature']);
    assert.equal(again.headers['x-service-signature'], hmac(again.raw, alice.api_token));

    const after = await waitFor(async () => {
      const w = (await list(alice.api_token)).body.data.find((x) => x.id === oldest.id);
      return w?.status === 'delivered' ? w : null;
    }, 'delivered');
    assert.deepEqual(
      after.attempts.map((a) => [a.try, a.status]),
      [
        [1, 500],
        [1, 200],
      ],
    );
    assert.equal(String(after.attempts[1]!.id), again.headers['x-service-webhook']);
    assert.equal(after.next_attempt_at, null);
    assert.equal((await list(alice.api_token, '?status=failed')).body.total, 2);
    assert.equal((await list(alice.api_token, '?status=delivered')).body.total, 1);
    // Only that one was sent again.
    await sleep(100);
    assert.equal(rAlice.requests.length, before + 1);
  });

  it('a delivered webhook can be sent again too (same parent, try 1)', async () => {
    const w = (await list(bob.api_token)).body.data[0]!;
    assert.equal(w.status, 'delivered');
    const before = rBob.requests.length;
    const res = await call<WebhookView>(
      'POST',
      `/webapi/webhooks/${w.id}/redeliver`,
      bob.api_token,
    );
    assert.equal(res.status, 200);
    assert.equal(res.body.status, 'pending');
    await waitFor(() => rBob.requests.length > before, 'the redelivered POST');
    const r = rBob.requests[before]!;
    assert.equal(r.headers['x-service-current-try'], '1');
    assert.equal(r.headers['x-service-parent-webhook'], String(w.parent_webhook));
    assert.ok(r.raw.equals(rBob.requests[0]!.raw));
    const done = await waitFor(async () => {
      const x = (await list(bob.api_token)).body.data[0];
      return x?.status === 'delivered' ? x : null;
    }, 'delivered again');
    assert.equal(done.attempts.length, 2);
  });

  it('a webhook waiting for a URL goes out once the account gets one', async () => {
    const put = await fetch(`${base}/webapi/account`, {
      method: 'PUT',
      headers: {
        authorization: `Bearer ${carol.api_token}`,
        'content-type': 'application/json',
      },
      body: JSON.stringify({ webhook_url: rCarol.url }),
    });
    assert.equal(put.status, 200);
    await waitFor(() => rCarol.requests.length === 1, 'carol’s webhook');
    const r = rCarol.requests[0]!;
    assert.equal(r.headers['x-service-current-try'], '1');
    assert.equal(r.headers['x-service-signature'], hmac(r.raw, carol.api_token));
    const w = await waitFor(async () => {
      const x = (await list(carol.api_token)).body.data[0];
      return x?.status === 'delivered' ? x : null;
    }, 'carol’s webhook delivered');
    assert.equal(String(w.parent_webhook), r.headers['x-service-webhook']);
  });
});
