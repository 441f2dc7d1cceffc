/**
 * The crash test of issue 4 (CONTRACT §6 durability): `vigil start` runs as a child process
 * with several monitors on local targets whose status the test flips; their Down / Recovered
 * webhooks go to a receiver that answers 500 to first tries in some rounds (so deliveries
 * pile up pending behind the 10 s backoff) and slow 200s otherwise (so attempts are in
 * flight). The child is SIGKILLed at random points and restarted on the same data dir, round
 * after round. At the end every event must be delivered, none lost, duplicates only for
 * attempts that were in flight at a kill, per-monitor order kept, no transition twice.
 *
 * `VIGIL_CRASH_ROUNDS` sets the number of rounds (default 20; more for a bench run) and
 * `VIGIL_CRASH_SEED` replays the random choices of an earlier run (the seed is printed).
 */
import assert from 'node:assert/strict';
import { createHmac, randomInt } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { LevelStore } from '../../src/coordinator/store/level-store.js';
import type { OutboxEvent } from '../../src/domain/events.js';
import {
  CrashReceiver,
  seededRandom,
  Targets,
  Timeline,
  type Hit,
  type Reply,
} from './delivery-helpers.js';
import { sleep, VigilProcess, waitFor } from './harness.js';

const ROUNDS = Number(process.env.VIGIL_CRASH_ROUNDS ?? 20);
const SEED = process.env.VIGIL_CRASH_SEED
  ? Number(process.env.VIGIL_CRASH_SEED)
  : randomInt(2 ** 31 - 1);
const MONITORS = 6;
/** At most one attempt per monitor is in flight (only a queue's head is tried). */
const IN_FLIGHT_BOUND = Math.min(MONITORS, 8);
/** Log lines of the child (VIGIL_LOG_LEVEL=info) that rounds wait for. */
const TRANSITION_LOG = '"msg":"transition, webhook queued"';
const RUNNING_LOG = '"msg":"vigil is running"';
/** `VIGIL_CRASH_VERBOSE=1` prints one line per round. */
const VERBOSE = process.env.VIGIL_CRASH_VERBOSE === '1';

interface CheckJson {
  id: number;
  name: string;
  status: 'ok' | 'nok' | null;
}
interface MonitorJson {
  id: number;
  url: string;
  checks: CheckJson[];
}
interface PageJson {
  total: number;
}

/**
 * How a round ends: blind (a random time after it starts: before, during or after the
 * transition), or a few ms after the service logged a new transition, the receiver got a new
 * POST, or every flipped check shows its new status (so the kill lands while a delivery is
 * being written or is in flight).
 */
interface KillMode {
  kind: 'blind' | 'transition' | 'post' | 'settled';
  ms: number;
}

function killMode(rng: () => number): KillMode {
  const r = rng();
  if (r < 0.15) return { kind: 'blind', ms: Math.floor(rng() * 150) };
  if (r < 0.35) return { kind: 'blind', ms: 150 + Math.floor(rng() * 2350) };
  if (r < 0.6) return { kind: 'transition', ms: Math.floor(rng() * 40) };
  if (r < 0.8) return { kind: 'post', ms: Math.floor(rng() * 40) };
  return { kind: 'settled', ms: Math.floor(rng() * 80) };
}

const count = (haystack: string, needle: string): number => haystack.split(needle).length - 1;

test(
  `SIGKILL at random points (${ROUNDS} rounds): every webhook delivered, in order, none lost`,
  { timeout: 90_000 + ROUNDS * 5_000 },
  async (t) => {
    const t0 = Date.now();
    t.diagnostic(`crash test seed ${SEED} (replay: VIGIL_CRASH_SEED=${SEED}), rounds ${ROUNDS}`);
    const rng = seededRandom(SEED);
    const replyRng = seededRandom(SEED ^ 0x5bd1e995);
    const timeline = new Timeline();
    const kills: number[] = [];

    const dir = await mkdtemp(join(tmpdir(), 'vigil-crash-'));
    const dataDir = join(dir, 'data');
    const targets = new Targets();
    await targets.start();
    const receiver = new CrashReceiver(timeline);
    await receiver.start();
    const vigil = new VigilProcess(dataDir);
    t.after(async () => {
      await vigil.stop('SIGKILL');
      await receiver.stop();
      await targets.stop();
      await rm(dir, { recursive: true, force: true });
    });
    const slow200 = (): Reply => ({ status: 200, delayMs: Math.floor(replyRng() * 50) });
    receiver.decide = slow200;

    /** Start, and wait until both local probes are connected: rounds begin on a live service. */
    const startReady = async (): Promise<void> => {
      // The rounds call /webapi far more often than the default per-token rate limit allows.
      await vigil.start(['--locations', 'local-a,local-b', '--rate-limit', '1000000']);
      await waitFor('the service to be running', () =>
        vigil.stderr.includes(RUNNING_LOG) ? true : undefined,
      );
    };
    await startReady();
    const created = await VigilProcess.cli([
      'users',
      'create',
      '--data-dir',
      dataDir,
      '--email',
      'crash@example.com',
      '--webhook-url',
      receiver.url,
      '--api-enabled',
    ]);
    assert.equal(created.code, 0, created.stderr);
    const user = JSON.parse(created.stdout) as { id: number; api_token: string };
    const token = user.api_token;

    const monitors: Array<{ n: number; monitorId: number; checkId: number }> = [];
    for (let n = 0; n < MONITORS; n++) {
      const res = await vigil.api('POST', '/webapi/monitors', token, {
        url: targets.url(n),
        alias: `target-${n}`,
      });
      assert.equal(res.status, 201, JSON.stringify(res.json));
      const m = res.json as MonitorJson;
      const uptime = m.checks.find((c) => c.name === 'uptime');
      assert.ok(uptime);
      monitors.push({ n, monitorId: m.id, checkId: uptime.id });
    }
    await waitFor('every check ok after its first run', async () => {
      const list = (await vigil.api('GET', '/webapi/monitors', token)).json as MonitorJson[];
      return list.every((m) => m.checks.every((c) => c.status === 'ok')) ? true : undefined;
    });

    /** Make a check run now; the service may die under it (errors are expected then). */
    const forceRun = async (checkId: number): Promise<void> => {
      try {
        await vigil.api('POST', `/webapi/checks/${checkId}/disable`, token);
        await vigil.api('POST', `/webapi/checks/${checkId}/enable`, token);
      } catch {
        // killed mid-request
      }
    };

    /** Every flipped check shows the status its target now has. */
    const settled = async (flips: typeof monitors): Promise<boolean> => {
      try {
        for (const m of flips) {
          const res = await vigil.api('GET', `/webapi/checks/${m.checkId}`, token);
          const want = targets.status(m.n) === 200 ? 'ok' : 'nok';
          if ((res.json as CheckJson).status !== want) return false;
        }
        return true;
      } catch {
        return false;
      }
    };

    let rounds500 = 0;
    const modes = { blind: 0, transition: 0, post: 0, settled: 0 };
    for (let round = 0; round < ROUNDS; round++) {
      const failFirstTries = rng() < 0.35;
      if (failFirstTries) rounds500++;
      receiver.decide = failFirstTries
        ? (hit: Hit): Reply =>
            hit.try === 1 ? { status: 500, delayMs: Math.floor(replyRng() * 20) } : slow200()
        : slow200;
      let flips = monitors.filter(() => rng() < 0.5);
      if (flips.length === 0) flips = [monitors[Math.floor(rng() * MONITORS)]!];
      // Point each chosen target the other way from what its check last saw, so the forced
      // run is a transition (unless the kill comes first).
      for (const m of flips) {
        const res = await vigil.api('GET', `/webapi/checks/${m.checkId}`, token);
        assert.equal(res.status, 200);
        targets.set(m.n, (res.json as CheckJson).status === 'nok' ? 200 : 500);
      }
      const mode = killMode(rng);
      modes[mode.kind]++;
      const transitionsBefore = count(vigil.stderr, TRANSITION_LOG);
      const hitsBefore = receiver.hits.length;

      const roundStart = Date.now();
      const actions = Promise.all(flips.map((m) => forceRun(m.checkId)));
      if (mode.kind !== 'blind') {
        // Wait (bounded) for the thing to happen; a round without it is a valid round too.
        const until = Date.now() + 3_000;
        while (Date.now() < until) {
          if (mode.kind === 'transition' && count(vigil.stderr, TRANSITION_LOG) > transitionsBefore)
            break;
          if (mode.kind === 'post' && receiver.hits.length > hitsBefore) break;
          if (mode.kind === 'settled' && (await settled(flips))) break;
          await sleep(mode.kind === 'settled' ? 20 : 2);
        }
      }
      await sleep(mode.ms);
      if (VERBOSE) {
        t.diagnostic(
          `round ${round}: ${failFirstTries ? '500s' : '200s'}, flipped ` +
            `${flips.map((m) => `${m.n}→${targets.status(m.n)}`).join(' ')}, kill ${mode.kind} ` +
            `+${mode.ms} ms at ${Date.now() - roundStart} ms, ` +
            `${count(vigil.stderr, TRANSITION_LOG) - transitionsBefore} transitions, ` +
            `${receiver.hits.length - hitsBefore} POSTs`,
        );
      }
      await vigil.stop('SIGKILL');
      // Whatever the dead process sent has been read by now; only then mark the kill.
      await sleep(30);
      kills.push(timeline.next());
      await actions;
      await startReady();
    }

    // Drain: the receiver answers every POST with a (slow) 200 until nothing is pending.
    receiver.decide = slow200;
    const total = async (status: string): Promise<number> => {
      const res = await vigil.api('GET', `/webapi/webhooks?status=${status}&per_page=1`, token);
      assert.equal(res.status, 200);
      return (res.json as PageJson).total;
    };
    await waitFor(
      'no webhook pending',
      async () => {
        if ((await total('pending')) !== 0) return undefined;
        await sleep(500);
        return (await total('pending')) === 0 ? true : undefined;
      },
      60_000,
    );
    assert.equal(await total('failed'), 0, 'nothing failed');
    assert.equal(await vigil.stop('SIGTERM'), 0, 'graceful stop');
    await sleep(100); // the last answers are read

    const store = await LevelStore.open(dataDir);
    const snap = await store.load();
    await store.close();

    // ---- the checks ----
    const events = snap.events.filter((e) => e.userId === user.id).sort((a, b) => a.id - b.id);
    const hits = receiver.hits;
    t.diagnostic(
      `${events.length} events, ${hits.length} POSTs received, ${kills.length} kills ` +
        `${JSON.stringify(modes)}, ${rounds500} rounds answering 500 to first tries, ` +
        `${Date.now() - t0} ms`,
    );
    assert.ok(events.length >= MONITORS, `enough transitions happened (${events.length})`);

    // Every stored event is delivered, and its chain reached the receiver.
    const byParent = new Map<string, Hit[]>();
    for (const h of hits) {
      let list = byParent.get(h.parent);
      if (!list) byParent.set(h.parent, (list = []));
      list.push(h);
    }
    const eventByParent = new Map<string, OutboxEvent>();
    for (const e of events) {
      assert.equal(e.status, 'delivered', `event ${e.id} delivered`);
      assert.notEqual(e.parentAttemptId, null, `event ${e.id} has a parent id`);
      const parent = String(e.parentAttemptId);
      assert.ok(byParent.has(parent), `event ${e.id} (parent ${parent}) reached the receiver`);
      eventByParent.set(parent, e);
      // Attempts recorded: tries 1..n, the last one a 200; each one was really received.
      assert.deepEqual(
        e.attempts.map((a) => a.try),
        e.attempts.map((_, i) => i + 1),
        `event ${e.id}: tries 1..n`,
      );
      assert.equal(e.attempts.at(-1)?.status, 200, `event ${e.id}: last attempt answered 200`);
      for (const a of e.attempts) {
        const hit = hits.find((h) => h.id === String(a.id));
        assert.ok(hit, `attempt ${a.id} of event ${e.id} was received`);
        assert.equal(hit.parent, parent);
        assert.equal(hit.status, a.status, `attempt ${a.id}: recorded status is what was answered`);
      }
    }
    assert.equal(byParent.size, events.length, 'no POST for an event the store does not have');

    // Every POST: the stored bytes and signature, signed with the user's token; ids unique.
    const ids = new Set<string>();
    for (const h of hits) {
      const e = eventByParent.get(h.parent);
      assert.ok(e, `POST ${h.id} belongs to a stored event`);
      assert.ok(h.raw.equals(Buffer.from(e.body)), `POST ${h.id}: the stored body bytes`);
      assert.equal(h.headers['x-service-signature'], e.signature, `POST ${h.id}: stored signature`);
      assert.equal(
        e.signature,
        createHmac('sha1', token).update(h.raw).digest('hex'),
        'HMAC-SHA1(body, token)',
      );
      assert.equal(h.headers['user-agent'], 'Vigil/1.0');
      assert.equal(h.headers['content-type'], 'application/json');
      assert.ok(h.try >= 1);
      assert.ok(!ids.has(h.id), `X-Service-Webhook ${h.id} never reused, even across crashes`);
      ids.add(h.id);
    }

    // Duplicates (a chain answered 200 more than once) only when a kill came after the
    // first 200's request arrived and before the repeat: that attempt was in flight.
    let duplicates = 0;
    for (const [parent, list] of byParent) {
      const first200 = list.find((h) => h.status === 200);
      assert.ok(first200, `parent ${parent} got a 200`);
      for (const h of list) {
        if (h.inAt <= first200.inAt) continue;
        assert.ok(
          kills.some((k) => k > first200.inAt && k < h.inAt),
          `parent ${parent}: POST ${h.id} after a 200 with no crash in between (not in flight)`,
        );
        if (h.status === 200) duplicates++;
      }
    }
    t.diagnostic(`${duplicates} duplicate 200s (bound ${kills.length} × ${IN_FLIGHT_BOUND})`);
    assert.ok(duplicates <= kills.length * IN_FLIGHT_BOUND);

    // Per monitor: types alternate Down/Recovered, no POST of an event before the previous
    // one was answered 200, first deliveries in ascending id, and the last event agrees
    // with the check's stored state (a transition whose event was lost would show here).
    for (const m of monitors) {
      const mine = events.filter((e) => e.monitorId === m.monitorId);
      mine.forEach((e, i) => {
        assert.equal(
          e.type,
          i % 2 === 0 ? 'uptime.down' : 'uptime.recovered',
          `monitor ${m.monitorId}: event #${i + 1} (id ${e.id}) — no transition twice`,
        );
        assert.equal((JSON.parse(e.body) as { monitor: { id: number } }).monitor.id, m.monitorId);
      });
      const chain = (e: OutboxEvent): Hit[] => byParent.get(String(e.parentAttemptId)) ?? [];
      const first200Out = (e: OutboxEvent): number =>
        Math.min(
          ...chain(e)
            .filter((h) => h.status === 200 && h.outAt !== null)
            .map((h) => h.outAt as number),
        );
      const firstIn = (e: OutboxEvent): number => Math.min(...chain(e).map((h) => h.inAt));
      for (let i = 1; i < mine.length; i++) {
        const prev = mine[i - 1]!;
        const cur = mine[i]!;
        assert.ok(
          firstIn(cur) > first200Out(prev),
          `monitor ${m.monitorId}: event ${cur.id} sent before event ${prev.id} was answered 200`,
        );
      }
      const order = [...mine].sort((a, b) => first200Out(a) - first200Out(b)).map((e) => e.id);
      assert.deepEqual(
        order,
        mine.map((e) => e.id),
        `monitor ${m.monitorId}: delivery order`,
      );

      const state = snap.states.get(m.checkId);
      assert.ok(state, `state of check ${m.checkId}`);
      const last = mine.at(-1);
      if (state.status === 'nok') {
        assert.equal(last?.type, 'uptime.down', `check ${m.checkId} is nok: its Down was kept`);
      } else {
        assert.ok(
          last === undefined || last.type === 'uptime.recovered',
          `check ${m.checkId} is ${state.status}: its Recovered was kept`,
        );
      }
    }
  },
);
