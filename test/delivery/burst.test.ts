/**
 * A healthy receiver after a 500 burst (issue 4 "Done when"): the receiver answers 500 to the
 * first N POSTs, then 200. Every event must be delivered, in order per monitor, complete,
 * each with one parent id and the same signed bytes on every try. A real Dispatcher on a
 * real LevelStore and a real loopback receiver; time is a ManualClock stepped from one due
 * retry to the next once all real I/O has settled.
 */
import assert from 'node:assert/strict';
import { describe, test, type TestContext } from 'node:test';
import { ManualClock } from '../../src/common/clock.js';
import { LevelStore } from '../../src/coordinator/store/level-store.js';
import type { Sequences } from '../../src/coordinator/store/store.js';
import { Dispatcher } from '../../src/delivery/dispatcher.js';
import { verifyWebhook } from '../../src/delivery/signature.js';
import { seededRandom } from '../e2e/delivery-helpers.js';
import { webhookBody, type OutboxEvent } from '../../src/domain/events.js';
import {
  quietLogger,
  sleep,
  startReceiver,
  tempDir,
  waitFor,
  type ReceivedRequest,
  type Receiver,
  storeNewEvent,
} from '../helpers.js';

const LIMIT = { timeout: 60_000 };
const TOKEN = 'burst-token-0123456789abcdef';
const S = 1000;

interface World {
  clock: ManualClock;
  store: LevelStore;
  seq: Sequences;
  receiver: Receiver;
  dispatcher: Dispatcher;
  /** Store and enqueue a Down event for `monitorId`. */
  event(monitorId: number): Promise<OutboxEvent>;
  /** Step the clock from due retry to due retry until every event is delivered. */
  drain(): Promise<OutboxEvent[]>;
}

async function world(
  t: TestContext,
  burst: number,
  random: () => number = () => 0.5,
): Promise<World> {
  const dir = await tempDir(t);
  const clock = new ManualClock(Date.UTC(2026, 0, 1, 8));
  const store = await LevelStore.open(dir);
  const seq = (await store.load()).seq;
  const receiver = await startReceiver((_r, i) => (i < burst ? 500 : 200));
  const dispatcher = new Dispatcher({
    clock,
    store,
    seq,
    webhookUrl: () => receiver.url,
    logger: quietLogger,
    random,
  });
  t.after(async () => {
    await dispatcher.stop();
    await store.close();
    await receiver.close();
  });
  dispatcher.start();
  let n = 0;

  const w: World = {
    clock,
    store,
    seq,
    receiver,
    dispatcher,
    async event(monitorId) {
      n++;
      const down = n % 2 === 1;
      const monitor = {
        id: monitorId,
        userId: 1,
        url: `https://m${monitorId}.example.com/`,
        alias: `event-${n}`,
        createdAt: 0,
      };
      const body = JSON.stringify(
        down
          ? webhookBody(
              {
                type: 'uptime.down',
                at: clock.now(),
                httpStatusCode: 500,
                error: '500 - Internal Server Error',
                detectedBy: 'a',
                verifiedVia: 'b',
              },
              monitor,
            )
          : webhookBody(
              {
                type: 'uptime.recovered',
                at: clock.now(),
                httpStatusCode: 200,
                downtimeMs: 1000 * n,
              },
              monitor,
            ),
      );
      const e = await storeNewEvent(store, seq, {
        userId: 1,
        monitorId,
        checkId: monitorId,
        type: down ? 'uptime.down' : 'uptime.recovered',
        body,
        token: TOKEN,
        at: clock.now(),
      });
      dispatcher.enqueue(e);
      return e;
    },
    async drain() {
      for (let step = 0; step < 1000; step++) {
        const events = (await store.load()).events;
        const pending = events.filter((e) => e.status === 'pending');
        const recorded = events.reduce((s, e) => s + e.attempts.length, 0);
        if (pending.length === 0 && recorded === receiver.requests.length) return events;
        // Only each monitor's oldest pending event is ever tried.
        const heads = new Map<number, OutboxEvent>();
        for (const e of pending) {
          const h = heads.get(e.monitorId);
          if (!h || e.id < h.id) heads.set(e.monitorId, e);
        }
        const due = Math.min(...[...heads.values()].map((e) => e.nextAttemptAt));
        if (due <= clock.now() || recorded !== receiver.requests.length) {
          await sleep(3); // an attempt is due or in flight: let real I/O finish
          continue;
        }
        await clock.advance(due - clock.now());
      }
      assert.fail('not drained after 1000 steps');
    },
  };
  return w;
}

/** The event a POST belongs to, by its parent id. */
function eventOf(events: OutboxEvent[], r: ReceivedRequest): OutboxEvent {
  const e = events.find((x) => String(x.parentAttemptId) === r.headers['x-service-parent-webhook']);
  assert.ok(e, `POST with parent ${String(r.headers['x-service-parent-webhook'])} has an event`);
  return e;
}

/** Every POST carries its event's bytes and signature, tries count 1..n under one parent. */
function assertChains(events: OutboxEvent[], requests: ReceivedRequest[]): void {
  for (const e of events) {
    assert.equal(e.status, 'delivered', `event ${e.id} delivered`);
    const mine = requests.filter((r) => eventOf(events, r) === e);
    assert.ok(mine.length >= 1);
    assert.equal(mine.length, e.attempts.length, `event ${e.id}: every POST recorded`);
    assert.deepEqual(
      mine.map((r) => r.headers['x-service-current-try']),
      mine.map((_, i) => String(i + 1)),
      `event ${e.id}: tries 1..n`,
    );
    assert.equal(mine[0]?.headers['x-service-webhook'], String(e.parentAttemptId));
    for (const r of mine) {
      assert.ok(r.raw.equals(Buffer.from(e.body)), `event ${e.id}: same bytes on every try`);
      assert.equal(r.headers['x-service-signature'], e.signature);
      assert.ok(verifyWebhook(r.raw, String(r.headers['x-service-signature']), TOKEN));
    }
    assert.deepEqual(
      mine.map((r) => r.status),
      [...mine.slice(0, -1).map(() => 500), 200],
      `event ${e.id}: 500s then exactly one 200`,
    );
  }
  const ids = requests.map((r) => r.headers['x-service-webhook']);
  assert.equal(new Set(ids).size, ids.length, 'X-Service-Webhook unique');
}

/** Per monitor: no POST of an event before the previous event's 200. */
function assertOrder(events: OutboxEvent[], requests: ReceivedRequest[]): void {
  const monitors = new Set(events.map((e) => e.monitorId));
  for (const m of monitors) {
    const mine = events.filter((e) => e.monitorId === m).sort((a, b) => a.id - b.id);
    const index = (e: OutboxEvent, pred: (r: ReceivedRequest) => boolean): number =>
      requests.findIndex((r) => eventOf(events, r) === e && pred(r));
    for (let i = 1; i < mine.length; i++) {
      const ok = index(mine[i - 1]!, (r) => r.status === 200);
      const first = index(mine[i]!, () => true);
      assert.ok(
        ok >= 0 && first > ok,
        `monitor ${m}: event ${mine[i]!.id} only after ${mine[i - 1]!.id}'s 200`,
      );
    }
  }
}

describe('after a burst of 500s', () => {
  test(
    'one monitor, 5 events, 4 × 500: the head retries 10/20/40/80 s, then all go in order',
    LIMIT,
    async (t) => {
      const w = await world(t, 4);
      const created: OutboxEvent[] = [];
      for (let i = 0; i < 5; i++) created.push(await w.event(1));
      const events = await w.drain();
      assert.equal(events.length, 5);
      const reqs = w.receiver.requests;
      assert.equal(reqs.length, 9, '5 tries of the first event, one POST for each other');
      assert.deepEqual(
        reqs.map((r) => eventOf(events, r).id),
        [...Array(5).fill(created[0]!.id), ...created.slice(1).map((e) => e.id)],
      );
      assert.deepEqual(
        reqs.map((r) => r.status),
        [500, 500, 500, 500, 200, 200, 200, 200, 200],
      );
      const head = events.find((e) => e.id === created[0]!.id)!;
      const gaps = head.attempts.slice(1).map((a, i) => a.at - head.attempts[i]!.at);
      assert.deepEqual(gaps, [10 * S, 20 * S, 40 * S, 80 * S]);
      // The queue moved on at once after the 200: no backoff inherited by the next events.
      for (const e of events.filter((x) => x !== head)) {
        assert.equal(e.attempts[0]?.at, head.attempts.at(-1)!.at, `event ${e.id} sent at once`);
      }
      assertChains(events, reqs);
      assertOrder(events, reqs);
    },
  );

  test(
    'three monitors, events arriving during the burst, jittered backoff: complete and in order',
    LIMIT,
    async (t) => {
      const random = seededRandom(20260101);
      const w = await world(t, 10, random);
      for (let i = 0; i < 3; i++) for (const m of [1, 2, 3]) await w.event(m);
      // More events while the first tries fail.
      await waitFor(() => w.receiver.requests.length >= 3, 'the first burst of tries');
      for (const m of [3, 1, 2]) await w.event(m);
      const events = await w.drain();
      assert.equal(events.length, 12);
      const reqs = w.receiver.requests;
      assert.equal(reqs.filter((r) => r.status === 500).length, 10, 'the burst');
      assert.equal(reqs.filter((r) => r.status === 200).length, 12, 'one 200 per event');
      assertChains(events, reqs);
      assertOrder(events, reqs);
      // Jitter: retry k comes 10·2^(k−1) s ± 10 % after try k.
      for (const e of events) {
        e.attempts.slice(1).forEach((a, i) => {
          const base = 10 * S * 2 ** i;
          const gap = a.at - e.attempts[i]!.at;
          assert.ok(
            gap >= base * 0.9 && gap <= base * 1.1,
            `event ${e.id} retry ${i + 1}: ${gap} ms`,
          );
        });
      }
    },
  );

  test(
    'a long burst (20 × 500) on one monitor still ends with every event, in order',
    LIMIT,
    async (t) => {
      const w = await world(t, 20);
      const created: OutboxEvent[] = [];
      for (let i = 0; i < 4; i++) created.push(await w.event(7));
      const events = await w.drain();
      const reqs = w.receiver.requests;
      assert.equal(reqs.length, 24);
      assert.deepEqual(
        [...new Set(reqs.map((r) => eventOf(events, r).id))],
        created.map((e) => e.id),
        'first POSTs in id order',
      );
      const head = events.find((e) => e.id === created[0]!.id)!;
      assert.equal(head.attempts.length, 21);
      const gaps = head.attempts.slice(1).map((a, i) => a.at - head.attempts[i]!.at);
      assert.ok(
        gaps.every((g) => g <= 3600 * S),
        'capped at 1 h',
      );
      assert.equal(gaps.at(-1), 3600 * S);
      assertChains(events, reqs);
      assertOrder(events, reqs);
    },
  );
});
