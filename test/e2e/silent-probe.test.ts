/**
 * A probe that goes silent without closing its socket (issue 5, CONTRACT §7: "a probe that
 * disconnects or misses heartbeats for 15 s loses its checks to the other probes"). One of
 * three `vigil probe` processes is frozen with SIGSTOP: its TCP connection stays open, but it
 * sends nothing, neither heartbeats nor HTTP/2 ping answers. The coordinator must drop it,
 * the checks must go on at the other locations with no false Down, and after SIGCONT the
 * probe must reconnect and be given work again.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Receiver } from './harness.js';
import {
  CoordinatorProcess,
  ProbeProcess,
  TargetServer,
  parseCheckTime,
  sleep,
  waitFor,
  type CheckJson,
  type LogLine,
} from './probe-helpers.js';

const PROBE_TOKEN = 'e2e-silent-probe-token-0123456789abcdef01234';

/** Run `checkId` now (enable on an enabled check, CONTRACT §5) and wait for the new result. */
async function runAndWait(
  coordinator: CoordinatorProcess,
  apiToken: string,
  checkId: number,
  ms = 15_000,
): Promise<CheckJson> {
  const before = (await coordinator.check(apiToken, checkId)).last_check_at;
  // last_check_at has whole seconds: a run in the same second would not show.
  const beforeMs = parseCheckTime(before);
  if (beforeMs !== null) await sleep(Math.max(0, beforeMs + 1_050 - Date.now()));
  const res = await coordinator.api('POST', `/webapi/checks/${checkId}/enable`, apiToken);
  assert.equal(res.status, 200);
  return waitFor(
    `a new run of check ${checkId}`,
    async () => {
      const c = await coordinator.check(apiToken, checkId);
      return c.last_check_at !== before ? c : undefined;
    },
    ms,
  );
}

describe('a probe silent without closing its socket (SIGSTOP)', () => {
  let dir: string;
  let target: TargetServer;
  let receiver: Receiver;
  let coordinator: CoordinatorProcess;
  const probes: ProbeProcess[] = [];
  let apiToken: string;
  let checkId: number;
  const SPECS = [
    ['loc-a', '127.0.0.2'],
    ['loc-b', '127.0.0.3'],
    ['loc-c', '127.0.0.4'],
  ] as const;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'vigil-silent-probe-'));
    target = new TargetServer(() => ({ status: 200 }));
    await target.start();
    receiver = new Receiver();
    await receiver.start();
    coordinator = new CoordinatorProcess(join(dir, 'data'), { token: PROBE_TOKEN });
    await coordinator.start();
    for (const [location, localAddress] of SPECS) {
      const p = new ProbeProcess({
        coordinator: coordinator.address,
        location,
        token: PROBE_TOKEN,
        localAddress,
      });
      probes.push(p); // before start(), so after() kills it even if start fails
      p.start();
    }
    await Promise.all(probes.map((p) => p.waitConnected()));
    apiToken = await coordinator.createUser('silent@example.com', receiver.url);
    checkId = (await coordinator.addMonitor(apiToken, target.url('/silent'), 'silent')).uptimeId;
  });

  after(async () => {
    // A stopped process must be continued (or SIGKILLed) or it lingers; do both, always.
    for (const p of probes) p.signal('SIGCONT');
    await Promise.all(probes.map((p) => p.stop('SIGKILL')));
    await coordinator?.stop('SIGKILL');
    await target?.stop();
    await receiver?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  test(
    'dropped within 15–25 s, checks go on elsewhere with no Down, back to work after SIGCONT',
    { timeout: 90_000 },
    async () => {
      await waitFor('the first run', async () => {
        const c = await coordinator.check(apiToken, checkId);
        return c.last_check_at !== null ? c : undefined;
      });
      const victim = probes[0] as ProbeProcess;
      const [victimLocation, victimAddress] = SPECS[0];
      const statuses: Array<string | null> = [];

      assert.ok(victim.signal('SIGSTOP'), 'SIGSTOP sent');
      const stoppedAt = Date.now();

      // The coordinator drops the frozen probe: by its heartbeat watchdog ("probe silent,
      // dropped", silent > 15 s, checked every 5 s) or, if first, by gRPC's HTTP/2 keepalive
      // (ping every 10 s, 5 s to answer) closing the transport. Either way the scheduler logs
      // "probe disconnected" for that location and re-homes its work.
      const isVictim = (l: LogLine): boolean => l.location === victimLocation;
      const dropped = await waitFor(
        `the coordinator to drop ${victimLocation}`,
        () =>
          coordinator.logs().find((l) => l.msg === 'probe disconnected' && isVictim(l)) ??
          undefined,
        27_000,
      );
      const droppedAt = Date.now();
      const silentLine = coordinator
        .logs()
        .find((l) => l.msg === 'probe silent, dropped' && isVictim(l));
      const elapsed = droppedAt - stoppedAt;
      // Diagnostics: which mechanism won, and when.
      console.log(
        `# ${victimLocation} dropped after ${elapsed} ms; reason: ${String(dropped.reason)};` +
          ` heartbeat watchdog line: ${silentLine ? 'yes' : 'no'}`,
      );
      assert.ok(elapsed <= 25_000, `dropped after ${elapsed} ms (CONTRACT §7: 15 s + a tick)`);
      // Not asserted: which of the two fired. With keepalive 10 s + 5 s the transport is
      // usually torn down (5–15 s) before the watchdog's first chance (> 15 s of silence), so
      // 'probe silent, dropped' is rarely logged for a frozen process; if it is, it must name
      // the frozen probe and come at most one 5 s tick after the 15 s.
      if (silentLine) assert.equal(silentLine.location, victimLocation);

      // Checks go on at the other locations; nothing reaches the target from the frozen one.
      for (let i = 0; i < 4; i++) {
        const c = await runAndWait(coordinator, apiToken, checkId);
        statuses.push(c.status);
        assert.notEqual(c.last_location, victimLocation, `run ${i + 1} after the drop`);
        assert.ok(c.last_location === 'loc-b' || c.last_location === 'loc-c');
        assert.ok((parseCheckTime(c.last_check_at) ?? 0) >= droppedAt - 1_000, 'advanced');
      }
      assert.ok(
        target.hits.every((h) => h.remoteAddress !== victimAddress || h.at < stoppedAt),
        'nothing ran on the frozen probe',
      );
      assert.ok(!statuses.includes('nok'), `no false Down: ${statuses.join(' ')}`);
      assert.equal(receiver.received.length, 0, 'no webhook');

      // Thawed, it notices its stream is dead, reconnects and is given runs again (it is
      // the location that ran this check longest ago, so rotation picks it soon).
      const connectionsBefore = victim.connections();
      assert.ok(victim.signal('SIGCONT'), 'SIGCONT sent');
      await victim.waitConnected(connectionsBefore + 1, 30_000);
      const resumedAt = Date.now();
      let back: CheckJson | undefined;
      for (let i = 0; i < 4 && !back; i++) {
        const c = await runAndWait(coordinator, apiToken, checkId);
        statuses.push(c.status);
        if (c.last_location === victimLocation) back = c;
      }
      assert.ok(back, `${victimLocation} ran the check again after reconnecting`);
      assert.ok(
        target.hits.some((h) => h.remoteAddress === victimAddress && h.at >= resumedAt),
        'the target saw it from the thawed probe',
      );
      assert.ok(!statuses.includes('nok'), `no false Down: ${statuses.join(' ')}`);
      assert.equal((await coordinator.check(apiToken, checkId)).status, 'ok');
      assert.equal(receiver.received.length, 0, 'no webhook');
    },
  );
});
