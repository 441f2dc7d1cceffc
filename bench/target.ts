/**
 * A bench target fleet in its own process: HTTP servers on 127.0.0.1 answering 200 to every
 * path (or 503 for paths under /down/). Prints its ports as one JSON line
 * (`{"port": first, "ports": [...]}`) and runs until killed.
 *
 * argv (all optional): `--ports N` servers on N free ports (default 1); `--latency-ms MS`
 * delay before each answer (default 0); `--fail-ratio R` share of other paths answered 503,
 * chosen by a hash of the path so that a given site is stably up or down (default 0).
 *
 * Sites are the paths `/site/<i>` (i = 0, 1, …; any port). A control API under `/_bench/`
 * (any port, JSON) lets a scenario see and steer them:
 * - `POST /_bench/mark` starts a new observation: from now on the first request to each site
 *   is timed. Answers `{"marked_at": <epoch ms>}`.
 * - `GET /_bench/hits?n=N` → `{"n", "hit", "first_hit_min_ms", "first_hit_max_ms",
 *   "requests"}`: of sites 0 … N-1, how many were requested since the mark, the earliest and
 *   latest of their first requests (epoch ms, null if none), and all site requests since the
 *   mark.
 * - `POST /_bench/sites` body `{"down": [i, …], "up": [i, …]}` forces those sites to answer
 *   503 (down) or 200 (up) from now on, overriding `--fail-ratio` and `/down/`; answers
 *   `{"down": <sites forced down now>, "at": <epoch ms of the change>}`.
 * - `POST /_bench/changes` body `{"sites": [i, …]}` → `{"down_at", "first_request_after_down",
 *   "up_at", "first_request_after_up"}`: per listed site (same order), when it was last forced
 *   down / up (epoch ms) and when the first request after that change arrived (epoch ms, i.e.
 *   the start of the first run that saw the new state); null where there is none.
 * - `GET /_bench/ports` → `{"ports": [...], "tls_ports": [...]}`.
 * - `GET /_bench/peers` → `{"connections": {"<source address>": n, …}, "tls_connections": {…}}`:
 *   connections accepted since the process started, by the client's address — each probe has
 *   its own `--local-address`, so this counts runs per probe (one fresh connection per run).
 *
 * TLS (for certificate checks): `--tls-ports K --tls-cert FILE --tls-key FILE` adds K HTTPS
 * servers (the same sites and control API) serving the PEM certificate chain in FILE with its
 * key; their ports are printed as `"tls_ports"` in the JSON line.
 */
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { Socket } from 'node:net';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: {
    ports: { type: 'string', default: '1' },
    'latency-ms': { type: 'string', default: '0' },
    'fail-ratio': { type: 'string', default: '0' },
    'tls-ports': { type: 'string', default: '0' },
    'tls-cert': { type: 'string' },
    'tls-key': { type: 'string' },
  },
});
const ports = Math.min(64, Math.max(1, Number(values.ports) || 1));
const latencyMs = Math.max(0, Number(values['latency-ms']) || 0);
const failRatio = Math.min(1, Math.max(0, Number(values['fail-ratio']) || 0));
const tlsPorts = Math.min(64, Math.max(0, Number(values['tls-ports']) || 0));
if (tlsPorts > 0 && (!values['tls-cert'] || !values['tls-key'])) {
  process.stderr.write('target: --tls-ports needs --tls-cert and --tls-key\n');
  process.exit(2);
}

/** Largest site index tracked (first hits, forced state); higher ones are served untracked. */
const MAX_SITES = 4_000_000;

/** FNV-1a of the path, mapped to [0, 1). */
function pathFraction(path: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < path.length; i++) {
    h ^= path.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h / 2 ** 32;
}

/** First request time (epoch ms) per site since the mark; 0 = none. Grows on demand. */
let firstHit = new Float64Array(1024);
/** Forced state per site: 0 = none, 1 = down (503), 2 = up (200). Grows on demand. */
let forced = new Uint8Array(1024);
let forcedDown = 0;
let requestsSinceMark = 0;
/** Connections accepted by source address: plain HTTP ports, and TLS ports. */
const peers = new Map<string, number>();
const tlsPeers = new Map<string, number>();
/**
 * Per site (grown on demand, like `forced`): when it was last forced down / up (epoch ms, 0 =
 * never) and the first request after that change (0 = none yet).
 */
let downAt = new Float64Array(1024);
let firstAfterDown = new Float64Array(1024);
let upAt = new Float64Array(1024);
let firstAfterUp = new Float64Array(1024);

function grow<T extends Float64Array | Uint8Array>(a: T, i: number, make: (n: number) => T): T {
  if (i < a.length) return a;
  let n = a.length;
  while (n <= i) n *= 2;
  const b = make(Math.min(n, MAX_SITES));
  b.set(a);
  return b;
}

/** The site index of `/site/<i>[/…][?…]`, or -1. */
function siteIndex(url: string): number {
  if (!url.startsWith('/site/')) return -1;
  let i = 0;
  let p = 6;
  for (; p < url.length; p++) {
    const c = url.charCodeAt(p) - 48;
    if (c < 0 || c > 9) break;
    i = i * 10 + c;
  }
  return p === 6 || i >= MAX_SITES ? -1 : i;
}

function statusFor(url: string, site: number): number {
  if (site >= 0 && site < forced.length && forced[site] !== 0)
    return forced[site] === 1 ? 503 : 200;
  if (url.startsWith('/down/')) return 503;
  if (failRatio > 0 && pathFraction(url) < failRatio) return 503;
  return 200;
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.statusCode = status;
  res.setHeader('content-type', 'application/json');
  res.end(JSON.stringify(body));
}

function readBody(req: IncomingMessage): Promise<unknown> {
  return new Promise((resolve, reject) => {
    let text = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => {
      text += c;
      if (text.length > 64 * 1024 * 1024) req.destroy(new Error('body too large'));
    });
    req.on('end', () => {
      try {
        resolve(text ? (JSON.parse(text) as unknown) : {});
      } catch (err) {
        reject(err as Error);
      }
    });
    req.on('error', reject);
  });
}

function setSites(list: unknown, state: 1 | 2, now: number): void {
  if (!Array.isArray(list)) return;
  for (const v of list) {
    if (!Number.isInteger(v) || (v as number) < 0 || (v as number) >= MAX_SITES) continue;
    const i = v as number;
    forced = grow(forced, i, (n) => new Uint8Array(n));
    if (forced[i] === 1) forcedDown--;
    forced[i] = state;
    if (state === 1) forcedDown++;
    if (state === 1) {
      downAt = grow(downAt, i, (n) => new Float64Array(n));
      firstAfterDown = grow(firstAfterDown, i, (n) => new Float64Array(n));
      downAt[i] = now;
      firstAfterDown[i] = 0;
    } else {
      upAt = grow(upAt, i, (n) => new Float64Array(n));
      firstAfterUp = grow(firstAfterUp, i, (n) => new Float64Array(n));
      upAt[i] = now;
      firstAfterUp[i] = 0;
    }
  }
}

/** Note the first request to `site` after its last forced change. */
function noteAfterChange(site: number, now: number): void {
  const state = site < forced.length ? forced[site] : 0;
  if (state === 1 && firstAfterDown[site] === 0) firstAfterDown[site] = now;
  else if (state === 2 && firstAfterUp[site] === 0) firstAfterUp[site] = now;
}

/** `a[i]` for each listed site, null where 0 or out of range. */
function column(a: Float64Array, sites: unknown[]): (number | null)[] {
  return sites.map((v) =>
    Number.isInteger(v) && (v as number) >= 0 && (v as number) < a.length && a[v as number] !== 0
      ? (a[v as number] as number)
      : null,
  );
}

async function control(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
  if (req.method === 'POST' && url.pathname === '/_bench/mark') {
    firstHit.fill(0);
    requestsSinceMark = 0;
    return json(res, 200, { marked_at: Date.now() });
  }
  if (req.method === 'GET' && url.pathname === '/_bench/hits') {
    const n = Math.min(MAX_SITES, Math.max(0, Number(url.searchParams.get('n')) || 0));
    let hit = 0;
    let min = Infinity;
    let max = 0;
    for (let i = 0; i < Math.min(n, firstHit.length); i++) {
      const t = firstHit[i] as number;
      if (t === 0) continue;
      hit++;
      if (t < min) min = t;
      if (t > max) max = t;
    }
    return json(res, 200, {
      n,
      hit,
      first_hit_min_ms: hit ? min : null,
      first_hit_max_ms: hit ? max : null,
      requests: requestsSinceMark,
    });
  }
  if (req.method === 'POST' && url.pathname === '/_bench/sites') {
    const body = (await readBody(req)) as { down?: unknown; up?: unknown };
    const now = Date.now();
    setSites(body.down, 1, now);
    setSites(body.up, 2, now);
    return json(res, 200, { down: forcedDown, at: now });
  }
  if (req.method === 'POST' && url.pathname === '/_bench/changes') {
    const body = (await readBody(req)) as { sites?: unknown };
    const sites = Array.isArray(body.sites) ? (body.sites as unknown[]) : [];
    return json(res, 200, {
      down_at: column(downAt, sites),
      first_request_after_down: column(firstAfterDown, sites),
      up_at: column(upAt, sites),
      first_request_after_up: column(firstAfterUp, sites),
    });
  }
  if (req.method === 'GET' && url.pathname === '/_bench/peers') {
    return json(res, 200, {
      connections: Object.fromEntries(peers),
      tls_connections: Object.fromEntries(tlsPeers),
    });
  }
  if (req.method === 'GET' && url.pathname === '/_bench/ports') {
    return json(res, 200, { ports: list, tls_ports: tlsList });
  }
  return json(res, 404, { message: 'no such control route' });
}

function handle(req: IncomingMessage, res: ServerResponse): void {
  const url = req.url ?? '/';
  if (url.startsWith('/_bench/')) {
    control(req, res, new URL(url, 'http://localhost')).catch((err: Error) =>
      json(res, 400, { message: err.message }),
    );
    return;
  }
  const site = siteIndex(url);
  if (site >= 0) {
    requestsSinceMark++;
    const now = Date.now();
    firstHit = grow(firstHit, site, (n) => new Float64Array(n));
    if (firstHit[site] === 0) firstHit[site] = now;
    noteAfterChange(site, now);
  }
  const answer = (): void => {
    res.statusCode = statusFor(url, site);
    res.end('ok');
  };
  if (latencyMs > 0) setTimeout(answer, latencyMs);
  else answer();
}

/** A TLS server's certificate chain and key (PEM), read once. */
const tlsOptions =
  tlsPorts > 0
    ? {
        cert: readFileSync(values['tls-cert'] as string, 'utf8'),
        key: readFileSync(values['tls-key'] as string, 'utf8'),
      }
    : null;

function listen(tls: boolean): Promise<number> {
  let server: Server;
  if (tls && tlsOptions) {
    server = createTlsServer(tlsOptions, handle);
    // A certificate check closes right after the handshake; that is not an error here.
    server.on('tlsClientError', () => undefined);
  } else {
    server = createServer(handle);
  }
  const counts = tls ? tlsPeers : peers;
  server.on('connection', (socket: Socket) => {
    const from = socket.remoteAddress ?? '?';
    counts.set(from, (counts.get(from) ?? 0) + 1);
  });
  server.keepAliveTimeout = 1000;
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      resolve(typeof address === 'object' && address ? address.port : 0);
    });
  });
}

const list: number[] = [];
for (let i = 0; i < ports; i++) list.push(await listen(false));
const tlsList: number[] = [];
for (let i = 0; i < tlsPorts; i++) tlsList.push(await listen(true));
process.stdout.write(`${JSON.stringify({ port: list[0], ports: list, tls_ports: tlsList })}\n`);
