/**
 * Check actors through a real Coordinator (CONTRACT §5, §6, §8): real LevelDB in a temp dir,
 * a ManualClock, real webhook POSTs to a loopback receiver. Probes are fake in-process
 * sessions registered with the scheduler, answered through `scheduler.resultArrived` — the
 * path the gRPC server uses.
 */
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { describe, test, type TestContext } from 'node:test';
import { ManualClock } from '../../src/common/clock.js';
import type { CheckView, UserView } from '../../src/common/service.js';
import { Coordinator } from '../../src/coordinator/coordinator.js';
import type { RunRequestMessage } from '../../src/coordinator/probe-registry.js';
import type { Plan } from '../../src/domain/check.js';
import { formatTimestamp } from '../../src/domain/format.js';
import {
  answer,
  FakeSession,
  quietLogger,
  sleep,
  startReceiver,
  tempDir,
  waitFor,
  type ReceivedRequest,
  type Receiver,
} from '../helpers.js';

/** Every test here does real I/O; none may hang the run. */
const LIMIT = { timeout: 30_000 };

const S = 1000;
const H = 3600 * S;
const QUIET_MS = 150; // real time allowed for something that must not happen
const MONITOR_URL = 'http://127.0.0.1:9/x';

/** A request as it reached one fake probe. */
interface Sent {
  session: FakeSession;
  req: Pick<RunRequestMessage, 'run_id' | 'check_id'> & Partial<RunRequestMessage>;
}

interface WebhookBody {
  check: {
    name: string;
    status: string;
    last_check_at: string;
    error?: string;
    meta: Record<string, string | number>;
  };
  monitor: { id: number; url: string; alias: string };
}

class World {
  clock!: ManualClock;
  coordinator!: Coordinator;
  sessions: FakeSession[] = [];
  user!: UserView;
  checkId!: number;
  monitorId!: number;

  constructor(
    readonly t: TestContext,
    readonly dir: string,
    readonly receiver: Receiver,
    readonly locations: string[],
  ) {}

  /** Open (or reopen) the coordinator on the data dir, start it, connect the probes. */
  async open(startMs: number): Promise<void> {
    this.clock = new ManualClock(startMs);
    this.coordinator = await Coordinator.open({
      dataDir: this.dir,
      clock: this.clock,
      logger: quietLogger,
      delivery: { random: () => 0.5 },
    });
    this.coordinator.start();
    this.sessions = this.locations.map(
      (loc) => new FakeSession(`probe-${loc}-${startMs}`, loc, 50, startMs),
    );
    for (const s of this.sessions) this.coordinator.scheduler.sessionOpened(s);
  }

  /** Close the coordinator; open a new one on the same dir `gapMs` later (a restart). */
  async restart(gapMs: number): Promise<void> {
    const next = this.clock.now() + gapMs;
    await this.coordinator.close();
    await this.open(next);
  }

  session(location: string): FakeSession {
    const s = this.sessions.find((x) => x.location === location);
    assert.ok(s, `no session in ${location}`);
    return s;
  }

  /** Every request sent to any probe since the last call. */
  take(): Sent[] {
    const out: Sent[] = [];
    for (const session of this.sessions)
      for (const req of session.take()) out.push({ session, req });
    return out;
  }

  /** Exactly one request was sent (since the last take); return it. */
  one(what: string): Sent {
    const sent = this.take();
    assert.equal(
      sent.length,
      1,
      `${what}: expected exactly one run request, got ${JSON.stringify(sent.map((s) => s.session.location))}`,
    );
    return sent[0] as Sent;
  }

  /** No request was sent since the last take. */
  none(what: string): void {
    assert.deepEqual(
      this.take().map((s) => s.session.location),
      [],
      `${what}: expected no run request`,
    );
  }

  /** Wait (real time) for the next request(s), then exactly one must have come. */
  async next(what: string): Promise<Sent> {
    await waitFor(() => this.sessions.some((s) => s.unread > 0), what);
    await sleep(10); // let a second, unwanted request show up if there is one
    return this.one(what);
  }

  view(): CheckView {
    return this.coordinator.getCheck(this.user.id, this.checkId);
  }

  /**
   * Answer a run as the probe would, starting now, and wait until the check actor has applied
   * it (its latest run is this one).
   */
  async answer(
    sent: Sent,
    a: { ok: boolean; status?: number; error?: string },
  ): Promise<CheckView> {
    answer(this.coordinator.scheduler, sent.session, sent.req, {
      ...a,
      startedAt: this.clock.now(),
    });
    const at = formatTimestamp(this.clock.now());
    const v = await waitFor(() => {
      const v = this.view();
      return v.last_check_at === at && v.last_location === sent.session.location ? v : null;
    }, `result from ${sent.session.location} applied`);
    await new Promise<void>((r) => setImmediate(r)); // run requests go out on setImmediate
    return v;
  }

  /** The run of this check in flight at `session`, as a request to answer. */
  inflight(session: FakeSession): Sent {
    const run = [...session.inflight.values()].find((r) => r.checkId === this.checkId);
    assert.ok(run, `no run in flight at ${session.location}`);
    return { session, req: { run_id: run.runId, check_id: run.checkId } };
  }

  /** Wait until the receiver has seen `n` webhooks; return the n-th. */
  async webhook(n: number): Promise<ReceivedRequest> {
    await waitFor(() => this.receiver.requests.length >= n, `webhook #${n}`);
    return this.receiver.requests[n - 1] as ReceivedRequest;
  }

  /** Assert a webhook is signed with the user's token and return its parsed body. */
  verified(r: ReceivedRequest): WebhookBody {
    const sig = createHmac('sha1', this.user.api_token).update(r.raw).digest('hex');
    assert.equal(
      r.headers['x-service-signature'],
      sig,
      'X-Service-Signature = HMAC-SHA1(body, api_token)',
    );
    assert.equal(r.method, 'POST');
    assert.equal(r.path, '/hook');
    assert.equal(r.headers['content-type'], 'application/json');
    assert.equal(r.headers['user-agent'], 'Vigil/1.0');
    return JSON.parse(r.body) as WebhookBody;
  }
}

/**
 * A started coordinator with probes in `locations`, a user (webhook → receiver) and one
 * http:// monitor (so only an uptime check); the check's first run has been sent.
 */
async function world(
  t: TestContext,
  opts: {
    locations?: string[];
    plan?: Plan;
    respond?: (r: ReceivedRequest, i: number) => number;
  } = {},
): Promise<World> {
  const dir = await tempDir(t);
  const receiver = await startReceiver(opts.respond);
  const w = new World(t, dir, receiver, opts.locations ?? ['a', 'b']);
  await w.open(Date.UTC(2026, 0, 1, 10, 0, 0));
  t.after(async () => {
    await w.coordinator.close();
    await receiver.close();
  });
  w.user = await w.coordinator.createUser({
    email: 'owner@example.com',
    plan: opts.plan ?? 'free',
    apiEnabled: true,
    webhookUrl: receiver.url,
  });
  const monitor = await w.coordinator.createMonitor(w.user.id, { url: MONITOR_URL });
  assert.equal(monitor.checks.length, 1, 'http:// monitor has only the uptime check');
  const check = monitor.checks[0];
  assert.ok(check);
  assert.equal(check.name, 'uptime');
  w.checkId = check.id;
  w.monitorId = monitor.id;
  await w.clock.advance(0);
  return w;
}

/** The other of two sessions. */
const otherThan = (w: World, s: FakeSession): FakeSession => {
  const o = w.sessions.find((x) => x !== s);
  assert.ok(o);
  return o;
};

describe('check actor, through the coordinator', () => {
  test(
    'runs at once; fail → verify elsewhere; verified → signed Down; 2 h later success → Recovered',
    LIMIT,
    async (t) => {
      const w = await world(t);
      const first = w.one('a new check runs at once');
      assert.equal(first.req.check_id, w.checkId);
      assert.equal(first.req.check_name, 'uptime');
      assert.equal(first.req.url, MONITOR_URL);
      assert.equal(w.view().status, null);

      const v1 = await w.answer(first, { ok: true });
      assert.equal(v1.status, 'ok');
      assert.equal(v1.last_check_at, formatTimestamp(w.clock.now()));

      // Next run one interval (300 s on free) later, not before.
      await w.clock.advance(300 * S - 1);
      w.none('before the interval');
      await w.clock.advance(1);
      const run2 = w.one('the scheduled run');
      const detector = run2.session;
      const verifier = otherThan(w, detector);
      const detectedAt = w.clock.now();
      await w.answer(run2, { ok: false, status: 503, error: '503 - Service Unavailable' });
      assert.equal(w.view().status, 'ok', 'one failing probe is not enough');

      const verify = await w.next('the verification run');
      assert.equal(verify.session, verifier, 'verification runs in the other location only');
      assert.equal(verify.req.check_id, w.checkId);
      await w.answer(verify, { ok: false, status: 500, error: '500 - Internal Server Error' });
      assert.equal(w.view().status, 'nok');

      const down = await w.webhook(1);
      const downBody = w.verified(down);
      assert.deepEqual(downBody, {
        check: {
          name: 'uptime',
          status: 'nok',
          last_check_at: formatTimestamp(detectedAt),
          error: '500 - Internal Server Error',
          meta: {
            http_status_code: 500,
            detected_by: detector.location,
            verified_via: verifier.location,
          },
        },
        monitor: { id: w.monitorId, url: MONITOR_URL, alias: '127.0.0.1:9' },
      });
      assert.equal(down.headers['x-service-current-try'], '1');
      assert.equal(down.headers['x-service-parent-webhook'], down.headers['x-service-webhook']);

      // Two hours later the site answers again (no webhook in between). Kept short on
      // purpose: every simulated second fires the scheduler's 1 s sweep timer, which costs
      // real time under ManualClock; over-24-hour downtimes are checked in the next test.
      await w.clock.advance(2 * H);
      await sleep(QUIET_MS);
      assert.equal(w.receiver.requests.length, 1, 'nothing sent while the outage lasts');
      w.take();
      const up = w.sessions.find((s) =>
        [...s.inflight.values()].some((r) => r.checkId === w.checkId),
      );
      assert.ok(up, 'some run in flight');
      const v = await w.answer(w.inflight(up), { ok: true, status: 200 });
      assert.equal(v.status, 'ok');

      const recovered = await w.webhook(2);
      const body = w.verified(recovered);
      assert.deepEqual(body, {
        check: {
          name: 'uptime',
          status: 'ok',
          last_check_at: formatTimestamp(w.clock.now()),
          meta: { http_status_code: 200, downtime: '02:00:00' },
        },
        monitor: { id: w.monitorId, url: MONITOR_URL, alias: '127.0.0.1:9' },
      });
      assert.notEqual(recovered.headers['x-service-webhook'], down.headers['x-service-webhook']);
      await sleep(QUIET_MS);
      assert.equal(w.receiver.requests.length, 2);
    },
  );

  test(
    'a downtime over 24 h is not wrapped (the coordinator down for 25 h meanwhile)',
    LIMIT,
    async (t) => {
      const w = await world(t);
      const first = w.one('first run');
      const detectedAt = w.clock.now();
      await w.answer(first, { ok: false, status: 503 });
      await w.answer(await w.next('verification'), { ok: false, status: 503 });
      w.verified(await w.webhook(1));

      // The coordinator is stopped while 25 hours pass, then comes back; the check is overdue,
      // so it runs within 10 s of the start.
      await w.restart(25 * H);
      await w.clock.advance(10 * S);
      const run = w.take().find((s) => s.req.check_id === w.checkId);
      assert.ok(run, 'an overdue check runs within 10 s of a restart');
      assert.equal(w.clock.now() - detectedAt, 25 * H + 10 * S);
      await w.answer(run, { ok: true, status: 204 });

      const recovered = w.verified(await w.webhook(2));
      assert.deepEqual(recovered.check.meta, { http_status_code: 204, downtime: '25:00:10' });
      assert.equal(recovered.check.last_check_at, formatTimestamp(w.clock.now()));
    },
  );

  test('verification that disagrees: nothing is sent, status stays ok', LIMIT, async (t) => {
    const w = await world(t);
    const first = w.one('first run');
    await w.answer(first, { ok: false });
    const verify = await w.next('verification');
    assert.notEqual(verify.session, first.session);
    const v = await w.answer(verify, { ok: true });
    assert.equal(v.status, 'ok');
    await w.clock.advance(10 * S);
    await sleep(QUIET_MS);
    assert.equal(w.receiver.requests.length, 0);
    w.none('no re-check after a false alarm');
  });

  test('threshold 60: an outage that ends at 30 s sends no webhook at all', LIMIT, async (t) => {
    const w = await world(t, { plan: 'business' });
    await w.answer(w.one('first run'), { ok: true });
    await w.coordinator.updateCheck(w.user.id, w.checkId, {
      interval: 30,
      notification_threshold: 60,
    });
    assert.equal(w.view().interval, 30);
    assert.equal(w.view().notification_threshold, 60);

    await w.clock.advance(30 * S);
    const detect = w.one('scheduled run at +30 s');
    await w.answer(detect, { ok: false });
    const verify = await w.next('verification');
    assert.notEqual(verify.session, detect.session);
    await w.answer(verify, { ok: false });

    await w.clock.advance(30 * S);
    const back = w.one('scheduled run 30 s after detection');
    const v = await w.answer(back, { ok: true });
    assert.equal(v.status, 'ok');

    // Past the threshold: only scheduled runs (no re-check), all fine, and nothing is sent.
    for (let i = 0; i < 3; i++) {
      await w.clock.advance(30 * S);
      await w.answer(w.one(`scheduled run ${i}`), { ok: true });
    }
    await sleep(QUIET_MS);
    assert.deepEqual(w.receiver.requests, [], 'neither Down nor Recovered');
  });

  test(
    'threshold 60: an outage lasting past 60 s → re-check at 60 s, failing it sends Down',
    LIMIT,
    async (t) => {
      const w = await world(t);
      await w.answer(w.one('first run'), { ok: true });
      await w.coordinator.updateCheck(w.user.id, w.checkId, { notification_threshold: 60 });

      await w.clock.advance(300 * S);
      const detect = w.one('scheduled run');
      const detectedAt = w.clock.now();
      await w.answer(detect, { ok: false, status: 503 });
      const verify = await w.next('verification');
      await w.answer(verify, { ok: false, status: 503 });
      await sleep(QUIET_MS);
      assert.equal(w.receiver.requests.length, 0, 'no Down before the threshold');

      await w.clock.advance(60 * S - 100);
      w.none('before the threshold');
      await w.clock.advance(100);
      const recheck = w.one('the re-check at detection + 60 s');
      assert.equal(w.clock.now(), detectedAt + 60 * S);
      await w.answer(recheck, { ok: false, status: 502, error: '502 - Bad Gateway' });

      const down = w.verified(await w.webhook(1));
      assert.equal(down.check.status, 'nok');
      assert.equal(down.check.error, '502 - Bad Gateway');
      assert.deepEqual(down.check.meta, {
        http_status_code: 502,
        detected_by: detect.session.location,
        verified_via: verify.session.location,
      });
      assert.equal(down.check.last_check_at, formatTimestamp(detectedAt + 60 * S));
    },
  );

  test('one location connected: it verifies its own failure after 5 s', LIMIT, async (t) => {
    const w = await world(t, { locations: ['solo'] });
    const first = w.one('first run');
    await w.answer(first, { ok: false });
    await sleep(QUIET_MS);
    w.none('no verification at once');
    await w.clock.advance(4900);
    w.none('no verification before 5 s');
    await w.clock.advance(200);
    const verify = w.one('verification after 5 s');
    assert.equal(verify.session.location, 'solo');
    await w.answer(verify, { ok: false });
    const down = w.verified(await w.webhook(1));
    assert.equal(down.check.meta.detected_by, 'solo');
    assert.equal(down.check.meta.verified_via, 'solo');
  });

  test('an interval change reschedules the next run to now + interval', LIMIT, async (t) => {
    const w = await world(t, { plan: 'pro' });
    await w.answer(w.one('first run'), { ok: true });
    await w.clock.advance(100 * S);
    await w.coordinator.updateCheck(w.user.id, w.checkId, { interval: 60 });
    assert.equal(w.view().interval, 60);

    await w.clock.advance(60 * S - 1);
    w.none('before now + 60 s');
    await w.clock.advance(1);
    await w.answer(w.one('run at change + 60 s'), { ok: true });
    await w.clock.advance(60 * S - 1);
    w.none('before the following 60 s');
    await w.clock.advance(1);
    await w.answer(w.one('run 60 s later'), { ok: true });
    await w.clock.advance(60 * S);
    await w.answer(w.one('and 60 s later again'), { ok: true });
    // The old slot (first run + 300 s) is gone: runs stay on the 60 s cadence.
    await w.clock.advance(20 * S);
    w.none('no run at the old slot');
  });

  test('disable stops runs and ignores runs in flight; enable runs at once', LIMIT, async (t) => {
    const w = await world(t);
    await w.answer(w.one('first run'), { ok: true });
    await w.clock.advance(300 * S);
    const inFlight = w.one('second run');

    await w.coordinator.setCheckEnabled(w.user.id, w.checkId, false);
    assert.equal(w.view().enabled, false);
    // The run that was in flight answers "down": ignored, no verification, no webhook.
    answer(w.coordinator.scheduler, inFlight.session, inFlight.req, {
      ok: false,
      startedAt: w.clock.now(),
    });
    await sleep(QUIET_MS);
    assert.equal(w.view().status, 'ok');
    await w.clock.advance(2 * H);
    w.none('a disabled check does not run');
    assert.equal(w.receiver.requests.length, 0);

    await w.coordinator.setCheckEnabled(w.user.id, w.checkId, true);
    assert.equal(w.view().enabled, true);
    await w.clock.advance(0);
    const again = w.one('enable runs at once');
    await w.answer(again, { ok: true });
  });

  test(
    'restart mid-outage after Down was delivered: one Recovered, Down not sent again',
    LIMIT,
    async (t) => {
      const w = await world(t);
      const first = w.one('first run');
      const detectedAt = w.clock.now();
      await w.answer(first, { ok: false });
      await w.answer(await w.next('verification'), { ok: false });
      const down = w.verified(await w.webhook(1));
      assert.equal(down.check.status, 'nok');

      await w.restart(60 * S);
      assert.equal(w.view().status, 'nok', 'state survives the restart');
      await sleep(QUIET_MS);
      assert.equal(w.receiver.requests.length, 1, 'the delivered Down is not sent again');

      // The next run follows the last one by one interval.
      await w.clock.advance(300 * S - 60 * S - 1);
      w.none('before the next slot');
      await w.clock.advance(1);
      const run = w.one('scheduled run after the restart');
      await w.answer(run, { ok: true });

      const recovered = w.verified(await w.webhook(2));
      assert.equal(recovered.check.status, 'ok');
      assert.equal(recovered.check.meta.downtime, '00:05:00');
      assert.equal(w.clock.now() - detectedAt, 300 * S);

      await w.clock.advance(H);
      await sleep(QUIET_MS);
      const kinds = w.receiver.requests.map(
        (r) => (JSON.parse(r.body) as WebhookBody).check.status,
      );
      assert.deepEqual(kinds, ['nok', 'ok'], 'exactly one Down and one Recovered');
    },
  );

  test(
    'restart during verification: the verification is asked again, elsewhere',
    LIMIT,
    async (t) => {
      const w = await world(t);
      const first = w.one('first run');
      const detector = first.session.location;
      const detectedAt = w.clock.now();
      await w.answer(first, { ok: false });
      const lost = await w.next('verification before the restart');
      assert.notEqual(lost.session.location, detector);

      await w.restart(20 * S);
      await w.clock.advance(0);
      const verify = await w.next('verification after the restart');
      assert.notEqual(verify.session.location, detector, 'still not from the detecting location');
      await w.answer(verify, { ok: false });
      const down = w.verified(await w.webhook(1));
      assert.equal(down.check.meta.detected_by, detector);
      assert.equal(down.check.meta.verified_via, verify.session.location);

      await w.clock.advance(300 * S - 20 * S);
      const up = w.take().find((s) => s.req.check_id === w.checkId);
      assert.ok(up, 'scheduled run one interval after the last run');
      await w.answer(up, { ok: true });
      const recovered = w.verified(await w.webhook(2));
      assert.equal(recovered.check.meta.downtime, '00:05:00');
      assert.equal(w.clock.now() - detectedAt, 300 * S);
    },
  );

  test(
    'restart while waiting for the threshold: the re-check still comes at detection + threshold',
    LIMIT,
    async (t) => {
      const w = await world(t);
      await w.answer(w.one('first run'), { ok: true });
      await w.coordinator.updateCheck(w.user.id, w.checkId, { notification_threshold: 60 });
      await w.clock.advance(300 * S);
      const detect = w.one('scheduled run');
      const detectedAt = w.clock.now();
      await w.answer(detect, { ok: false });
      const verify = await w.next('verification');
      await w.answer(verify, { ok: false });

      await w.restart(30 * S);
      await w.clock.advance(30 * S - 100);
      w.none('no re-check before detection + 60 s');
      await w.clock.advance(100);
      assert.equal(w.clock.now(), detectedAt + 60 * S);
      const recheck = w.one('the re-check');
      await w.answer(recheck, { ok: false });
      const down = w.verified(await w.webhook(1));
      assert.equal(down.check.meta.detected_by, detect.session.location);
      assert.equal(down.check.meta.verified_via, verify.session.location);
    },
  );

  test(
    'deleting the monitor stops its runs and sends nothing more for it, retries included',
    LIMIT,
    async (t) => {
      // CONTRACT §3: DELETE /webapi/monitors/{id} — "its checks stop, nothing more is sent for it".
      const w = await world(t, { respond: () => 500 });
      await w.answer(w.one('first run'), { ok: false });
      await w.answer(await w.next('verification'), { ok: false });
      const first = await w.webhook(1);
      assert.equal(first.status, 500, 'the Down is pending a retry');

      await w.coordinator.deleteMonitor(w.user.id, w.monitorId);
      assert.throws(() => w.view(), { code: 'VIGIL_ERR_CHECK_NOT_FOUND' });
      w.take();
      await w.clock.advance(H);
      await sleep(QUIET_MS);
      w.none('a deleted monitor is not checked');
      assert.equal(w.receiver.requests.length, 1, 'no retry of a deleted monitor’s webhook');

      await w.restart(60 * S);
      await w.clock.advance(H);
      await sleep(QUIET_MS);
      assert.equal(w.receiver.requests.length, 1, 'nor after a restart');
    },
  );

  test(
    'restart before the Down was accepted: it is re-sent, same bytes, next try',
    LIMIT,
    async (t) => {
      const w = await world(t, { respond: (_r, i) => (i === 0 ? 500 : 200) });
      await w.answer(w.one('first run'), { ok: false });
      await w.answer(await w.next('verification'), { ok: false });
      const first = await w.webhook(1);
      assert.equal(first.status, 500);

      await w.restart(60 * S);
      await w.clock.advance(0);
      const second = await w.webhook(2);
      assert.ok(second.raw.equals(first.raw), 'same body bytes');
      assert.equal(second.headers['x-service-signature'], first.headers['x-service-signature']);
      assert.equal(second.headers['x-service-current-try'], '2');
      assert.equal(second.headers['x-service-parent-webhook'], first.headers['x-service-webhook']);
      w.verified(second);
      await sleep(QUIET_MS);
      assert.equal(w.receiver.requests.length, 2);
    },
  );
});
