/**
 * The bench webhook receiver (issue 7), run as its own process, plus the client the scenarios
 * use to start and read it ({@link startReceiver}).
 *
 * The process (`node dist/bench/receiver.js [--ports N] [--hang-ports K] [--max-records M]`)
 * listens on N ports of 127.0.0.1 (default 1) and prints one JSON line
 * `{"ports": [...], "hang_ports": [...]}`. A webhook is a POST to `/hook/<key>` on any of those
 * ports (`<key>` names the account, e.g. the user index): it reads the body (at most 64 KiB,
 * else 413), records the delivery and answers 200. Per delivery it keeps, in typed arrays
 * (bounded: at most M = 1,000,000 deliveries, beyond that only counted as `dropped`):
 * - `at`: Date.now() just before the 200 is written (epoch ms);
 * - the monitor id and the event type from the body (`check.name` + `check.status`, and
 *   `meta.expires_in_days` for the certificate ones), and for a Down whether it was verified
 *   from another location (`meta.detected_by` ≠ `meta.verified_via`);
 * - `X-Service-Webhook`, `X-Service-Parent-Webhook`, `X-Service-Current-Try`;
 * - the signature verdict: HMAC-SHA1 of the raw body keyed with the key's API token
 *   (src/delivery/signature.ts, README "Webhooks") — ok, bad, or no token known;
 * - which port and which key it came on.
 * K `--hang-ports` accept connections and never answer (a hung receiver).
 *
 * Control API on any port, JSON: `POST /_receiver/keys` body `{"keys": {"<key>": "<api
 * token>"}}` (adds to the known tokens); `GET /_receiver/stats` ({@link ReceiverStats});
 * `GET /_receiver/records?from=I&limit=L` (columnar, {@link RecordsPage}).
 */
import { spawn } from 'node:child_process';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createNetServer, type Socket } from 'node:net';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { verifyWebhook } from '../src/delivery/signature.js';
import { Child, quantiles, round } from './harness.js';

/** Compiled receiver (dist/bench/receiver.js). */
export const RECEIVER = fileURLToPath(new URL('./receiver.js', import.meta.url));

/** Event types by code, as recorded (0 = not a Vigil webhook body). */
export const EVENT_TYPES = [
  'unknown',
  'uptime.down',
  'uptime.recovered',
  'certificate.invalid',
  'certificate.recovered',
  'certificate.expires_soon',
] as const;

/** Code of `uptime.down` in {@link EVENT_TYPES}. */
export const DOWN = 1;
/** Code of `uptime.recovered` in {@link EVENT_TYPES}. */
export const RECOVERED = 2;

/** Signature verdicts by code. */
export const SIGNATURE = ['bad', 'ok', 'no_key'] as const;

/** `GET /_receiver/stats`. */
export interface ReceiverStats {
  /** Webhook POSTs answered 200 (every try counts). */
  received: number;
  /** Distinct `X-Service-Parent-Webhook` values among them (events). */
  unique: number;
  /** POSTs of an event already received (same parent id). */
  duplicates: number;
  /** POSTs not kept because `--max-records` was reached (still answered 200). */
  dropped: number;
  /** POSTs refused: body over 64 KiB (413) or not JSON (400). */
  refused: number;
  /** Signature verdicts of the received POSTs. */
  signature: Record<(typeof SIGNATURE)[number], number>;
  /** Events (unique parents) by type. */
  by_type: Record<string, number>;
  /** Received POSTs by listening port (same order as `ports`). */
  by_port: number[];
  /** Connections accepted on the hang ports. */
  hang_connections: number;
}

/** A page of `GET /_receiver/records`, columnar; index = delivery number. */
export interface RecordsPage {
  from: number;
  /** Deliveries recorded in all. */
  total: number;
  /** Epoch ms of each 200. */
  at: number[];
  monitor: number[];
  /** Index into {@link EVENT_TYPES}. */
  type: number[];
  /** Index into the receiver's ports. */
  port: number[];
  /** The `/hook/<key>` key, or '' when the path had none. */
  key: string[];
  parent: number[];
  webhook: number[];
  try: number[];
  /** Index into {@link SIGNATURE}. */
  sig: number[];
  /** Down only: 1 = detected_by ≠ verified_via, 0 = equal; 2 for other types. */
  verified_elsewhere: number[];
}

// ---------------------------------------------------------------------------------------------
// The process

const MAX_BODY = 64 * 1024;

/** Growable columnar store of deliveries, bounded by `max`. */
class Deliveries {
  n = 0;
  dropped = 0;
  at = new Float64Array(1024);
  monitor = new Int32Array(1024);
  type = new Uint8Array(1024);
  port = new Uint8Array(1024);
  key = new Uint16Array(1024);
  parent = new Float64Array(1024);
  webhook = new Float64Array(1024);
  tryNo = new Uint16Array(1024);
  sig = new Uint8Array(1024);
  verified = new Uint8Array(1024);
  /** Key strings by their index in `key`. */
  readonly keyNames: string[] = [];
  private readonly keyIndex = new Map<string, number>();
  constructor(readonly max: number) {}

  keyOf(name: string): number {
    let k = this.keyIndex.get(name);
    if (k === undefined) {
      k = this.keyNames.length;
      if (k >= 65_535) return 65_535;
      this.keyNames.push(name);
      this.keyIndex.set(name, k);
    }
    return k;
  }

  /** Room for one more; false when full. */
  reserve(): boolean {
    if (this.n >= this.max) {
      this.dropped++;
      return false;
    }
    if (this.n === this.at.length) {
      const size = Math.min(this.max, this.at.length * 2);
      const g = <T extends Float64Array | Int32Array | Uint8Array | Uint16Array>(
        a: T,
        make: (n: number) => T,
      ): T => {
        const b = make(size);
        b.set(a);
        return b;
      };
      this.at = g(this.at, (n) => new Float64Array(n));
      this.monitor = g(this.monitor, (n) => new Int32Array(n));
      this.type = g(this.type, (n) => new Uint8Array(n));
      this.port = g(this.port, (n) => new Uint8Array(n));
      this.key = g(this.key, (n) => new Uint16Array(n));
      this.parent = g(this.parent, (n) => new Float64Array(n));
      this.webhook = g(this.webhook, (n) => new Float64Array(n));
      this.tryNo = g(this.tryNo, (n) => new Uint16Array(n));
      this.sig = g(this.sig, (n) => new Uint8Array(n));
      this.verified = g(this.verified, (n) => new Uint8Array(n));
    }
    return true;
  }

  page(from: number, limit: number): RecordsPage {
    const to = Math.min(this.n, from + limit);
    const col = (a: ArrayLike<number>): number[] =>
      Array.from({ length: to - from }, (_, j) => a[from + j] as number);
    return {
      from,
      total: this.n,
      at: col(this.at),
      monitor: col(this.monitor),
      type: col(this.type),
      port: col(this.port),
      key: col(this.key).map((k) => this.keyNames[k] ?? ''),
      parent: col(this.parent),
      webhook: col(this.webhook),
      try: col(this.tryNo),
      sig: col(this.sig),
      verified_elsewhere: col(this.verified),
    };
  }
}

interface BodyShape {
  check?: { name?: unknown; status?: unknown; meta?: Record<string, unknown> };
  monitor?: { id?: unknown };
}

/** Event type code and "verified elsewhere" flag of a webhook body. */
function classify(body: BodyShape): { type: number; verified: number } {
  const c = body.check;
  const meta = c?.meta ?? {};
  if (c?.name === 'uptime') {
    if (c.status === 'nok')
      return { type: DOWN, verified: meta.detected_by !== meta.verified_via ? 1 : 0 };
    if (c.status === 'ok') return { type: RECOVERED, verified: 2 };
  } else if (c?.name === 'certificate_health') {
    if (c.status === 'nok') return { type: 3, verified: 2 };
    if (c.status === 'ok') return { type: 'expires_in_days' in meta ? 5 : 4, verified: 2 };
  }
  return { type: 0, verified: 2 };
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  res.statusCode = status;
  res.setHeader('content-type', 'application/json');
  res.end(JSON.stringify(body));
}

async function receiverMain(): Promise<void> {
  const { values } = parseArgs({
    options: {
      ports: { type: 'string', default: '1' },
      'hang-ports': { type: 'string', default: '0' },
      'max-records': { type: 'string', default: '1000000' },
    },
  });
  const portCount = Math.min(64, Math.max(1, Number(values.ports) || 1));
  const hangCount = Math.min(64, Math.max(0, Number(values['hang-ports']) || 0));
  const store = new Deliveries(Math.max(1, Number(values['max-records']) || 1_000_000));
  const tokens = new Map<string, string>();
  const parents = new Set<number>();
  const stats: ReceiverStats = {
    received: 0,
    unique: 0,
    duplicates: 0,
    dropped: 0,
    refused: 0,
    signature: { bad: 0, ok: 0, no_key: 0 },
    by_type: {},
    by_port: new Array<number>(portCount).fill(0),
    hang_connections: 0,
  };

  const readBody = (req: IncomingMessage): Promise<Buffer | null> =>
    new Promise((resolve, reject) => {
      const chunks: Buffer[] = [];
      let size = 0;
      req.on('data', (c: Buffer) => {
        size += c.length;
        if (size <= MAX_BODY) chunks.push(c);
      });
      req.on('end', () => resolve(size > MAX_BODY ? null : Buffer.concat(chunks)));
      req.on('error', reject);
    });

  const control = async (req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> => {
    if (req.method === 'POST' && url.pathname === '/_receiver/keys') {
      const raw = await readBody(req);
      const body = JSON.parse(raw?.toString('utf8') ?? '{}') as { keys?: Record<string, unknown> };
      for (const [k, v] of Object.entries(body.keys ?? {}))
        if (typeof v === 'string') tokens.set(k, v);
      return sendJson(res, 200, { keys: tokens.size });
    }
    if (req.method === 'GET' && url.pathname === '/_receiver/stats') {
      return sendJson(res, 200, { ...stats, dropped: store.dropped });
    }
    if (req.method === 'GET' && url.pathname === '/_receiver/records') {
      const from = Math.max(0, Number(url.searchParams.get('from')) || 0);
      const limit = Math.min(50_000, Math.max(1, Number(url.searchParams.get('limit')) || 10_000));
      return sendJson(res, 200, store.page(from, limit));
    }
    return sendJson(res, 404, { message: 'no such control route' });
  };

  const hook = async (
    req: IncomingMessage,
    res: ServerResponse,
    url: URL,
    portIndex: number,
  ): Promise<void> => {
    const raw = await readBody(req);
    if (raw === null) {
      stats.refused++;
      return sendJson(res, 413, { message: 'body too large' });
    }
    let body: BodyShape;
    try {
      body = JSON.parse(raw.toString('utf8')) as BodyShape;
    } catch {
      stats.refused++;
      return sendJson(res, 400, { message: 'not JSON' });
    }
    const keyName = /^\/hook\/([\w.-]+)/.exec(url.pathname)?.[1] ?? '';
    const token = tokens.get(keyName);
    const header = req.headers['x-service-signature'];
    const sig =
      token === undefined
        ? 2
        : verifyWebhook(raw, typeof header === 'string' ? header : null, token)
          ? 1
          : 0;
    const parent = Number(req.headers['x-service-parent-webhook'] ?? NaN);
    const { type, verified } = classify(body);
    stats.received++;
    stats.signature[SIGNATURE[sig] as (typeof SIGNATURE)[number]]++;
    stats.by_port[portIndex] = (stats.by_port[portIndex] ?? 0) + 1;
    if (parents.has(parent)) stats.duplicates++;
    else {
      if (parents.size < store.max) parents.add(parent);
      stats.unique++;
      const name = EVENT_TYPES[type] as string;
      stats.by_type[name] = (stats.by_type[name] ?? 0) + 1;
    }
    const at = Date.now();
    if (store.reserve()) {
      const i = store.n++;
      store.at[i] = at;
      store.monitor[i] = Number(body.monitor?.id ?? 0) | 0;
      store.type[i] = type;
      store.port[i] = portIndex;
      store.key[i] = store.keyOf(keyName);
      store.parent[i] = parent;
      store.webhook[i] = Number(req.headers['x-service-webhook'] ?? NaN);
      store.tryNo[i] = Number(req.headers['x-service-current-try'] ?? 0) | 0;
      store.sig[i] = sig;
      store.verified[i] = verified;
    }
    res.statusCode = 200;
    res.end();
  };

  const listenOn = (portIndex: number): Promise<number> => {
    const server = createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://localhost');
      const work = url.pathname.startsWith('/_receiver/')
        ? control(req, res, url)
        : hook(req, res, url, portIndex);
      work.catch((err: Error) => {
        if (!res.headersSent) sendJson(res, 400, { message: err.message });
      });
    });
    return new Promise((resolve) =>
      server.listen(0, '127.0.0.1', () => {
        const a = server.address();
        resolve(typeof a === 'object' && a ? a.port : 0);
      }),
    );
  };
  const listenHang = (): Promise<number> => {
    const server = createNetServer((socket: Socket) => {
      stats.hang_connections++;
      socket.on('error', () => undefined);
      socket.resume(); // read and discard; never answer
    });
    return new Promise((resolve) =>
      server.listen(0, '127.0.0.1', () => {
        const a = server.address();
        resolve(typeof a === 'object' && a ? a.port : 0);
      }),
    );
  };

  const ports: number[] = [];
  for (let i = 0; i < portCount; i++) ports.push(await listenOn(i));
  const hangPorts: number[] = [];
  for (let i = 0; i < hangCount; i++) hangPorts.push(await listenHang());
  process.stdout.write(`${JSON.stringify({ ports, hang_ports: hangPorts })}\n`);
}

// ---------------------------------------------------------------------------------------------
// The client

/** Options of {@link startReceiver}. */
export interface ReceiverOptions {
  /** Answering ports. @default 1 */
  ports?: number;
  /** Ports that accept and never answer. @default 0 */
  hangPorts?: number;
  /** Deliveries kept at most. @default 1000000 */
  maxRecords?: number;
}

/** A running receiver process. */
export interface ReceiverProcess {
  child: Child;
  ports: number[];
  hangPorts: number[];
  /** `http://127.0.0.1:<ports[portIndex]>/hook/<key>`. */
  url(portIndex: number, key: string): string;
  /**
   * Tell it the API token of each key, so it can verify signatures.
   * @throws Error on a non-200 answer
   */
  setKeys(keys: Record<string, string>): Promise<void>;
  /** @throws Error on a non-200 answer or after 10 s */
  stats(): Promise<ReceiverStats>;
  /** Every recorded delivery (paged reads of `/_receiver/records`). */
  records(): Promise<RecordsPage>;
  /** SIGTERM, then SIGKILL after 5 s. */
  stop(): Promise<void>;
}

/**
 * Start the receiver process and wait for its ports (10 s at most).
 * @throws Error if it does not start; it is stopped first
 */
export async function startReceiver(o: ReceiverOptions = {}): Promise<ReceiverProcess> {
  const args = [
    RECEIVER,
    '--ports',
    String(o.ports ?? 1),
    '--hang-ports',
    String(o.hangPorts ?? 0),
  ];
  if (o.maxRecords) args.push('--max-records', String(o.maxRecords));
  const child = new Child(
    'receiver',
    spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] }),
  );
  let started: { ports: number[]; hang_ports: number[] };
  try {
    started = await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('receiver did not start')), 10_000);
      child.proc.stdout?.once('data', (d: Buffer) => {
        clearTimeout(timer);
        resolve(JSON.parse(d.toString()) as { ports: number[]; hang_ports: number[] });
      });
      void child.exit.then(() => reject(new Error(`receiver exited: ${child.stderr}`)));
    });
  } catch (err) {
    await child.stop();
    throw err;
  }
  const base = `http://127.0.0.1:${started.ports[0]}`;
  const get = async <T>(path: string): Promise<T> => {
    const res = await fetch(`${base}${path}`, { signal: AbortSignal.timeout(10_000) });
    if (res.status !== 200) throw new Error(`receiver ${path}: ${res.status}`);
    return (await res.json()) as T;
  };
  return {
    child,
    ports: started.ports,
    hangPorts: started.hang_ports,
    url: (portIndex, key) => `http://127.0.0.1:${started.ports[portIndex]}/hook/${key}`,
    setKeys: async (keys) => {
      const res = await fetch(`${base}/_receiver/keys`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ keys }),
        signal: AbortSignal.timeout(10_000),
      });
      if (res.status !== 200) throw new Error(`receiver keys: ${res.status}`);
    },
    stats: () => get<ReceiverStats>('/_receiver/stats'),
    records: async () => {
      const first = await get<RecordsPage>('/_receiver/records?from=0&limit=50000');
      while (first.at.length < first.total) {
        const p = await get<RecordsPage>(`/_receiver/records?from=${first.at.length}&limit=50000`);
        if (p.at.length === 0) break;
        for (const k of [
          'at',
          'monitor',
          'type',
          'port',
          'key',
          'parent',
          'webhook',
          'try',
          'sig',
          'verified_elsewhere',
        ] as const)
          (first[k] as unknown[]).push(...(p[k] as unknown[]));
      }
      return first;
    },
    stop: () => child.stop(5_000),
  };
}

/**
 * A port of 127.0.0.1 where nothing listens (bound, then closed): a dead receiver that
 * refuses connections.
 */
export async function closedPort(): Promise<number> {
  const server = createNetServer();
  const port = await new Promise<number>((resolve) =>
    server.listen(0, '127.0.0.1', () => {
      const a = server.address();
      resolve(typeof a === 'object' && a ? a.port : 0);
    }),
  );
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

/** Quantiles of a latency sample, ms. */
export interface LatencyFigures {
  count: number;
  p50_ms: number | null;
  p99_ms: number | null;
  max_ms: number | null;
}

/** p50 / p99 / max (exact, nearest rank) of `samples` (ms), rounded to 0.1 ms. */
export function latencyFigures(samples: number[]): LatencyFigures {
  if (samples.length === 0) return { count: 0, p50_ms: null, p99_ms: null, max_ms: null };
  const [p50, p99, max] = quantiles(samples, [0.5, 0.99, 1]);
  return {
    count: samples.length,
    p50_ms: round(p50 as number, 1),
    p99_ms: round(p99 as number, 1),
    max_ms: round(max as number, 1),
  };
}

/**
 * Markdown cell "p50 / p99 ms" of {@link LatencyFigures} ("p50 / p99 s" with `seconds`), "–"
 * when empty.
 */
export function latencyCell(l: LatencyFigures, seconds = false): string {
  if (l.count === 0) return '–';
  return seconds
    ? `${round((l.p50_ms ?? 0) / 1000, 1)} / ${round((l.p99_ms ?? 0) / 1000, 1)} s`
    : `${l.p50_ms} / ${l.p99_ms} ms`;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await receiverMain();
}
