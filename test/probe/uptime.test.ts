/**
 * The uptime check (CONTRACT §5) through a real CheckPool (worker threads), against raw
 * loopback servers on port 0.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import * as http from 'node:http';
import * as https from 'node:https';
import * as net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { CheckPool } from '../../src/probe/pool.js';
import { canBind, deadPort } from '../helpers.js';
import type { CheckTaskResult } from '../../src/probe/task.js';
import { TestPki } from '../tls-ca.js';

interface Loopback {
  server: http.Server;
  /** Base URL, e.g. http://127.0.0.1:PORT */
  url: string;
  /** TCP connections accepted so far. */
  connections: number;
  /** Remote addresses of accepted connections, in order. */
  remotes: string[];
}

const servers: net.Server[] = [];

async function listen<S extends net.Server>(server: S, host = '127.0.0.1'): Promise<number> {
  servers.push(server);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, host, () => resolve());
  });
  return (server.address() as net.AddressInfo).port;
}

async function startHttp(handler: http.RequestListener): Promise<Loopback> {
  const server = http.createServer(handler);
  const lb: Loopback = { server, url: '', connections: 0, remotes: [] };
  server.on('connection', (socket) => {
    lb.connections += 1;
    lb.remotes.push(socket.remoteAddress ?? '');
  });
  lb.url = `http://127.0.0.1:${await listen(server)}`;
  return lb;
}

/**
 * TCP connections in TIME_WAIT whose local address is the IPv4 `address`, from
 * /proc/net/tcp (state 06; addresses in little-endian hex).
 */
async function timeWaitFrom(address: string): Promise<number> {
  const hex = address
    .split('.')
    .map((b) => Number(b).toString(16).padStart(2, '0').toUpperCase())
    .reverse()
    .join('');
  const table = await readFile('/proc/net/tcp', 'utf8');
  return table
    .split('\n')
    .slice(1)
    .filter((line) => {
      const f = line.trim().split(/\s+/);
      return f[1]?.startsWith(`${hex}:`) === true && f[3] === '06';
    }).length;
}

describe('uptime check through CheckPool', () => {
  let pool: CheckPool;
  let site: Loopback;

  before(async () => {
    pool = new CheckPool({ threads: 2, localAddress: null });
    site = await startHttp((req, res) => {
      const url = new URL(req.url ?? '/', 'http://x');
      const path = url.pathname;
      const hop = /^\/hops\/(\d+)$/.exec(path);
      if (hop) {
        // /hops/N redirects N more times, then answers 200.
        const left = Number(hop[1]);
        if (left === 0) {
          res.end('arrived');
          return;
        }
        res.writeHead(left % 2 === 0 ? 301 : 302, { location: `/hops/${left - 1}` });
        res.end();
        return;
      }
      switch (path) {
        case '/ok':
          res.end('hello');
          return;
        case '/chain-301':
          res.writeHead(301, { location: '/chain-302' }).end();
          return;
        case '/chain-302':
          res.writeHead(302, { location: '/ok' }).end();
          return;
        case '/503':
          res.writeHead(503).end('down');
          return;
        case '/404':
          res.writeHead(404).end('missing');
          return;
        case '/599':
          res.writeHead(599).end();
          return;
        case '/304':
          res.writeHead(304).end();
          return;
        case '/hang':
          return; // never answers
        case '/reset':
          req.socket.destroy();
          return;
        case '/slow':
          setTimeout(() => res.end('slow'), 300);
          return;
        case '/endless': {
          // Streams forever; the check must stop reading at its body limit.
          res.writeHead(200, { 'content-type': 'application/octet-stream' });
          const chunk = Buffer.alloc(64 * 1024, 0x61);
          const pump = (): void => {
            while (!res.destroyed && res.write(chunk));
            if (!res.destroyed) res.once('drain', pump);
          };
          pump();
          return;
        }
        default:
          res.writeHead(500).end();
      }
    });
  });

  after(async () => {
    await pool.close();
    for (const s of servers) {
      if (s instanceof http.Server) s.closeAllConnections();
      s.close();
    }
  });

  const run = (path: string, timeoutMs = 5000, base?: string): Promise<CheckTaskResult> =>
    pool.run({ checkName: 'uptime', url: `${base ?? site.url}${path}`, timeoutMs });

  test('200 is up', { timeout: 20_000 }, async () => {
    const before = Date.now();
    const r = await run('/ok');
    assert.equal(r.ok, true);
    assert.equal(r.httpStatusCode, 200);
    assert.equal(r.error, '');
    assert.ok(
      r.responseTimeMs > 0 && r.responseTimeMs < 5000,
      `responseTimeMs ${r.responseTimeMs}`,
    );
    assert.ok(r.startedAtMs >= before && r.startedAtMs <= Date.now());
    const timings = (r.detail as { timings: Record<string, number | null> }).timings;
    assert.equal(timings.dnsMs, null, 'an IP literal needs no lookup');
    assert.ok(typeof timings.tcpMs === 'number' && timings.tcpMs >= 0);
    assert.ok(typeof timings.firstByteMs === 'number' && timings.firstByteMs <= r.responseTimeMs);
  });

  test('a 301 → 302 → 200 chain is up with the final status', { timeout: 20_000 }, async () => {
    const r = await run('/chain-301');
    assert.equal(r.ok, true);
    assert.equal(r.httpStatusCode, 200);
    assert.equal(r.error, '');
    assert.equal((r.detail as { redirects: number }).redirects, 2);
  });

  test('exactly 5 redirects are followed', { timeout: 20_000 }, async () => {
    const r = await run('/hops/5');
    assert.equal(r.ok, true, r.error);
    assert.equal(r.httpStatusCode, 200);
    assert.equal((r.detail as { redirects: number }).redirects, 5);
  });

  test('6 redirects fail as too many', { timeout: 20_000 }, async () => {
    const r = await run('/hops/6');
    assert.equal(r.ok, false);
    assert.equal(r.httpStatusCode, 0);
    assert.equal(r.error, '0 - Too many redirects (more than 5)');
  });

  test('503 is down with its reason phrase', { timeout: 20_000 }, async () => {
    const r = await run('/503');
    assert.equal(r.ok, false);
    assert.equal(r.httpStatusCode, 503);
    assert.equal(r.error, '503 - Service Unavailable');
  });

  test('404 is down', { timeout: 20_000 }, async () => {
    const r = await run('/404');
    assert.equal(r.ok, false);
    assert.equal(r.httpStatusCode, 404);
    assert.equal(r.error, '404 - Not Found');
  });

  test('a status without a reason phrase says Unknown Status', { timeout: 20_000 }, async () => {
    const r = await run('/599');
    assert.equal(r.ok, false);
    assert.equal(r.httpStatusCode, 599);
    assert.equal(r.error, '599 - Unknown Status');
  });

  test('a 3xx without Location is a final answer and up', { timeout: 20_000 }, async () => {
    const r = await run('/304');
    assert.equal(r.ok, true);
    assert.equal(r.httpStatusCode, 304);
  });

  test('a refused connection is down with code 0', { timeout: 20_000 }, async () => {
    const port = await deadPort();
    const r = await run('/', 5000, `http://127.0.0.1:${port}`);
    assert.equal(r.ok, false);
    assert.equal(r.httpStatusCode, 0);
    assert.equal(r.error, '0 - Connection refused');
  });

  test('a server that never answers times out at the budget', { timeout: 20_000 }, async () => {
    const r = await run('/hang', 500);
    assert.equal(r.ok, false);
    assert.equal(r.httpStatusCode, 0);
    assert.equal(r.error, '0 - Timed out after 0.5 s');
    assert.ok(r.responseTimeMs >= 450 && r.responseTimeMs < 3000, `took ${r.responseTimeMs} ms`);
  });

  test('a reset connection is down with code 0', { timeout: 20_000 }, async () => {
    const r = await run('/reset');
    assert.equal(r.ok, false);
    assert.equal(r.httpStatusCode, 0);
    assert.ok(
      r.error === '0 - Connection reset' || r.error === '0 - Connection closed',
      `error was ${JSON.stringify(r.error)}`,
    );
  });

  test(
    'an endless body is read up to the limit and counts as done',
    { timeout: 20_000 },
    async () => {
      const r = await run('/endless', 5000);
      assert.equal(r.ok, true, r.error);
      assert.equal(r.httpStatusCode, 200);
      assert.ok(r.responseTimeMs < 5000);
    },
  );

  test('a TLS failure is down with a TLS error', { timeout: 20_000 }, async () => {
    // A self-signed certificate for localhost / 127.0.0.1, made for this run.
    const cert = await (await TestPki.create()).leaf({ issuer: 'self' });
    const server = https.createServer({ key: cert.keyPem, cert: cert.certPem }, (_req, res) =>
      res.end('secret'),
    );
    const port = await listen(server);
    const r = await run('/', 5000, `https://localhost:${port}`);
    assert.equal(r.ok, false);
    assert.equal(r.httpStatusCode, 0);
    assert.equal(r.error, '0 - TLS error: self-signed certificate');
    const timings = (r.detail as { timings: Record<string, number | null> }).timings;
    assert.ok(typeof timings.dnsMs === 'number', 'localhost is looked up');
  });

  test('every run opens a fresh connection', { timeout: 20_000 }, async () => {
    const fresh = await startHttp((_req, res) => res.end('ok'));
    for (let i = 0; i < 3; i++) {
      const r = await run('/', 5000, fresh.url);
      assert.equal(r.ok, true);
    }
    assert.equal(fresh.connections, 3);
  });

  test('every redirect hop opens its own connection', { timeout: 20_000 }, async () => {
    const before = site.connections;
    const r = await run('/chain-301');
    assert.equal(r.ok, true, r.error);
    assert.equal(site.connections - before, 3, '301 → 302 → 200 is three requests');
  });

  test(
    'a TLS handshake that never completes times out at the budget, not later',
    { timeout: 20_000 },
    async () => {
      // Accepts TCP and then says nothing: the run is stuck in the TLS handshake, before its
      // request could be sent.
      const open = new Set<net.Socket>();
      let closedAt = 0;
      const silent = net.createServer((socket) => {
        open.add(socket);
        socket.on('close', () => {
          open.delete(socket);
          closedAt = performance.now();
        });
        socket.on('error', () => undefined);
        socket.resume(); // read, so that the client's FIN is seen
      });
      const port = await listen(silent);
      const started = performance.now();
      const r = await run('/', 500, `https://127.0.0.1:${port}`);
      assert.equal(r.ok, false);
      assert.equal(r.httpStatusCode, 0);
      assert.equal(r.error, '0 - Timed out after 0.5 s');
      assert.ok(r.responseTimeMs >= 450 && r.responseTimeMs < 1000, `took ${r.responseTimeMs} ms`);
      // The connection in progress is dropped with the run, not left to undici's own timeout.
      const deadline = Date.now() + 2000;
      while (open.size > 0 && Date.now() < deadline)
        await new Promise((res) => setTimeout(res, 10));
      assert.equal(open.size, 0, 'the stuck connection was closed');
      assert.ok(closedAt - started < 1000, `closed after ${closedAt - started} ms`);
    },
  );

  test('a slow run does not hold back a fast one sent with it', { timeout: 20_000 }, async () => {
    const slow = run('/hang', 3000);
    const started = performance.now();
    const fast = await run('/ok');
    assert.equal(fast.ok, true, fast.error);
    assert.ok(performance.now() - started < 1500, 'the fast result came before the slow one');
    assert.equal((await slow).error, '0 - Timed out after 3 s');
  });

  test(
    'a finished run closes its connection with a reset: no TIME_WAIT on either side',
    { timeout: 20_000 },
    async () => {
      // A bare HTTP/1.1 server that answers and then keeps the connection open, noting how the
      // client left: a FIN ('end') or a reset (ECONNRESET).
      const endings: string[] = [];
      const raw = net.createServer((socket) => {
        socket.once('data', () =>
          socket.write('HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\r\nok'),
        );
        socket.on('end', () => endings.push('fin'));
        socket.on('error', (err: NodeJS.ErrnoException) => endings.push(err.code ?? err.message));
      });
      const port = await listen(raw);
      const r = await run('/', 5000, `http://127.0.0.1:${port}`);
      assert.equal(r.ok, true, r.error);
      const deadline = Date.now() + 2000;
      while (endings.length === 0 && Date.now() < deadline) {
        await new Promise((res) => setTimeout(res, 10));
      }
      assert.deepEqual(endings, ['ECONNRESET']);

      // Under load, as in the bench: runs arriving in bursts from one source address against a
      // Node http server. Before resets were tied to the socket's destroy, undici closed its
      // Client in the same turn as the response and every one of these left a TIME_WAIT.
      const source = '127.0.0.77';
      if (!(await canBind(source))) return;
      const site = http.createServer((_req, res) => res.end('ok'));
      site.keepAliveTimeout = 1000;
      const sitePort = await listen(site);
      const loaded = new CheckPool({ threads: 2, localAddress: source });
      const lingering = await timeWaitFrom(source); // an earlier run's, gone within 60 s
      try {
        const results = await Promise.all(
          Array.from({ length: 400 }, (_, i) =>
            new Promise((res) => setTimeout(res, Math.floor(i / 50) * 50)).then(() =>
              loaded.run({
                checkName: 'uptime',
                url: `http://127.0.0.1:${sitePort}/site/${i}`,
                timeoutMs: 10_000,
              }),
            ),
          ),
        );
        assert.deepEqual(
          results.filter((x) => !x.ok).map((x) => x.error),
          [],
        );
        assert.ok(
          (await timeWaitFrom(source)) <= lingering,
          `TIME_WAIT from ${source}: ${await timeWaitFrom(source)}, ${lingering} before`,
        );
      } finally {
        await loaded.close();
      }
    },
  );

  test('runs proceed concurrently on the workers', { timeout: 20_000 }, async () => {
    const started = performance.now();
    const results = await Promise.all(Array.from({ length: 50 }, () => run('/slow', 15_000)));
    const elapsed = performance.now() - started;
    assert.deepEqual(
      results.filter((r) => !r.ok).map((r) => r.error),
      [],
    );
    // 50 runs of 300 ms each, one after the other, would take 15 s.
    assert.ok(elapsed < 7500, `took ${elapsed} ms`);
  });

  test('the local address is honored', { timeout: 20_000 }, async (t) => {
    const target = await startHttp((_req, res) => res.end('ok'));
    const bound = new CheckPool({ threads: 1, localAddress: '127.0.0.1' });
    try {
      const r = await bound.run({ checkName: 'uptime', url: `${target.url}/`, timeoutMs: 5000 });
      assert.equal(r.ok, true, r.error);
      assert.equal(target.remotes.at(-1), '127.0.0.1');

      if (!(await canBind('127.0.0.2'))) {
        t.diagnostic('127.0.0.2 cannot be bound here; skipped that half');
        return;
      }
      const other = await bound.run({
        checkName: 'uptime',
        url: `${target.url}/`,
        timeoutMs: 5000,
        localAddress: '127.0.0.2',
      });
      assert.equal(other.ok, true, other.error);
      assert.equal(target.remotes.at(-1), '127.0.0.2');
    } finally {
      await bound.close();
    }
  });

  test('a pool-wide local address applies to every run', { timeout: 20_000 }, async (t) => {
    const target = await startHttp((_req, res) => res.end('ok'));
    if (!(await canBind('127.0.0.2'))) {
      t.skip('127.0.0.2 cannot be bound here');
      return;
    }
    const bound = new CheckPool({ threads: 1, localAddress: '127.0.0.2' });
    try {
      for (let i = 0; i < 2; i++) {
        const r = await bound.run({ checkName: 'uptime', url: `${target.url}/`, timeoutMs: 5000 });
        assert.equal(r.ok, true, r.error);
      }
      assert.deepEqual(target.remotes, ['127.0.0.2', '127.0.0.2']);
    } finally {
      await bound.close();
    }
  });
});

/**
 * A successful `https:` run needs a trusted certificate, and Node reads NODE_EXTRA_CA_CERTS only
 * when a process starts: so this runs the compiled uptime check in a child process that trusts
 * the test root.
 */
describe('uptime check over TLS', () => {
  test(
    'is up, with TLS timings and SNI; the connection ends with a reset',
    { timeout: 30_000 },
    async () => {
      const dir = await mkdtemp(join(tmpdir(), 'vigil-uptime-tls-'));
      const pki = await TestPki.create();
      const cert = await pki.leaf({ issuer: 'root' });
      const servernames: Array<string | false> = [];
      const endings: string[] = [];
      const server = https.createServer({ key: cert.keyPem, cert: cert.chainPem }, (_req, res) =>
        res.end('secure'),
      );
      server.on('secureConnection', (socket) => {
        servernames.push((socket as { servername?: string | false }).servername ?? false);
        socket.on('end', () => endings.push('fin'));
        socket.on('error', (err: NodeJS.ErrnoException) => endings.push(err.code ?? err.message));
      });
      try {
        const port = await listen(server);
        const trust = await pki.writeTrustFile(dir);
        const worker = new URL('../../workers/uptime.js', import.meta.url).href;
        const script =
          `const { default: run } = await import(${JSON.stringify(worker)});` +
          `const r = await run({ checkName: 'uptime', url: process.argv[1], timeoutMs: 5000, localAddress: null });` +
          `process.stdout.write(JSON.stringify(r));`;
        const stdout = await new Promise<string>((resolve, reject) =>
          execFile(
            process.execPath,
            ['--input-type=module', '-e', script, `https://localhost:${port}/`],
            { env: { ...process.env, NODE_EXTRA_CA_CERTS: trust }, timeout: 20_000 },
            (err, out) => (err ? reject(err) : resolve(out)),
          ),
        );
        const r = JSON.parse(stdout) as CheckTaskResult;
        assert.equal(r.ok, true, r.error);
        assert.equal(r.httpStatusCode, 200);
        const timings = (r.detail as { timings: Record<string, number | null> }).timings;
        for (const phase of ['dnsMs', 'tcpMs', 'tlsMs', 'firstByteMs'] as const) {
          assert.equal(typeof timings[phase], 'number', `${phase} is measured`);
        }
        assert.deepEqual(servernames, ['localhost'], 'SNI names the host');
        const deadline = Date.now() + 2000;
        while (endings.length === 0 && Date.now() < deadline) {
          await new Promise((res) => setTimeout(res, 10));
        }
        assert.deepEqual(endings, ['ECONNRESET']);
      } finally {
        server.closeAllConnections();
        server.close();
        await rm(dir, { recursive: true, force: true });
      }
    },
  );
});
