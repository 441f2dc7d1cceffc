/**
 * A hung receiver does not slow anyone else (issue 4 item 3): user A's receiver accepts
 * connections and never answers, with many of A's events queued; user B's webhooks, on other
 * receiver hosts (another loopback address, and another port on A's address), still arrive
 * promptly. At most `maxPerHost` attempts are ever open to A, and A's attempts end as
 * timeouts that are retried later. A real Dispatcher on a real LevelStore, real sockets.
 */
import assert from 'node:assert/strict';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { describe, test, type TestContext } from 'node:test';
import { ManualClock } from '../../src/common/clock.js';
import { LevelStore } from '../../src/coordinator/store/level-store.js';
import type { Sequences } from '../../src/coordinator/store/store.js';
import { Dispatcher } from '../../src/delivery/dispatcher.js';
import type { OutboxEvent } from '../../src/domain/events.js';
import {
  quietLogger,
  sleep,
  startReceiver,
  tempDir,
  waitFor,
  type Receiver,
  storeNewEvent,
} from '../helpers.js';

const LIMIT = { timeout: 60_000 };
/** Real time within which each of B's webhooks must arrive, ms. */
const PROMPT_MS = 2_000;
/** Per-attempt timeout for these tests: long enough to hang through all of B's sends. */
const TIMEOUT_MS = 4_000;
const MAX_PER_HOST = 8;
const USER_A = 1;
const USER_B1 = 2;
const USER_B2 = 3;

/** A TCP server that accepts and never answers; counts its connections. */
interface Hung {
  url: string;
  open: number;
  /** Connections accepted before the first one closed (so all open at once). */
  peak: number;
  accepted: number;
  close(): Promise<void>;
}

async function hungServer(): Promise<Hung> {
  const sockets = new Set<Socket>();
  let closedOnce = false;
  const h: Hung = {
    url: '',
    open: 0,
    peak: 0,
    accepted: 0,
    close: () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
  const server = createServer((s) => {
    sockets.add(s);
    h.accepted++;
    h.open++;
    if (!closedOnce) h.peak = h.accepted;
    s.on('error', () => undefined);
    s.on('close', () => {
      closedOnce = true;
      sockets.delete(s);
      h.open--;
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  h.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  return h;
}

interface World {
  clock: ManualClock;
  store: LevelStore;
  seq: Sequences;
  hung: Hung;
  b1: Receiver;
  b2: Receiver;
  dispatcher: Dispatcher;
  /** Store and enqueue an event; `handedAt` is the real time it was handed over. */
  event(userId: number, monitorId: number): Promise<OutboxEvent & { handedAt: number }>;
  stored(): Promise<OutboxEvent[]>;
}

async function world(t: TestContext, maxConcurrency?: number): Promise<World> {
  const dir = await tempDir(t);
  const clock = new ManualClock(Date.UTC(2026, 0, 1, 8));
  const store = await LevelStore.open(dir);
  const seq = (await store.load()).seq;
  const hung = await hungServer();
  const b1 = await startReceiver(() => 200, { host: '127.0.0.2' });
  const b2 = await startReceiver(() => 200); // A's address, another port: another host
  const urls = new Map([
    [USER_A, hung.url],
    [USER_B1, b1.url],
    [USER_B2, b2.url],
  ]);
  const dispatcher = new Dispatcher({
    clock,
    store,
    seq,
    webhookUrl: (userId) => urls.get(userId) ?? null,
    logger: quietLogger,
    timeoutMs: TIMEOUT_MS,
    maxPerHost: MAX_PER_HOST,
    random: () => 0.5,
    ...(maxConcurrency !== undefined ? { maxConcurrency } : {}),
  });
  t.after(async () => {
    // Release the hung attempts first, so stop() does not wait out their timeouts.
    await hung.close();
    await dispatcher.stop();
    await store.close();
    await b1.close();
    await b2.close();
  });
  dispatcher.start();
  const w: World = {
    clock,
    store,
    seq,
    hung,
    b1,
    b2,
    dispatcher,
    async event(userId, monitorId) {
      const body = JSON.stringify({
        check: { name: 'uptime', status: 'nok', last_check_at: '2026-01-01 08:00:00' },
        monitor: { id: monitorId, url: `https://m${monitorId}.example.com/`, alias: `u${userId}` },
      });
      const e = await storeNewEvent(store, seq, {
        userId,
        monitorId,
        checkId: monitorId,
        type: 'uptime.down',
        body,
        token: `token-${userId}`,
        at: clock.now(),
      });
      const handedAt = Date.now();
      dispatcher.enqueue(e);
      return { ...e, handedAt };
    },
    async stored() {
      return (await store.load()).events;
    },
  };
  return w;
}

/** The receiver's request for event `e` (by the monitor id in its body). */
function arrivalOf(r: Receiver, e: OutboxEvent): number | undefined {
  const hit = r.requests.find(
    (q) =>
      (JSON.parse(q.body) as { monitor: { id: number } }).monitor.id === e.monitorId &&
      q.raw.equals(Buffer.from(e.body)) &&
      q.headers['x-service-signature'] === e.signature,
  );
  return hit?.receivedAt;
}

async function scenario(t: TestContext, maxConcurrency?: number): Promise<void> {
  const w = await world(t, maxConcurrency);
  // A: 24 monitors with 2 events each, all queued at once; the receiver swallows them.
  const aEvents: OutboxEvent[] = [];
  for (let m = 1; m <= 24; m++) {
    aEvents.push(await w.event(USER_A, 1000 + m), await w.event(USER_A, 1000 + m));
  }
  await waitFor(() => w.hung.open >= MAX_PER_HOST, 'A holding its per-host share');

  // B: events on 6 monitors over ~1.5 s, while A hangs.
  const bEvents: Array<OutboxEvent & { handedAt: number }> = [];
  for (let i = 0; i < 12; i++) {
    const user = i % 2 === 0 ? USER_B1 : USER_B2;
    bEvents.push(await w.event(user, 2000 + (i % 6)));
    await sleep(120);
  }
  const receiverOf = (e: OutboxEvent): Receiver => (e.userId === USER_B1 ? w.b1 : w.b2);
  await waitFor(
    () => bEvents.every((e) => arrivalOf(receiverOf(e), e) !== undefined),
    'every B webhook',
    PROMPT_MS * 2,
  );
  for (const e of bEvents) {
    const lag = (arrivalOf(receiverOf(e), e) as number) - e.handedAt;
    assert.ok(lag < PROMPT_MS, `B event ${e.id} arrived ${lag} ms after it was queued`);
  }
  assert.ok(w.hung.open > 0, 'A was still hung the whole time');
  assert.equal(w.b1.requests.length + w.b2.requests.length, 12, 'each B webhook once');
  assert.ok(w.b1.requests.every((r) => r.status === 200));

  // Never more than the per-host bound open to A; the rest of A waited its turn.
  assert.ok(w.hung.peak <= MAX_PER_HOST, `peak ${w.hung.peak} connections to A`);
  const stored = await w.stored();
  for (const e of bEvents) {
    const s = stored.find((x) => x.id === e.id);
    assert.equal(s?.status, 'delivered', `B event ${e.id} delivered`);
  }

  // A's attempts end as timeouts and stay pending for a retry; later A events waited.
  const timedOut = await waitFor(
    async () => {
      const a = (await w.stored()).filter((x) => x.userId === USER_A && x.attempts.length === 1);
      return a.length >= MAX_PER_HOST ? a : null;
    },
    'A’s first attempts timing out',
    TIMEOUT_MS * 3,
  );
  for (const e of timedOut) {
    assert.equal(e.status, 'pending');
    assert.equal(e.attempts[0]?.status, null);
    assert.match(e.attempts[0]?.error ?? '', /^Timed out after 4 s$/);
  }
  const aStored = (await w.stored()).filter((x) => x.userId === USER_A);
  assert.equal(aStored.length, aEvents.length);
  assert.ok(
    aStored.every((e) => e.status === 'pending'),
    'nothing of A delivered or given up',
  );
  // Only a monitor's head is ever tried: each A monitor's second event never went out.
  const secondOfEach = aEvents.filter((_, i) => i % 2 === 1).map((e) => e.id);
  for (const e of aStored.filter((x) => secondOfEach.includes(x.id))) {
    assert.equal(e.attempts.length, 0, `A event ${e.id} waits behind its monitor's first`);
  }
}

describe('a hung receiver', () => {
  test('user A hangs, user B’s webhooks arrive on time (default total limit)', LIMIT, (t) =>
    scenario(t),
  );

  test(
    'also when the total limit is barely above A’s per-host share (maxConcurrency 10)',
    LIMIT,
    (t) => scenario(t, 10),
  );
});
