/**
 * Webhook delivery (spec §6, CONTRACT §6): a real Dispatcher on a real LevelStore POSTing to a
 * real loopback receiver. Time is a ManualClock (the retry schedule), I/O is real, so every
 * step waits in real time for the I/O to finish before the clock is moved again.
 */
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { createServer as createNetServer, type AddressInfo, type Socket } from 'node:net';
import { describe, test, type TestContext } from 'node:test';
import { backoffDelayMs, type BackoffOptions } from '../../src/common/backoff.js';
import { ManualClock } from '../../src/common/clock.js';
import { LevelStore } from '../../src/coordinator/store/level-store.js';
import type { Sequences } from '../../src/coordinator/store/store.js';
import { DEFAULT_BACKOFF, Dispatcher, WEBHOOK_USER_AGENT } from '../../src/delivery/dispatcher.js';
import { verifyWebhook } from '../../src/delivery/signature.js';
import { webhookBody, type OutboxEvent } from '../../src/domain/events.js';
import {
  quietLogger,
  sleep,
  startReceiver,
  statuses,
  tempDir,
  waitFor,
  type ReceivedRequest,
  type Receiver,
  storeNewEvent,
} from '../helpers.js';

/** Every test here does real I/O; none may hang the run. */
const LIMIT = { timeout: 30_000 };

const TOKEN = 'k3y-of-user-1-Zm9vYmFyYmF6cXV4cXV1eHF1dXhxdXV4cXV1eA';
const S = 1000;
const H = 3600 * S;
const DAY = 24 * H;
const QUIET_MS = 150; // real time allowed for a request that must not come

interface Harness {
  clock: ManualClock;
  store: LevelStore;
  seq: Sequences;
  receiver: Receiver;
  dispatcher: Dispatcher;
  /** webhook URL per user id; the dispatcher reads it on every attempt */
  urls: Map<number, string | null>;
  /** Write a pending event for `monitorId` into the store and return it (not yet enqueued). */
  makeEvent(monitorId: number, alias: string, userId?: number): Promise<OutboxEvent>;
  /** The event as stored now. */
  stored(id: number): Promise<OutboxEvent | undefined>;
  /** Wait until the stored event has `n` attempts recorded (and `status` if given). */
  recorded(id: number, n: number, status?: OutboxEvent['status']): Promise<OutboxEvent>;
}

async function harness(
  t: TestContext,
  opts: { respond?: (req: ReceivedRequest, i: number) => number; backoff?: BackoffOptions } = {},
): Promise<Harness> {
  const dir = await tempDir(t);
  const clock = new ManualClock(Date.UTC(2026, 0, 1, 8, 0, 0));
  const store = await LevelStore.open(dir);
  const seq = (await store.load()).seq;
  const receiver = await startReceiver(opts.respond);
  const urls = new Map<number, string | null>([[1, receiver.url]]);
  const dispatcher = new Dispatcher({
    clock,
    store,
    seq,
    webhookUrl: (userId) => urls.get(userId) ?? null,
    logger: quietLogger,
    random: () => 0.5, // no jitter: 10 s, 20 s, 40 s … exactly
    ...(opts.backoff ? { backoff: opts.backoff } : {}),
  });
  t.after(async () => {
    await dispatcher.stop();
    await store.close();
    await receiver.close();
  });

  const h: Harness = {
    clock,
    store,
    seq,
    receiver,
    dispatcher,
    urls,
    async makeEvent(monitorId, alias, userId = 1) {
      const body = JSON.stringify(
        webhookBody(
          {
            type: 'uptime.down',
            at: clock.now(),
            httpStatusCode: 503,
            error: '503 - Service Unavailable',
            detectedBy: 'local-a',
            verifiedVia: 'local-b',
          },
          { id: monitorId, userId, url: `https://${alias}.example.com/`, alias, createdAt: 0 },
        ),
      );
      const event = await storeNewEvent(store, seq, {
        userId,
        monitorId,
        checkId: monitorId * 10,
        type: 'uptime.down',
        body,
        token: TOKEN,
        at: clock.now(),
      });
      return event;
    },
    async stored(id) {
      return (await store.load()).events.find((e) => e.id === id);
    },
    async recorded(id, n, status) {
      return waitFor(
        async () => {
          const e = await h.stored(id);
          return e && e.attempts.length === n && (!status || e.status === status) ? e : null;
        },
        `event ${id} with ${n} attempts${status ? ` and status ${status}` : ''}`,
      );
    },
  };
  return h;
}

/** Alias of the monitor a received webhook is about. */
const aliasOf = (r: ReceivedRequest): string =>
  (JSON.parse(r.body) as { monitor: { alias: string } }).monitor.alias;

describe('Dispatcher', () => {
  test(
    'retries until 200: same bytes and signature, try 1,2,3, one parent, unique ids',
    LIMIT,
    async (t) => {
      const h = await harness(t, { respond: statuses([500, 500, 200]) });
      const ev = await h.makeEvent(1, 'alpha');
      h.dispatcher.start();
      h.dispatcher.enqueue(ev);

      await h.recorded(ev.id, 1);
      assert.equal(h.receiver.requests.length, 1);

      // First retry after 10 s (jitter neutral), not before.
      await h.clock.advance(10 * S - 1);
      await sleep(QUIET_MS);
      assert.equal(h.receiver.requests.length, 1, 'no second try before 10 s');
      await h.clock.advance(1);
      await h.recorded(ev.id, 2);

      await h.clock.advance(20 * S - 1);
      await sleep(QUIET_MS);
      assert.equal(h.receiver.requests.length, 2, 'no third try before 20 s more');
      await h.clock.advance(1);
      const done = await h.recorded(ev.id, 3, 'delivered');

      const reqs = h.receiver.requests;
      assert.deepEqual(
        reqs.map((r) => r.status),
        [500, 500, 200],
      );
      const first = reqs[0];
      assert.ok(first);
      const expectedSig = createHmac('sha1', TOKEN).update(first.raw).digest('hex');
      assert.match(expectedSig, /^[0-9a-f]{40}$/);
      for (const [i, r] of reqs.entries()) {
        assert.equal(r.method, 'POST');
        assert.equal(r.path, '/hook');
        assert.ok(r.raw.equals(Buffer.from(ev.body)), `try ${i + 1}: same body bytes`);
        assert.equal(r.headers['x-service-signature'], expectedSig, `try ${i + 1}: same signature`);
        assert.ok(verifyWebhook(r.raw, String(r.headers['x-service-signature']), TOKEN));
        assert.equal(r.headers['x-service-current-try'], String(i + 1));
        assert.equal(r.headers['x-service-parent-webhook'], first.headers['x-service-webhook']);
        assert.equal(r.headers['user-agent'], 'Vigil/1.0');
        assert.equal(r.headers['content-type'], 'application/json');
        assert.match(String(r.headers['x-service-webhook']), /^\d+$/);
      }
      assert.equal(WEBHOOK_USER_AGENT, 'Vigil/1.0');
      const ids = reqs.map((r) => String(r.headers['x-service-webhook']));
      assert.equal(new Set(ids).size, 3, 'X-Service-Webhook unique per attempt');

      // The outbox record matches what was sent.
      assert.deepEqual(
        done.attempts.map((a) => [String(a.id), a.try, a.status, a.url]),
        ids.map((id, i) => [id, i + 1, [500, 500, 200][i], h.receiver.url]),
      );
      assert.equal(String(done.parentAttemptId), ids[0]);
      assert.equal(done.attempts[1]?.at, done.attempts[0]!.at + 10 * S);
      assert.equal(done.attempts[2]?.at, done.attempts[1]!.at + 20 * S);

      // Delivered means done: nothing more, however long we wait.
      await h.clock.advance(2 * H);
      await sleep(QUIET_MS);
      assert.equal(h.receiver.requests.length, 3);
    },
  );

  test(
    'only 200 ends delivery: 204 and a redirect are retried, the redirect is not followed',
    LIMIT,
    async (t) => {
      const h = await harness(t, { respond: statuses([204, 302, 200]) });
      const ev = await h.makeEvent(1, 'alpha');
      h.dispatcher.start();
      h.dispatcher.enqueue(ev);
      await h.recorded(ev.id, 1);
      await h.clock.advance(10 * S);
      await h.recorded(ev.id, 2);
      await h.clock.advance(20 * S);
      await h.recorded(ev.id, 3, 'delivered');
      assert.deepEqual(
        h.receiver.requests.map((r) => [r.path, r.status]),
        [
          ['/hook', 204],
          ['/hook', 302],
          ['/hook', 200],
        ],
      );
    },
  );

  test('a refused connection is recorded and retried', LIMIT, async (t) => {
    const h = await harness(t);
    const gone = await startReceiver();
    const deadUrl = gone.url;
    await gone.close();
    h.urls.set(1, deadUrl);
    const ev = await h.makeEvent(1, 'alpha');
    h.dispatcher.start();
    h.dispatcher.enqueue(ev);
    const after1 = await h.recorded(ev.id, 1);
    assert.equal(after1.status, 'pending');
    assert.equal(after1.attempts[0]?.status, null);
    assert.equal(after1.attempts[0]?.error, 'Connection refused');
    h.urls.set(1, h.receiver.url);
    await h.clock.advance(10 * S);
    await h.recorded(ev.id, 2, 'delivered');
    assert.equal(h.receiver.requests[0]?.headers['x-service-current-try'], '2');
  });

  test('a receiver that never answers times out and the event is retried', LIMIT, async (t) => {
    const h = await harness(t);
    // A raw socket server that accepts and never answers.
    const sockets = new Set<Socket>();
    const silent = createNetServer((s) => {
      sockets.add(s);
      s.on('error', () => undefined);
    });
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    t.after(
      () =>
        new Promise<void>((r) => {
          for (const s of sockets) s.destroy();
          silent.close(() => r());
        }),
    );
    h.urls.set(1, `http://127.0.0.1:${(silent.address() as AddressInfo).port}/hook`);
    const dispatcher = new Dispatcher({
      clock: h.clock,
      store: h.store,
      seq: h.seq,
      webhookUrl: (userId) => h.urls.get(userId) ?? null,
      logger: quietLogger,
      random: () => 0.5,
      timeoutMs: 200,
    });
    t.after(() => dispatcher.stop());
    const ev = await h.makeEvent(1, 'alpha');
    dispatcher.start();
    dispatcher.enqueue(ev);
    const after1 = await h.recorded(ev.id, 1);
    assert.equal(after1.status, 'pending');
    assert.equal(after1.attempts[0]?.status, null);
    assert.match(after1.attempts[0]?.error ?? '', /^Timed out after 0\.2 s$/);
    assert.equal(after1.nextAttemptAt, after1.attempts[0]!.at + 10 * S);

    h.urls.set(1, h.receiver.url);
    await h.clock.advance(10 * S);
    await h.recorded(ev.id, 2, 'delivered');
  });

  test(
    'per-monitor order: event 2 waits for event 1’s 200, another monitor goes meanwhile',
    LIMIT,
    async (t) => {
      let alphaTries = 0;
      const h = await harness(t, {
        respond: (r) => (aliasOf(r) === 'one' && ++alphaTries === 1 ? 500 : 200),
      });
      const e1 = await h.makeEvent(1, 'one');
      const e2 = await h.makeEvent(1, 'two');
      const e3 = await h.makeEvent(2, 'other');
      h.dispatcher.start();
      h.dispatcher.enqueue(e1);
      h.dispatcher.enqueue(e2);
      h.dispatcher.enqueue(e3);

      await h.recorded(e1.id, 1);
      await h.recorded(e3.id, 1, 'delivered');
      await sleep(QUIET_MS);
      assert.deepEqual(h.receiver.requests.map(aliasOf).sort(), ['one', 'other']);
      assert.equal((await h.stored(e2.id))?.attempts.length, 0, 'event 2 not sent before event 1');

      await h.clock.advance(10 * S);
      await h.recorded(e1.id, 2, 'delivered');
      await h.recorded(e2.id, 1, 'delivered');
      const seen = h.receiver.requests.map(aliasOf);
      assert.equal(seen.length, 4);
      assert.deepEqual(seen.slice(2), ['one', 'two'], 'event 2 only after event 1 got its 200');
      const e1ok = h.receiver.requests[2];
      const e2req = h.receiver.requests[3];
      assert.ok(e1ok && e2req && e2req.receivedAt >= e1ok.receivedAt);
    },
  );

  test(
    'an event with no webhook URL waits until one is set and kick() is called',
    LIMIT,
    async (t) => {
      const h = await harness(t);
      h.urls.set(7, null);
      const ev = await h.makeEvent(3, 'nourl', 7);
      h.dispatcher.start();
      h.dispatcher.enqueue(ev);
      await h.clock.advance(6 * H);
      await sleep(QUIET_MS);
      assert.equal(h.receiver.requests.length, 0);
      const waiting = await h.stored(ev.id);
      assert.equal(waiting?.status, 'pending');
      assert.equal(waiting?.attempts.length, 0);

      h.urls.set(7, h.receiver.url);
      h.dispatcher.kick();
      await h.recorded(ev.id, 1, 'delivered');
      assert.equal(h.receiver.requests.length, 1);
      assert.equal(h.receiver.requests[0]?.headers['x-service-current-try'], '1');
    },
  );

  test(
    'gives up after 3 days of failures: status failed, kept, and the monitor’s next event goes',
    LIMIT,
    async (t) => {
      const h = await harness(t, { respond: (r) => (aliasOf(r) === 'doomed' ? 500 : 200) });
      const doomed = await h.makeEvent(1, 'doomed');
      const next = await h.makeEvent(1, 'next');
      const created = h.clock.now();
      h.dispatcher.start();
      h.dispatcher.enqueue(doomed);
      h.dispatcher.enqueue(next);

      let tries = 0;
      let current: OutboxEvent | undefined;
      for (;;) {
        tries++;
        current = await h.recorded(doomed.id, tries);
        if (current.status !== 'pending') break;
        assert.ok(tries < 200, 'too many attempts');
        assert.ok(h.clock.now() - created < 3 * DAY, 'still pending after 3 days');
        const delay = current.nextAttemptAt - h.clock.now();
        assert.equal(
          delay,
          backoffDelayMs(tries, DEFAULT_BACKOFF, () => 0.5),
          `delay after try ${tries}`,
        );
        await h.clock.advance(delay);
      }
      assert.equal(current.status, 'failed');
      const last = current.attempts.at(-1);
      const beforeLast = current.attempts.at(-2);
      assert.ok(last && beforeLast);
      assert.ok(last.at - created >= 3 * DAY, 'failed only once 3 days passed');
      assert.ok(beforeLast.at - created < 3 * DAY, 'not given up earlier');
      assert.ok(current.attempts.every((a) => a.status === 500));
      // Delays doubled from 10 s up to the 1 h cap.
      const gaps = current.attempts.slice(1).map((a, i) => a.at - current!.attempts[i]!.at);
      assert.deepEqual(gaps.slice(0, 4), [10 * S, 20 * S, 40 * S, 80 * S]);
      assert.ok(gaps.every((g) => g <= H));
      assert.equal(gaps.at(-1), H);

      // The monitor's queue moves on to the next event.
      await h.recorded(next.id, 1, 'delivered');
      // And the failed one is kept, and never sent again.
      const doomedCount = h.receiver.requests.filter((r) => aliasOf(r) === 'doomed').length;
      await h.clock.advance(6 * H);
      await sleep(QUIET_MS);
      assert.equal(h.receiver.requests.filter((r) => aliasOf(r) === 'doomed').length, doomedCount);
      assert.equal((await h.stored(doomed.id))?.status, 'failed');
    },
  );

  test(
    'resumes after a restart from the outbox: same bytes, next try number, same parent',
    LIMIT,
    async (t) => {
      const dir = await tempDir(t);
      const clock = new ManualClock(Date.UTC(2026, 0, 1, 8, 0, 0));
      const receiver = await startReceiver(statuses([500, 200]));
      t.after(() => receiver.close());
      const open = async () => {
        const store = await LevelStore.open(dir);
        const snap = await store.load();
        const dispatcher = new Dispatcher({
          clock,
          store,
          seq: snap.seq,
          webhookUrl: () => receiver.url,
          logger: quietLogger,
          random: () => 0.5,
        });
        return { store, snap, dispatcher };
      };
      const a = await open();
      const body = '{"check":{"name":"uptime"},"monitor":{"id":1,"url":"http://x/","alias":"x"}}';
      const ev = await storeNewEvent(a.store, a.snap.seq, {
        userId: 1,
        monitorId: 1,
        checkId: 1,
        type: 'uptime.down',
        body,
        token: TOKEN,
        at: clock.now(),
      });
      a.dispatcher.start();
      a.dispatcher.enqueue(ev);
      await waitFor(async () => {
        const e = (await a.store.load()).events[0];
        return e?.attempts.length === 1;
      }, 'first attempt recorded');
      await a.dispatcher.stop();
      await a.store.close();

      await clock.advance(60 * S);
      const b = await open();
      t.after(async () => {
        await b.dispatcher.stop();
        await b.store.close();
      });
      b.dispatcher.load(b.snap.events);
      b.dispatcher.start();
      await waitFor(
        async () => (await b.store.load()).events[0]?.status === 'delivered',
        'delivered',
      );
      const [r1, r2] = receiver.requests;
      assert.ok(r1 && r2);
      assert.equal(receiver.requests.length, 2);
      assert.ok(r2.raw.equals(r1.raw));
      assert.equal(r2.headers['x-service-signature'], r1.headers['x-service-signature']);
      assert.equal(r2.headers['x-service-current-try'], '2');
      assert.equal(r2.headers['x-service-parent-webhook'], r1.headers['x-service-webhook']);
      assert.notEqual(r2.headers['x-service-webhook'], r1.headers['x-service-webhook']);
    },
  );
});

describe('backoffDelayMs', { timeout: 30_000 }, () => {
  const opts = DEFAULT_BACKOFF;

  test('the defaults are 10 s doubling to 1 h with ±10 % jitter', () => {
    assert.deepEqual(opts, { initialMs: 10_000, maxMs: 3_600_000, jitter: 0.1 });
  });

  test('attempt 1 is 9–11 s with jitter 0.1', () => {
    assert.equal(
      backoffDelayMs(1, opts, () => 0),
      9_000,
    );
    assert.equal(
      backoffDelayMs(1, opts, () => 0.5),
      10_000,
    );
    assert.ok(backoffDelayMs(1, opts, () => 0.999999) <= 11_000);
    assert.ok(backoffDelayMs(1, opts, () => 0.999999) > 10_999);
    for (let i = 0; i < 1000; i++) {
      const d = backoffDelayMs(1, opts);
      assert.ok(d >= 9_000 && d <= 11_000, `attempt 1 delay ${d}`);
    }
  });

  test('doubles each attempt', () => {
    const mid = (n: number) => backoffDelayMs(n, opts, () => 0.5);
    assert.deepEqual(
      [1, 2, 3, 4, 5, 6, 7, 8, 9].map(mid),
      [10, 20, 40, 80, 160, 320, 640, 1280, 2560].map((s) => s * 1000),
    );
  });

  test('capped at 1 h, jitter never goes above the cap', () => {
    for (const n of [10, 11, 20, 50, 1000]) {
      assert.equal(
        backoffDelayMs(n, opts, () => 0.5),
        3_600_000,
        `attempt ${n}`,
      );
      assert.equal(
        backoffDelayMs(n, opts, () => 0.999999),
        3_600_000,
      );
      assert.equal(
        backoffDelayMs(n, opts, () => 0),
        3_240_000,
      );
      for (let i = 0; i < 200; i++) {
        const d = backoffDelayMs(n, opts);
        assert.ok(d >= 3_240_000 && d <= 3_600_000, `attempt ${n} delay ${d}`);
      }
    }
  });

  test('never negative, even for odd inputs', () => {
    assert.equal(
      backoffDelayMs(0, opts, () => 0.5),
      10_000,
    );
    assert.ok(backoffDelayMs(1, { initialMs: 100, maxMs: 1000, jitter: 1 }, () => 0) >= 0);
  });
});
