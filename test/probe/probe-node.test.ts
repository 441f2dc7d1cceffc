/**
 * ProbeNode against a small real coordinator written here (grpc.Server on 127.0.0.1:0 with
 * the real proto), running real checks against a loopback HTTP server (CONTRACT §7).
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { pino, type Logger } from 'pino';
import { loadProbeProto, PROTOCOL_VERSION } from '../../src/common/proto.js';
import type { CoordinatorMessage } from '../../src/generated/vigil/probe/v1/CoordinatorMessage.js';
import type { ProbeMessage__Output } from '../../src/generated/vigil/probe/v1/ProbeMessage.js';
import type { RunResult__Output } from '../../src/generated/vigil/probe/v1/RunResult.js';
import { ProbeNode } from '../../src/probe/probe-node.js';

const TOKEN = 'test-probe-token-0123456789abcdef';

type Call = grpc.ServerDuplexStream<ProbeMessage__Output, CoordinatorMessage>;

/** One accepted Connect call, as the fake coordinator sees it. */
interface Attempt {
  call: Call;
  authorization: string;
  messages: ProbeMessage__Output[];
  /** Resolves with the first message (the Hello). */
  hello: Promise<ProbeMessage__Output>;
  ended: boolean;
}

/** What the fake coordinator does with a new call after reading its metadata. */
type OnAttempt = (attempt: Attempt) => void;

interface FakeCoordinator {
  address: string;
  attempts: Attempt[];
  /** Resolves with the next attempt (or the n-th, counting from 1). */
  nextAttempt(n?: number): Promise<Attempt>;
  close(): void;
}

async function startCoordinator(onAttempt: OnAttempt): Promise<FakeCoordinator> {
  const proto = loadProbeProto();
  const server = new grpc.Server();
  const attempts: Attempt[] = [];
  const waiters: Array<{ n: number; resolve: (a: Attempt) => void }> = [];
  server.addService(proto.vigil.probe.v1.ProbeControl.service, {
    Connect: (call: Call) => {
      let resolveHello!: (m: ProbeMessage__Output) => void;
      const attempt: Attempt = {
        call,
        authorization: String(call.metadata.get('authorization')[0] ?? ''),
        messages: [],
        hello: new Promise((r) => (resolveHello = r)),
        ended: false,
      };
      attempts.push(attempt);
      call.on('data', (m: ProbeMessage__Output) => {
        attempt.messages.push(m);
        if (attempt.messages.length === 1) resolveHello(m);
      });
      call.on('end', () => {
        attempt.ended = true;
        call.end();
      });
      call.on('error', () => {
        attempt.ended = true;
      });
      call.on('cancelled', () => {
        attempt.ended = true;
      });
      for (const w of waiters.splice(0)) {
        if (attempts.length >= w.n) w.resolve(attempts[w.n - 1]!);
        else waiters.push(w);
      }
      onAttempt(attempt);
    },
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    ),
  );
  return {
    address: `127.0.0.1:${port}`,
    attempts,
    nextAttempt(n = attempts.length + 1) {
      const have = attempts[n - 1];
      if (have) return Promise.resolve(have);
      return new Promise((resolve) => waiters.push({ n, resolve }));
    },
    close: () => server.forceShutdown(),
  };
}

/** End a call with a status, as a coordinator refusing a probe does. */
function refuse(call: Call, code: grpc.status, details: string): void {
  call.emit('error', { code, details, metadata: new grpc.Metadata() });
}

function welcome(call: Call, sessionId: string, heartbeatIntervalMs = 5000): void {
  call.write({ welcome: { session_id: sessionId, heartbeat_interval_ms: heartbeatIntervalMs } });
}

/** Resolves with the results of an attempt once `count` have arrived (any batching). */
async function results(
  attempt: Attempt,
  count: number,
  timeoutMs = 10_000,
): Promise<RunResult__Output[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const all = attempt.messages.flatMap((m) =>
      m.body === 'results' ? (m.results?.results ?? []) : [],
    );
    if (all.length >= count) return all;
    if (Date.now() > deadline) throw new Error(`only ${all.length} of ${count} results arrived`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

async function until(cond: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** A pino logger that keeps its lines in memory. */
function memoryLogger(): { logger: Logger; lines: Array<{ level: number; msg: string }> } {
  const lines: Array<{ level: number; msg: string }> = [];
  const logger = pino(
    { level: 'debug' },
    { write: (s: string) => void lines.push(JSON.parse(s) as { level: number; msg: string }) },
  );
  return { logger, lines };
}

describe('ProbeNode', () => {
  let site: http.Server;
  let siteUrl = '';
  const cleanups: Array<() => Promise<void> | void> = [];

  before(async () => {
    site = http.createServer((req, res) => {
      if (req.url === '/down') res.writeHead(503).end();
      else if (req.url === '/slow') setTimeout(() => res.end('late'), 800);
      else res.end('ok');
    });
    site.listen(0, '127.0.0.1');
    await once(site, 'listening');
    siteUrl = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;
  });

  after(async () => {
    for (const c of cleanups.reverse()) await c();
    site.closeAllConnections();
    site.close();
  });

  function node(
    coordinator: string,
    extra: Partial<ConstructorParameters<typeof ProbeNode>[0]> = {},
  ): ProbeNode {
    const n = new ProbeNode({
      coordinator,
      location: 'test-loc',
      token: TOKEN,
      localAddress: null,
      threads: 1,
      logger: pino({ level: 'silent' }),
      ...extra,
    });
    cleanups.push(() => n.stop());
    return n;
  }

  test(
    'says hello, is welcomed, runs checks and sends results back',
    { timeout: 20_000 },
    async () => {
      const coordinator = await startCoordinator((a) => {
        if (a.authorization !== `Bearer ${TOKEN}`)
          refuse(a.call, grpc.status.UNAUTHENTICATED, 'bad token');
        else void a.hello.then(() => welcome(a.call, 'session-1'));
      });
      cleanups.push(() => coordinator.close());
      const probe = node(coordinator.address);
      assert.equal(probe.connected, false);
      probe.start();
      await probe.ready();
      assert.equal(probe.connected, true);

      const attempt = coordinator.attempts[0]!;
      const hello = await attempt.hello;
      assert.equal(hello.body, 'hello');
      assert.equal(hello.hello?.protocol_version, PROTOCOL_VERSION);
      assert.equal(hello.hello?.location, 'test-loc');
      assert.equal(hello.hello?.capacity, 256, 'one thread × 256 tasks');
      assert.match(hello.hello?.node_name ?? '', /.+:\d+$/);

      attempt.call.write({
        runs: {
          runs: [
            {
              run_id: 101,
              check_id: 7,
              check_name: 'uptime',
              url: `${siteUrl}/`,
              timeout_ms: 5000,
            },
            {
              run_id: 102,
              check_id: 8,
              check_name: 'uptime',
              url: `${siteUrl}/down`,
              timeout_ms: 5000,
            },
            {
              run_id: 103,
              check_id: 9,
              check_name: 'certificate_health',
              // TLS to the plain-HTTP site: no handshake, so no certificate verdict.
              url: `${siteUrl.replace(/^http:/, 'https:')}/`,
              timeout_ms: 5000,
            },
          ],
        },
      });
      const got = await results(attempt, 3);
      const byRun = new Map(got.map((r) => [r.run_id, r]));
      const up = byRun.get(101)!;
      assert.equal(up.check_id, 7);
      assert.equal(up.ok, true);
      assert.equal(up.http_status_code, 200);
      assert.equal(up.error, '');
      assert.ok(up.response_time_ms > 0);
      assert.ok(Math.abs(up.started_at_ms - Date.now()) < 10_000);
      assert.ok('timings' in (JSON.parse(up.detail_json) as object));

      const down = byRun.get(102)!;
      assert.equal(down.check_id, 8);
      assert.equal(down.ok, false);
      assert.equal(down.http_status_code, 503);
      assert.equal(down.error, '503 - Service Unavailable');

      const cert = byRun.get(103)!;
      assert.equal(cert.check_id, 9);
      assert.equal(cert.ok, false);
      assert.equal(cert.http_status_code, 0);
      assert.match(cert.error, /^Cannot connect: /);
      assert.deepEqual(JSON.parse(cert.detail_json), { unreachable: true });
    },
  );

  test('results finishing together go out in one message', { timeout: 20_000 }, async () => {
    const coordinator = await startCoordinator(
      (a) => void a.hello.then(() => welcome(a.call, 's')),
    );
    cleanups.push(() => coordinator.close());
    const probe = node(coordinator.address);
    probe.start();
    await probe.ready();
    const attempt = coordinator.attempts[0]!;
    // Unknown check names are answered without a worker, all in the same tick.
    attempt.call.write({
      runs: {
        runs: [1, 2, 3].map((i) => ({
          run_id: i,
          check_id: i,
          check_name: 'dns',
          url: siteUrl,
          timeout_ms: 1000,
        })),
      },
    });
    const got = await results(attempt, 3);
    assert.equal(got.length, 3);
    const batches = attempt.messages.filter((m) => m.body === 'results');
    assert.equal(batches.length, 1);
    assert.deepEqual(JSON.parse(got[0]!.detail_json), { unsupported: true });
  });

  test(
    'sends heartbeats at the interval the coordinator asks for',
    { timeout: 20_000 },
    async () => {
      const coordinator = await startCoordinator(
        (a) => void a.hello.then(() => welcome(a.call, 's', 100)),
      );
      cleanups.push(() => coordinator.close());
      const probe = node(coordinator.address);
      probe.start();
      await probe.ready();
      const attempt = coordinator.attempts[0]!;
      await until(
        () => attempt.messages.filter((m) => m.body === 'heartbeat').length >= 3,
        3000,
        'heartbeats',
      );
      const beat = attempt.messages.find((m) => m.body === 'heartbeat')!;
      assert.ok(Math.abs(Number(beat.heartbeat?.sent_at_ms) - Date.now()) < 5000);
    },
  );

  test(
    'a wrong token is logged and retried with backoff, without crashing',
    { timeout: 20_000 },
    async () => {
      const coordinator = await startCoordinator((a) => {
        if (a.authorization !== 'Bearer right-token')
          refuse(a.call, grpc.status.UNAUTHENTICATED, 'bad token');
      });
      cleanups.push(() => coordinator.close());
      const { logger, lines } = memoryLogger();
      const probe = node(coordinator.address, { token: 'wrong-token', logger });
      let readySettled = false;
      probe.ready().then(
        () => (readySettled = true),
        () => undefined,
      );
      const startedAt = Date.now();
      probe.start();
      await coordinator.nextAttempt(3);
      assert.ok(Date.now() - startedAt >= 1000, 'retries are spaced out');
      // Backoff starts at 0.5 s and doubles: 3 attempts take about 1.5 s, never instantly.
      assert.equal(coordinator.attempts.length, 3);
      assert.equal(probe.connected, false);
      assert.equal(readySettled, false);
      assert.equal(probe.lastStreamEnd?.code, grpc.status.UNAUTHENTICATED);
      assert.ok(
        lines.some((l) => l.msg === 'probe token rejected by coordinator' && l.level === 50),
      );

      await probe.stop();
      await assert.rejects(probe.ready(), /stopped before/);
      const count = coordinator.attempts.length;
      await new Promise((r) => setTimeout(r, 1200));
      assert.equal(coordinator.attempts.length, count, 'no attempts after stop()');
    },
  );

  test(
    'a coordinator that stops sending heartbeats is left for a new stream',
    { timeout: 20_000 },
    async () => {
      const coordinator = await startCoordinator(
        (a) =>
          void a.hello.then(() => {
            welcome(a.call, `s${coordinator.attempts.length}`, 100);
            a.call.write({ heartbeat: { sent_at_ms: Date.now() } }); // then silence
          }),
      );
      cleanups.push(() => coordinator.close());
      const probe = node(coordinator.address);
      probe.start();
      await probe.ready();
      const second = await coordinator.nextAttempt(2);
      assert.equal((await second.hello).body, 'hello');
      assert.equal(probe.lastStreamEnd?.code, grpc.status.CANCELLED);
    },
  );

  test(
    'a refused protocol version logs the coordinator’s reason',
    { timeout: 20_000 },
    async () => {
      const coordinator = await startCoordinator(
        (a) =>
          void a.hello.then(() =>
            refuse(a.call, grpc.status.FAILED_PRECONDITION, 'protocol version 1 is not supported'),
          ),
      );
      cleanups.push(() => coordinator.close());
      const { logger, lines } = memoryLogger();
      const probe = node(coordinator.address, { logger });
      probe.start();
      await coordinator.nextAttempt(2);
      await until(
        () => lines.some((l) => l.msg === 'protocol version 1 is not supported'),
        2000,
        'log line',
      );
      assert.equal(probe.lastStreamEnd?.code, grpc.status.FAILED_PRECONDITION);
    },
  );

  test(
    'reconnects after the stream ends and drops runs in flight',
    { timeout: 20_000 },
    async () => {
      let sessions = 0;
      const coordinator = await startCoordinator(
        (a) => void a.hello.then(() => welcome(a.call, `s${++sessions}`)),
      );
      cleanups.push(() => coordinator.close());
      const probe = node(coordinator.address);
      const connectedIds: string[] = [];
      probe.on('connected', (id: string) => connectedIds.push(id));
      probe.start();
      await probe.ready();

      const first = coordinator.attempts[0]!;
      first.call.write({
        runs: {
          runs: [
            {
              run_id: 55,
              check_id: 5,
              check_name: 'uptime',
              url: `${siteUrl}/slow`,
              timeout_ms: 5000,
            },
          ],
        },
      });
      await new Promise((r) => setTimeout(r, 100));
      first.call.end(); // the coordinator goes away while run 55 is in flight

      const second = await coordinator.nextAttempt(2);
      await until(() => probe.connected && connectedIds.length === 2, 5000, 'second welcome');
      assert.deepEqual(connectedIds, ['s1', 's2']);
      assert.equal((await second.hello).body, 'hello');

      // Run 55 finishes ~0.8 s after it started; its result must not reach the new stream.
      await new Promise((r) => setTimeout(r, 1200));
      const late = second.messages.filter((m) => m.body === 'results');
      assert.equal(late.length, 0);

      // The new stream works.
      second.call.write({
        runs: {
          runs: [
            { run_id: 56, check_id: 5, check_name: 'uptime', url: `${siteUrl}/`, timeout_ms: 5000 },
          ],
        },
      });
      const [r] = await results(second, 1);
      assert.equal(r?.run_id, 56);
      assert.equal(r?.ok, true);
    },
  );

  test(
    'keeps trying while the coordinator is down, connects once it is up',
    { timeout: 20_000 },
    async () => {
      // Reserve a port, then free it: the node starts against nothing.
      const placeholder = await startCoordinator(() => undefined);
      const address = placeholder.address;
      placeholder.close();
      const { logger, lines } = memoryLogger();
      const probe = node(address, { logger });
      probe.start();
      await until(
        () => lines.filter((l) => l.msg.startsWith('coordinator unavailable')).length >= 2,
        5000,
        'retries',
      );
      assert.equal(probe.connected, false);

      const proto = loadProbeProto();
      const server = new grpc.Server();
      server.addService(proto.vigil.probe.v1.ProbeControl.service, {
        Connect: (call: Call) => {
          call.once('data', () => welcome(call, 'late'));
          call.on('end', () => call.end());
          call.on('error', () => undefined);
        },
      });
      await new Promise<void>((resolve, reject) =>
        server.bindAsync(address, grpc.ServerCredentials.createInsecure(), (err) =>
          err ? reject(err) : resolve(),
        ),
      );
      cleanups.push(() => server.forceShutdown());
      await probe.ready();
      assert.equal(probe.connected, true);
    },
  );
});
