/**
 * Multi-location probing end to end (issue 5): `vigil coordinator` and several `vigil probe`
 * processes on one machine, each probe in its own location with its own source address
 * (`--local-address 127.0.0.x`), a target that answers by source address, and webhooks at a
 * real receiver.
 *
 * Runs are forced with `POST /webapi/checks/{id}/enable` on an enabled check (CONTRACT §5:
 * enabling runs it at once). Not disable + enable: a disabled check leaves the scheduler and
 * with it the memory of where it last ran, so forced runs would all go to one probe (see the
 * rotation tests below).
 */
import * as grpc from '@grpc/grpc-js';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { loadProbeProto } from '../../src/common/proto.js';
import type { CoordinatorMessage__Output } from '../../src/generated/vigil/probe/v1/CoordinatorMessage.js';
import type { ProbeMessage } from '../../src/generated/vigil/probe/v1/ProbeMessage.js';
import { Receiver } from './harness.js';
import {
  CoordinatorProcess,
  ProbeProcess,
  TargetServer,
  issueCert,
  makeCa,
  parseCheckTime,
  sleep,
  waitFor,
  type CheckJson,
  type LogLine,
  type MonitorJson,
  type ProbeProcessOptions,
} from './probe-helpers.js';

const PROBE_TOKEN = 'e2e-probe-token-0123456789abcdef0123456789';

/**
 * Start one probe per `[location, local address]` and wait until each is welcomed. Each is
 * added to `into` as soon as it is spawned, so that after() kills it even when this fails.
 */
async function startProbes(
  coordinator: CoordinatorProcess,
  specs: ReadonlyArray<readonly [string, string]>,
  into: ProbeProcess[],
): Promise<ProbeProcess[]> {
  const probes = specs.map(
    ([location, localAddress]) =>
      new ProbeProcess({
        coordinator: coordinator.address,
        location,
        token: PROBE_TOKEN,
        localAddress,
      }),
  );
  for (const p of probes) {
    into.push(p);
    p.start();
  }
  await Promise.all(probes.map((p) => p.waitConnected()));
  return probes;
}

/** Run `checkId` now and wait for a result newer than the current one. */
async function runAndWait(
  coordinator: CoordinatorProcess,
  apiToken: string,
  checkId: number,
  onPoll: (c: CheckJson) => void = () => undefined,
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
      onPoll(c);
      return c.last_check_at !== before ? c : undefined;
    },
    ms,
  );
}

describe('two locations, a target that answers 503 to one of them', () => {
  let dir: string;
  let target: TargetServer;
  let receiver: Receiver;
  let coordinator: CoordinatorProcess;
  const probes: ProbeProcess[] = [];
  let apiToken: string;
  let checkId: number;
  /** Whether the target fails for every caller. */
  let failBoth = false;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'vigil-probes-'));
    target = new TargetServer((remote) => {
      if (failBoth || remote !== '127.0.0.3') return { status: 503 };
      // Slow enough that a poll sees loc-2 as the last location while loc-3 verifies.
      return { status: 200, delayMs: 400 };
    });
    await target.start();
    receiver = new Receiver();
    await receiver.start();
    coordinator = new CoordinatorProcess(join(dir, 'data'), { token: PROBE_TOKEN });
    await coordinator.start();
    await startProbes(
      coordinator,
      [
        ['loc-2', '127.0.0.2'],
        ['loc-3', '127.0.0.3'],
      ],
      probes,
    );
    apiToken = await coordinator.createUser('two@example.com', receiver.url);
    checkId = (await coordinator.addMonitor(apiToken, target.url('/site'), 'split')).uptimeId;
  });

  after(async () => {
    await Promise.all(probes.map((p) => p.stop('SIGKILL')));
    await coordinator?.stop('SIGKILL');
    await target?.stop();
    await receiver?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  test(
    'no Down over many runs while only loc-2 fails; the runs come from both locations',
    { timeout: 90_000 },
    async () => {
      const seen = new Set<string>();
      const statuses = new Set<string | null>();
      const poll = (c: CheckJson): void => {
        if (c.last_location) seen.add(c.last_location);
        if (c.last_check_at !== null) statuses.add(c.status);
      };
      await waitFor('the first run', async () => {
        const c = await coordinator.check(apiToken, checkId);
        poll(c);
        return c.last_check_at !== null ? c : undefined;
      });
      for (let i = 0; i < 15; i++) {
        const c = await runAndWait(coordinator, apiToken, checkId, poll);
        assert.equal(c.status, 'ok', `after run ${i + 1}`);
        assert.equal(receiver.received.length, 0, `no webhook after run ${i + 1}`);
      }
      await sleep(1_000);
      assert.equal(receiver.received.length, 0, 'no webhook while only loc-2 fails');
      // null is fine (the first run failed at loc-2 and is being verified), nok is not.
      assert.ok(!statuses.has('nok'), 'status never nok');

      const from = (ip: string): number => target.hits.filter((h) => h.remoteAddress === ip).length;
      assert.ok(from('127.0.0.2') >= 5, `loc-2 ran (and failed) ${from('127.0.0.2')} times`);
      assert.ok(from('127.0.0.3') >= 5, `loc-3 ran ${from('127.0.0.3')} times`);
      assert.equal(
        target.hits.length,
        from('127.0.0.2') + from('127.0.0.3'),
        'every run came from a --local-address',
      );
      assert.deepEqual([...seen].sort(), ['loc-2', 'loc-3'], 'last_location shows both');
      const monitors = (await coordinator.api('GET', '/webapi/monitors', apiToken))
        .json as MonitorJson[];
      const listed = monitors[0]?.checks.find((c) => c.id === checkId);
      assert.ok(
        listed?.last_location === 'loc-2' || listed?.last_location === 'loc-3',
        'GET /webapi/monitors shows the last location',
      );
    },
  );

  test(
    'failing for both locations: one Down naming both as detector and verifier',
    { timeout: 60_000 },
    async () => {
      failBoth = true;
      const c = await runAndWait(coordinator, apiToken, checkId);
      assert.ok(c.last_location === 'loc-2' || c.last_location === 'loc-3');
      const down = await waitFor('the Down webhook', () => receiver.received[0], 15_000);
      const { check } = down.body;
      assert.equal(check.status, 'nok');
      assert.equal(check.error, '503 - Service Unavailable');
      assert.equal(check.meta?.http_status_code, 503);
      assert.deepEqual([check.meta?.detected_by, check.meta?.verified_via].sort(), [
        'loc-2',
        'loc-3',
      ]);
      assert.equal((await coordinator.check(apiToken, checkId)).status, 'nok');
      await sleep(1_500);
      assert.equal(receiver.received.length, 1, 'exactly one Down');
    },
  );
});

describe('three locations', () => {
  let dir: string;
  let target: TargetServer;
  let receiver: Receiver;
  let coordinator: CoordinatorProcess;
  const probes: ProbeProcess[] = [];
  let apiToken: string;
  const ADDRESSES = ['127.0.0.2', '127.0.0.3', '127.0.0.4'];

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'vigil-probes-'));
    // Checks under /slow/ take 2 s, so that runs are in flight when a probe dies.
    target = new TargetServer((_remote, path) => ({
      status: 200,
      delayMs: path.startsWith('/slow/') ? 2_000 : 0,
    }));
    await target.start();
    receiver = new Receiver();
    await receiver.start();
    coordinator = new CoordinatorProcess(join(dir, 'data'), { token: PROBE_TOKEN });
    await coordinator.start();
    await startProbes(
      coordinator,
      [
        ['loc-a', '127.0.0.2'],
        ['loc-b', '127.0.0.3'],
        ['loc-c', '127.0.0.4'],
      ],
      probes,
    );
    apiToken = await coordinator.createUser('three@example.com', receiver.url);
  });

  after(async () => {
    await Promise.all(probes.map((p) => p.stop('SIGKILL')));
    await coordinator?.stop('SIGKILL');
    await target?.stop();
    await receiver?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  /** Source addresses of the target's requests for `path`, in order. */
  const sources = (path: string): string[] =>
    target.hits.filter((h) => h.path === path).map((h) => h.remoteAddress);

  test('runs of one check rotate over all three locations', { timeout: 60_000 }, async () => {
    const { uptimeId } = await coordinator.addMonitor(apiToken, target.url('/rotate'), 'rotate');
    await waitFor('the first run', async () =>
      (await coordinator.check(apiToken, uptimeId)).last_check_at !== null ? true : undefined,
    );
    for (let i = 0; i < 5; i++) await runAndWait(coordinator, apiToken, uptimeId);
    const used = sources('/rotate');
    assert.equal(used.length, 6);
    // Issue 5: "runs of one check rotate over locations so every location is used".
    assert.deepEqual([...new Set(used)].sort(), ADDRESSES, `runs came from ${used.join(' ')}`);
  });

  test('disable and enable do not reset the rotation', { timeout: 60_000 }, async () => {
    const { uptimeId } = await coordinator.addMonitor(apiToken, target.url('/toggle'), 'toggle');
    await waitFor('the first run', async () =>
      (await coordinator.check(apiToken, uptimeId)).last_check_at !== null ? true : undefined,
    );
    for (let i = 0; i < 3; i++) {
      const before = (await coordinator.check(apiToken, uptimeId)).last_check_at;
      await sleep(1_050);
      await coordinator.api('POST', `/webapi/checks/${uptimeId}/disable`, apiToken);
      await coordinator.api('POST', `/webapi/checks/${uptimeId}/enable`, apiToken);
      await waitFor(`run ${i + 2}`, async () =>
        (await coordinator.check(apiToken, uptimeId)).last_check_at !== before ? true : undefined,
      );
    }
    const used = sources('/toggle');
    assert.equal(used.length, 4);
    for (let i = 1; i < used.length; i++) {
      assert.notEqual(used[i], used[i - 1], `run ${i + 1} repeats the last location: ${used}`);
    }
  });

  test(
    'kill -9 of one probe: its runs move to the others, no check misses interval + 15 s, no Down',
    { timeout: 90_000 },
    async () => {
      const INTERVAL_S = 30;
      const checks: Array<{ id: number; path: string }> = [];
      for (let i = 1; i <= 6; i++) {
        const path = `/slow/${i}`;
        const { uptimeId } = await coordinator.addMonitor(apiToken, target.url(path), `m${i}`);
        checks.push({ id: uptimeId, path });
      }
      await waitFor(
        'all six checks ok',
        async () => {
          for (const c of checks) {
            if ((await coordinator.check(apiToken, c.id)).status !== 'ok') return undefined;
          }
          return true;
        },
        30_000,
      );
      for (const c of checks) {
        const res = await coordinator.api('PUT', `/webapi/checks/${c.id}`, apiToken, {
          interval: INTERVAL_S,
        });
        assert.equal(res.status, 200);
      }

      // Run all six at once: each probe gets some, and they stay in flight for 2 s.
      const before = new Map<number, string | null>();
      for (const c of checks)
        before.set(c.id, (await coordinator.check(apiToken, c.id)).last_check_at);
      await sleep(1_050);
      const hitsBefore = target.hits.length;
      const forcedAt = Date.now();
      for (const c of checks) {
        assert.equal(
          (await coordinator.api('POST', `/webapi/checks/${c.id}/enable`, apiToken)).status,
          200,
        );
      }
      // The victim is the probe with the most of them in flight.
      const forced = await waitFor(
        'the six runs to reach the target',
        () => {
          const forced = target.hits.slice(hitsBefore);
          return forced.length >= checks.length ? forced : undefined;
        },
        10_000,
      );
      const open = forced.filter((h) => h.answeredAt === null);
      const count = (ip: string): number => open.filter((h) => h.remoteAddress === ip).length;
      const victimAddress = [...ADDRESSES].sort((a, b) => count(b) - count(a))[0] as string;
      const victim = probes[ADDRESSES.indexOf(victimAddress)] as ProbeProcess;
      const orphans = open.filter((h) => h.remoteAddress === victimAddress).map((h) => h.path);
      assert.ok(orphans.length > 0);
      await victim.stop('SIGKILL');
      const killedAt = Date.now();

      // The victim's runs are re-run from the others well within 15 s.
      for (const path of orphans) {
        await waitFor(
          `a re-run of ${path} elsewhere`,
          () =>
            target.hits.some(
              (h) =>
                h.path === path &&
                h.at >= killedAt &&
                h.remoteAddress !== victimAddress &&
                h.answeredAt !== null,
            )
              ? true
              : undefined,
          15_000,
        );
      }
      for (const c of checks) {
        await waitFor(
          `check ${c.id} to finish its forced run`,
          async () =>
            (await coordinator.check(apiToken, c.id)).last_check_at !== before.get(c.id)
              ? true
              : undefined,
          15_000,
        );
      }
      // The next round comes one interval after the forced runs, from the survivors only;
      // no check may wait longer than 15 s + interval after the kill.
      const deadline = killedAt + (15 + INTERVAL_S) * 1000;
      for (const c of checks) {
        await waitFor(
          `check ${c.id} to run on schedule after the kill`,
          async () => {
            const t = parseCheckTime((await coordinator.check(apiToken, c.id)).last_check_at);
            return t !== null && t >= forcedAt + (INTERVAL_S - 1) * 1000 ? true : undefined;
          },
          Math.max(1_000, deadline + 3_000 - Date.now()), // + the target's 2 s answer
        );
      }
      const after = target.hits.filter((h) => h.at >= killedAt);
      assert.ok(
        after.every((h) => h.remoteAddress !== victimAddress),
        'nothing ran on the dead probe',
      );
      for (const c of checks) {
        assert.equal((await coordinator.check(apiToken, c.id)).status, 'ok');
      }
      assert.equal(receiver.received.length, 0, 'no Down');
    },
  );
});

describe('coordinator restart', () => {
  let dir: string;
  let target: TargetServer;
  let receiver: Receiver;
  let coordinator: CoordinatorProcess;
  const probes: ProbeProcess[] = [];

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'vigil-probes-'));
    target = new TargetServer((_remote, path) =>
      path === '/down' ? { status: 503 } : { status: 200, delayMs: 1_000 },
    );
    await target.start();
    receiver = new Receiver();
    await receiver.start();
    coordinator = new CoordinatorProcess(join(dir, 'data'), { token: PROBE_TOKEN });
    await coordinator.start();
    await startProbes(
      coordinator,
      [
        ['east', '127.0.0.2'],
        ['west', '127.0.0.3'],
      ],
      probes,
    );
  });

  after(async () => {
    await Promise.all(probes.map((p) => p.stop('SIGKILL')));
    await coordinator?.stop('SIGKILL');
    await target?.stop();
    await receiver?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  test(
    'SIGTERM and start again on the same port: probes reconnect by themselves, nothing is sent twice',
    { timeout: 90_000 },
    async () => {
      const apiToken = await coordinator.createUser('restart@example.com', receiver.url);
      const up: number[] = [];
      for (let i = 1; i <= 4; i++) {
        const { uptimeId } = await coordinator.addMonitor(
          apiToken,
          target.url(`/up/${i}`),
          `u${i}`,
        );
        up.push(uptimeId);
      }
      const downId = (await coordinator.addMonitor(apiToken, target.url('/down'), 'down')).uptimeId;
      const down = await waitFor('the Down before the restart', () => receiver.received[0], 15_000);
      assert.equal(down.body.check.status, 'nok');
      for (const id of [...up, downId]) {
        assert.equal(
          (await coordinator.api('PUT', `/webapi/checks/${id}`, apiToken, { interval: 30 })).status,
          200,
        );
      }
      await waitFor('the up checks ok', async () => {
        for (const id of up) {
          if ((await coordinator.check(apiToken, id)).status !== 'ok') return undefined;
        }
        return true;
      });

      // Under load: runs in flight (the target answers after 1 s) when the coordinator stops.
      const hitsBefore = target.hits.length;
      for (const id of up) await coordinator.api('POST', `/webapi/checks/${id}/enable`, apiToken);
      await waitFor('runs in flight', () =>
        target.hits.slice(hitsBefore).some((h) => h.answeredAt === null) ? true : undefined,
      );
      const port = coordinator.grpc;
      assert.equal(await coordinator.stop('SIGTERM'), 0, 'a clean stop');
      const stoppedAt = Date.now();
      await coordinator.start(port);
      assert.equal(coordinator.grpc, port);

      // The same probe processes come back on their own.
      for (const p of probes) {
        await p.waitConnected(2, 30_000);
        assert.equal(p.exitCode, null, `${p.options.location} kept running`);
      }
      // Work resumes: the up checks run again, all at once (the target holds each run 1 s,
      // so they spread over the probes), and stay ok; a round or two more if one probe
      // happened to take them all.
      const sourcesAfter = new Set<string>();
      for (let round = 0; round < 3 && sourcesAfter.size < 2; round++) {
        const lastBefore = new Map<number, string | null>();
        for (const id of up)
          lastBefore.set(id, (await coordinator.check(apiToken, id)).last_check_at);
        await sleep(1_050);
        for (const id of up) {
          assert.equal(
            (await coordinator.api('POST', `/webapi/checks/${id}/enable`, apiToken)).status,
            200,
          );
        }
        for (const id of up) {
          const c = await waitFor(`check ${id} to run after the restart`, async () => {
            const c = await coordinator.check(apiToken, id);
            return c.last_check_at !== lastBefore.get(id) ? c : undefined;
          });
          assert.equal(c.status, 'ok');
        }
        for (const h of target.hits) {
          if (h.at > stoppedAt && h.path.startsWith('/up/')) sourcesAfter.add(h.remoteAddress);
        }
      }
      assert.deepEqual([...sourcesAfter].sort(), ['127.0.0.2', '127.0.0.3'], 'both probes work');

      // The outage was announced before the restart: still down after it, no second Down.
      const c = await runAndWait(coordinator, apiToken, downId);
      assert.equal(c.status, 'nok');
      await sleep(3_000);
      assert.equal(receiver.received.length, 1, 'the Down is not sent again');
      const ids = receiver.received.map((h) => h.headers['x-service-webhook']);
      assert.equal(new Set(ids).size, ids.length);
    },
  );
});

describe('TLS on the probe channel, and refusals', () => {
  let dir: string;
  let target: TargetServer;
  let coordinator: CoordinatorProcess;
  const probes: ProbeProcess[] = [];
  let tlsDir: string;
  let ca: { crt: string; key: string };
  let probeCerts: Array<{ cert: string; key: string }>;
  let rogue: { cert: string; key: string };

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'vigil-probes-'));
    tlsDir = join(dir, 'tls');
    ca = await makeCa(tlsDir, 'ca', 'Vigil probe CA');
    const other = await makeCa(tlsDir, 'other-ca', 'Some other CA');
    const server = await issueCert(tlsDir, ca, 'coordinator', 'DNS:localhost,IP:127.0.0.1');
    probeCerts = [
      await issueCert(tlsDir, ca, 'probe-1', 'DNS:probe-1'),
      await issueCert(tlsDir, ca, 'probe-2', 'DNS:probe-2'),
    ];
    rogue = await issueCert(tlsDir, other, 'rogue', 'DNS:rogue');
    target = new TargetServer(() => ({ status: 200 }));
    await target.start();
    coordinator = new CoordinatorProcess(join(dir, 'data'), {
      token: PROBE_TOKEN,
      tls: { cert: server.cert, key: server.key, ca: ca.crt },
    });
    await coordinator.start();
  });

  after(async () => {
    await Promise.all(probes.map((p) => p.stop('SIGKILL')));
    await coordinator?.stop('SIGKILL');
    await target?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  /** A probe with these options that is expected to be refused. */
  function refusedProbe(location: string, o: Partial<ProbeProcessOptions>): ProbeProcess {
    const p = new ProbeProcess({
      coordinator: coordinator.address,
      location,
      token: PROBE_TOKEN,
      ...o,
    });
    probes.push(p);
    p.start();
    return p;
  }

  test(
    'mTLS end to end: two probes with client certificates from the CA run a monitor',
    { timeout: 60_000 },
    async () => {
      const own = (
        [
          ['tls-east', '127.0.0.2'],
          ['tls-west', '127.0.0.3'],
        ] as const
      ).map(([location, localAddress], i) => {
        const cert = probeCerts[i] as { cert: string; key: string };
        const p = new ProbeProcess({
          coordinator: coordinator.address,
          location,
          localAddress,
          token: PROBE_TOKEN,
          tls: { ca: ca.crt, cert: cert.cert, key: cert.key },
        });
        probes.push(p);
        p.start();
        return p;
      });
      await Promise.all(own.map((p) => p.waitConnected()));
      const apiToken = await coordinator.createUser('tls@example.com', 'http://127.0.0.1:9/hook');
      const { uptimeId } = await coordinator.addMonitor(apiToken, target.url('/tls'), 'tls');
      const c = await waitFor('the check to run', async () => {
        const c = await coordinator.check(apiToken, uptimeId);
        return c.status !== null ? c : undefined;
      });
      assert.equal(c.status, 'ok');
      assert.ok(['tls-east', 'tls-west'].includes(String(c.last_location)));
      const second = await runAndWait(coordinator, apiToken, uptimeId);
      assert.equal(second.status, 'ok');
      assert.notEqual(second.last_location, c.last_location, 'both TLS probes run it');
    },
  );

  /**
   * The first `n` stream-end lines of `p` (the lines that announce a retry), after checking
   * that it never connected and keeps retrying with growing delays.
   */
  async function refusals(p: ProbeProcess, n = 2): Promise<LogLine[]> {
    const lines = await waitFor(
      `probe ${p.options.location} to give up ${n} attempts`,
      () => {
        const ends = p.logs().filter((l) => typeof l.retryInMs === 'number');
        return ends.length >= n ? ends.slice(0, n) : undefined;
      },
      10_000,
    );
    const delays = lines.map((l) => Number(l.retryInMs));
    assert.ok((delays[1] as number) > (delays[0] as number), `backoff grows: ${delays.join(' ')}`);
    assert.equal(p.connections(), 0, 'never welcomed');
    assert.equal(p.exitCode, null, 'keeps retrying');
    return lines;
  }

  test(
    'wrong token: refused, the probe says so and retries with backoff',
    { timeout: 30_000 },
    async () => {
      const good = probeCerts[0] as { cert: string; key: string };
      const p = refusedProbe('bad-token', {
        token: 'not-the-probe-token',
        tls: { ca: ca.crt, cert: good.cert, key: good.key },
      });
      for (const line of await refusals(p)) {
        assert.equal(line.msg, 'probe token rejected by coordinator');
        assert.equal(line.level, 50, 'logged as an error');
      }
      await waitFor('the coordinator to log the refusal', () =>
        coordinator.logs().some((l) => l.msg === 'probe refused: wrong or missing probe token')
          ? true
          : undefined,
      );
    },
  );

  test(
    'client certificate from another CA: refused, "TLS with the coordinator failed"',
    { timeout: 30_000 },
    async () => {
      const p = refusedProbe('rogue', { tls: { ca: ca.crt, cert: rogue.cert, key: rogue.key } });
      for (const line of await refusals(p)) {
        assert.match(line.msg, /^TLS with the coordinator failed/);
        assert.equal(line.level, 50, 'logged as an error');
      }
    },
  );

  test(
    'no client certificate: refused, "TLS with the coordinator failed … certificate required"',
    { timeout: 30_000 },
    async () => {
      const p = refusedProbe('anonymous', { tls: { ca: ca.crt } });
      for (const line of await refusals(p)) {
        assert.match(line.msg, /^TLS with the coordinator failed.*certificate required/s);
        assert.equal(line.level, 50, 'logged as an error');
      }
    },
  );

  test(
    'old or newer protocol version: FAILED_PRECONDITION naming both versions',
    { timeout: 30_000 },
    async () => {
      const good = probeCerts[0] as { cert: string; key: string };
      const proto = loadProbeProto();
      const client = new proto.vigil.probe.v1.ProbeControl(
        coordinator.address,
        grpc.credentials.createSsl(
          readFileSync(ca.crt),
          readFileSync(good.key),
          readFileSync(good.cert),
        ),
        // The certificate names localhost too; a name keeps Node from warning about an IP SNI.
        { 'grpc.ssl_target_name_override': 'localhost' },
      );
      try {
        for (const version of [0, 2]) {
          const metadata = new grpc.Metadata();
          metadata.set('authorization', `Bearer ${PROBE_TOKEN}`);
          const call = client.Connect(metadata);
          const received: CoordinatorMessage__Output[] = [];
          call.on('data', (m: CoordinatorMessage__Output) => received.push(m));
          call.on('error', () => undefined);
          const status = new Promise<grpc.StatusObject>((r) => call.on('status', r));
          const hello: ProbeMessage = {
            hello: { protocol_version: version, location: 'x', capacity: 1, node_name: 't' },
          };
          call.write(hello);
          const s = await Promise.race([
            status,
            sleep(10_000).then(() => {
              throw new Error('no status within 10 s');
            }),
          ]);
          call.end();
          assert.equal(s.code, grpc.status.FAILED_PRECONDITION, `v${version}: ${s.details}`);
          assert.match(s.details, new RegExp(`\\bv${version}\\b`));
          assert.match(s.details, /\bv1\b/);
          assert.ok(!received.some((m) => m.body === 'welcome'), 'never welcomed');
        }
      } finally {
        client.close();
      }
    },
  );
});
