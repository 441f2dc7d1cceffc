/**
 * The load-benchmark harness (issue 7): the pieces every load scenario is built from.
 *
 * - Processes: {@link Child} (a spawned process with the tail of its stderr), the target fleet
 *   ({@link startTargets}), `vigil coordinator` ({@link startCoordinator}), K `vigil probe`
 *   processes ({@link startProbes}, {@link waitProbes}).
 * - Setup through the public API: {@link createUser} (`vigil users create`),
 *   {@link createMonitors} (the bulk path `POST /webapi/monitors/bulk`, chunked and paced over
 *   one interval; falls back to `POST /webapi/monitors` + `PUT /webapi/checks/{id}` where the
 *   bulk route is missing), and {@link startLoad}, which does all of it for a scenario.
 * - Figures: {@link scrapeMetrics} + {@link histogram}/{@link histogramDelta}/
 *   {@link bucketQuantile} for /metrics, {@link cpuSeconds} and {@link peakRssKib} from /proc,
 *   {@link duBytes}, {@link quantiles} of raw samples, and {@link measureWindow}, the common
 *   "steady" window figures over a running load.
 * - Recording: {@link runnable} turns a {@link Scenario} into a registry entry of bench/run.ts
 *   that parses the arguments, runs it and records JSON under bench/results/ plus a row in
 *   bench/README.md ({@link addRow}).
 *
 * Everything talks to 127.0.0.0/8 only; every wait is bounded in time; every process started
 * through a {@link Load} is stopped by {@link Load.stop}, also on error.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { cpus, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs, promisify } from 'node:util';

/** Compiled CLI entry point (dist/src/main.js). */
export const MAIN = fileURLToPath(new URL('../src/main.js', import.meta.url));
/** Compiled target fleet (dist/bench/target.js). */
export const TARGET = fileURLToPath(new URL('./target.js', import.meta.url));
/** The source bench/ directory (README.md, results/). */
export const BENCH_DIR = fileURLToPath(new URL('../../bench/', import.meta.url));

const run = promisify(execFile);

/** Resolve after `ms` milliseconds. */
export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Round `x` to `digits` decimal places. */
export function round(x: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

/** Progress lines of a scenario. */
export type Log = (line: string) => void;

/** The default {@link Log}: stderr, so that stdout holds only the JSON record. */
export const stderrLog: Log = (line) => process.stderr.write(`${line}\n`);

// ---------------------------------------------------------------------------------------------
// Processes

/** A child process with the tail of its stderr (bounded to 8 KiB, for error messages). */
export class Child {
  stderr = '';
  exited = false;
  /** Resolves when the process has exited. */
  readonly exit: Promise<void>;
  constructor(
    readonly role: string,
    readonly proc: ChildProcess,
  ) {
    proc.stderr?.on('data', (c: Buffer) => {
      this.stderr = (this.stderr + c.toString()).slice(-8192);
    });
    this.exit = new Promise((r) =>
      proc.once('exit', () => {
        this.exited = true;
        r();
      }),
    );
  }
  /** OS process id (0 if the spawn failed). */
  get pid(): number {
    return this.proc.pid ?? 0;
  }
  /** Throw (with the stderr tail) if the process has exited. */
  assertAlive(): void {
    if (this.exited) throw new Error(`${this.role} exited: ${this.stderr}`);
  }
  /** Send `signal` and resolve on exit (SIGKILL: no grace). */
  async kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    if (this.exited) return;
    this.proc.kill(signal);
    await this.exit;
  }
  /** SIGTERM, then SIGKILL after `graceMs`; resolves on exit. */
  async stop(graceMs = 10_000): Promise<void> {
    if (this.exited) return;
    this.proc.kill('SIGTERM');
    const timer = setTimeout(() => this.proc.kill('SIGKILL'), graceMs);
    await this.exit;
    clearTimeout(timer);
  }
}

/** Environment of Vigil child processes: warn-level logs, private webhook receivers allowed. */
export function childEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return {
    ...process.env,
    VIGIL_LOG_LEVEL: 'warn',
    VIGIL_WEBHOOK_ALLOW_PRIVATE: '1',
    ...extra,
  };
}

/**
 * Poll `fn` every `everyMs` (default 200) until it returns a value other than undefined.
 * @throws Error after `ms` milliseconds, or whatever `fn` throws
 */
export async function waitFor<T>(
  what: string,
  fn: () => Promise<T | undefined>,
  ms: number,
  everyMs = 200,
): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > until) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(everyMs);
  }
}

/** A running target fleet (bench/target.ts). */
export interface TargetFleet {
  child: Child;
  /** Its ports on 127.0.0.1. */
  ports: number[];
  /** Its HTTPS ports on 127.0.0.1 (bench/target.ts `--tls-ports`; empty without). */
  tlsPorts: number[];
  /** `http://127.0.0.1:<port>/site/<i>`, the port chosen round-robin. */
  siteUrl(i: number): string;
  /**
   * Call its control API on the first port (see bench/target.ts): `method path` with an
   * optional JSON body; resolves to the parsed JSON answer.
   * @throws Error on a non-2xx answer
   */
  control(method: string, path: string, body?: unknown): Promise<unknown>;
}

/** Options of {@link startTargets}. */
export interface TargetOptions {
  /** Servers on this many ports. @default 4 */
  ports?: number;
  /** Delay before each answer, ms. @default 0 */
  latencyMs?: number;
  /** Share of sites (by a hash of the path) answered 503. @default 0 */
  failRatio?: number;
  /** More argv for bench/target.js (e.g. future TLS options). */
  extraArgs?: string[];
}

/**
 * Start the target fleet in its own process and wait for its ports.
 * @throws Error if it does not print its ports within 10 s or exits
 */
export async function startTargets(o: TargetOptions = {}): Promise<TargetFleet> {
  const args = [TARGET, '--ports', String(o.ports ?? 4)];
  if (o.latencyMs) args.push('--latency-ms', String(o.latencyMs));
  if (o.failRatio) args.push('--fail-ratio', String(o.failRatio));
  args.push(...(o.extraArgs ?? []));
  const child = new Child(
    'target',
    spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] }),
  );
  let ports: number[];
  let tlsPorts: number[];
  try {
    [ports, tlsPorts] = await new Promise<[number[], number[]]>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('target did not start')), 10_000);
      child.proc.stdout?.once('data', (d: Buffer) => {
        clearTimeout(timer);
        const o = JSON.parse(d.toString()) as { ports: number[]; tls_ports?: number[] };
        resolve([o.ports, o.tls_ports ?? []]);
      });
      void child.exit.then(() => reject(new Error(`target exited: ${child.stderr}`)));
    });
  } catch (err) {
    await child.stop();
    throw err;
  }
  return {
    child,
    ports,
    tlsPorts,
    siteUrl: (i) => `http://127.0.0.1:${ports[i % ports.length]}/site/${i}`,
    control: async (method, path, body) => {
      const res = await fetch(`http://127.0.0.1:${ports[0]}${path}`, {
        method,
        ...(body === undefined
          ? {}
          : { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }),
        signal: AbortSignal.timeout(10_000),
      });
      const text = await res.text();
      if (res.status < 200 || res.status > 299) throw new Error(`target ${path}: ${res.status}`);
      return text ? (JSON.parse(text) as unknown) : null;
    },
  };
}

/** Options of {@link startCoordinator}. */
export interface CoordinatorOptions {
  dataDir: string;
  /** Probe token. */
  token: string;
  /** 0 = any free port. @default 0 */
  httpPort?: number;
  /** 0 = any free port; reuse the old one on a restart so that probes reconnect. @default 0 */
  grpcPort?: number;
  /** Node flags before the script, e.g. `['--cpu-prof', '--cpu-prof-dir', dir]`. */
  nodeArgs?: string[];
  /** More environment for the process. */
  env?: Record<string, string>;
  /** /webapi requests per minute per token. @default 1000000 (the bench is not rate-limited) */
  rateLimit?: number;
  /** @default 'coordinator' */
  role?: string;
  /** How long to wait for endpoints.json, ms. @default 60000 */
  timeoutMs?: number;
}

/** A running coordinator. */
export interface RunningCoordinator {
  child: Child;
  http: number;
  grpc: number;
  /** Date.now() just before the spawn. */
  spawnedAt: number;
  /** Date.now() when its endpoints.json was seen (it listens on both ports). */
  listeningAt: number;
}

/**
 * Start `vigil coordinator` on `dataDir` and wait until it has written endpoints.json (a stale
 * one, e.g. after a SIGKILL, is removed first).
 * @throws Error if it exits or does not listen within `timeoutMs`
 */
export async function startCoordinator(o: CoordinatorOptions): Promise<RunningCoordinator> {
  await mkdir(o.dataDir, { recursive: true });
  const endpointsFile = join(o.dataDir, 'endpoints.json');
  await rm(endpointsFile, { force: true });
  const spawnedAt = Date.now();
  const child = new Child(
    o.role ?? 'coordinator',
    spawn(
      process.execPath,
      [
        ...(o.nodeArgs ?? []),
        MAIN,
        'coordinator',
        '--data-dir',
        o.dataDir,
        '--http-port',
        String(o.httpPort ?? 0),
        '--grpc-port',
        String(o.grpcPort ?? 0),
        '--grpc-host',
        '127.0.0.1',
        '--token',
        o.token,
        '--rate-limit',
        String(o.rateLimit ?? 1_000_000),
      ],
      { stdio: ['ignore', 'ignore', 'pipe'], env: childEnv(o.env) },
    ),
  );
  try {
    const endpoints = await waitFor(
      'the coordinator to write endpoints.json',
      async () => {
        child.assertAlive();
        try {
          return JSON.parse(await readFile(endpointsFile, 'utf8')) as {
            http: number;
            grpc: number;
          };
        } catch {
          return undefined;
        }
      },
      o.timeoutMs ?? 60_000,
      20,
    );
    return {
      child,
      http: endpoints.http,
      grpc: endpoints.grpc,
      spawnedAt,
      listeningAt: Date.now(),
    };
  } catch (err) {
    await child.stop();
    throw err;
  }
}

/** Options of {@link startProbes}. */
export interface ProbesOptions {
  /** The coordinator's gRPC port on 127.0.0.1. */
  grpc: number;
  token: string;
  /** Probe processes; probe i gets location `bench-i` and source address 127.0.0.(2+i). */
  count: number;
  env?: Record<string, string>;
  /** More argv for `vigil probe` (e.g. `['--capacity', '500']`). */
  extraArgs?: string[];
}

/** Start K `vigil probe` processes (roles `probe-0` …); does not wait for them to connect. */
export function startProbes(o: ProbesOptions): Child[] {
  if (o.count < 1 || o.count > 200) throw new Error('--locations must be 1..200');
  const out: Child[] = [];
  for (let i = 0; i < o.count; i++) {
    const args = [
      MAIN,
      'probe',
      '--coordinator',
      `127.0.0.1:${o.grpc}`,
      '--location',
      `bench-${i}`,
      '--local-address',
      `127.0.0.${2 + i}`,
      '--token',
      o.token,
      ...(o.extraArgs ?? []),
    ];
    out.push(
      new Child(
        `probe-${i}`,
        spawn(process.execPath, args, {
          stdio: ['ignore', 'ignore', 'pipe'],
          env: childEnv(o.env),
        }),
      ),
    );
  }
  return out;
}

/** Probes connected to the coordinator on `http` (sum of `vigil_probes_connected`). */
export async function probesConnected(http: number): Promise<number> {
  return sum(await scrapeMetrics(http), 'vigil_probes_connected');
}

/**
 * Wait until at least `count` probes are connected.
 * @throws Error if one of `probes` exits or after `ms` (default 30 s)
 */
export async function waitProbes(
  http: number,
  count: number,
  probes: Child[],
  ms = 30_000,
): Promise<void> {
  await waitFor(
    `${count} probes to connect`,
    async () => {
      for (const p of probes) p.assertAlive();
      return (await probesConnected(http)) >= count ? true : undefined;
    },
    ms,
  );
}

// ---------------------------------------------------------------------------------------------
// Users and monitors through the public API

/** A user created for a run. */
export interface BenchUser {
  id: number;
  email: string;
  apiToken: string;
}

/**
 * `vigil users create --data-dir dataDir --email … --plan business --api-enabled
 * [--webhook-url URL]` (works while the coordinator runs, through its operator route).
 * @throws Error if the command fails
 */
export async function createUser(
  dataDir: string,
  o: { email: string; plan?: 'free' | 'pro' | 'business'; webhookUrl?: string },
): Promise<BenchUser> {
  const args = [MAIN, 'users', 'create', '--data-dir', dataDir, '--email', o.email];
  args.push('--plan', o.plan ?? 'business', '--api-enabled');
  if (o.webhookUrl) args.push('--webhook-url', o.webhookUrl);
  const { stdout } = await run(process.execPath, args, { timeout: 60_000, env: childEnv() });
  const u = JSON.parse(stdout) as { id: number; email: string; api_token: string };
  return { id: u.id, email: u.email, apiToken: u.api_token };
}

/** Answer of {@link api}: status and parsed JSON body (null when empty). */
export interface ApiAnswer {
  status: number;
  json: unknown;
}

/**
 * One /webapi request with a Bearer token (JSON in and out, 60 s timeout).
 * @throws Error on a network error or timeout (never on a status)
 */
export async function api(
  http: number,
  token: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<ApiAnswer> {
  const res = await fetch(`http://127.0.0.1:${http}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      accept: 'application/json',
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    signal: AbortSignal.timeout(60_000),
  });
  const text = await res.text();
  let json: unknown = null;
  try {
    json = text ? (JSON.parse(text) as unknown) : null;
  } catch {
    json = text;
  }
  return { status: res.status, json };
}

/** mulberry32: a small seeded PRNG, values in [0, 1); the same seed gives the same sequence. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

/** Run `fn(i)` for i in [0, n) with at most `concurrency` at once; rejects on the first error. */
export async function forEachLimited(
  n: number,
  concurrency: number,
  fn: (i: number) => Promise<void>,
): Promise<void> {
  let next = 0;
  let failed = false;
  const worker = async (): Promise<void> => {
    while (next < n && !failed) {
      const i = next++;
      try {
        await fn(i);
      } catch (err) {
        failed = true;
        throw err;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, n) }, worker));
}

/** Options of {@link createMonitors}. */
export interface CreateMonitorsOptions {
  http: number;
  /** Owners: chunk k goes to user k mod users.length. */
  users: BenchUser[];
  count: number;
  /** The uptime check's interval, seconds (must be on the users' plan). */
  interval: number;
  /** URL of monitor i. */
  url: (i: number) => string;
  /** Spread the creations evenly over this many seconds (0 = as fast as possible). @default interval */
  paceS?: number;
  /** Monitors per request, 1..1000. @default about a tenth of a second's worth */
  chunk?: number;
  /** Requests in flight at most. @default 4 */
  concurrency?: number;
  /** Called before every request; throw to abort (e.g. `coordinator.assertAlive`). */
  alive?: () => void;
  log?: Log;
}

/** What {@link createMonitors} made, indexed by monitor number i (0 … count-1). */
export interface CreatedMonitors {
  monitorIds: Int32Array;
  /** Id of monitor i's uptime check. */
  checkIds: Int32Array;
  /** Index into `users` of monitor i's owner. */
  owner: Uint16Array;
  /** True if the bulk route was used, false if the single-monitor fallback was. */
  bulk: boolean;
  /** Seconds from the first request to the last answer. */
  seconds: number;
}

interface MonitorJson {
  id: number;
  checks: { id: number; name: string }[];
}

/**
 * Create `count` monitors through the public API, paced over `paceS` seconds: a new check runs
 * at once, so its phase is the moment it was created, and creating them evenly over one
 * interval spreads the load evenly (a burst would make every interval a burst). Uses
 * `POST /webapi/monitors/bulk` in chunks; if that route answers 404/405, falls back to
 * `POST /webapi/monitors` + `PUT /webapi/checks/{id} {"interval"}` per monitor (8 at a time).
 * Keeps only ids (typed arrays), so 100k+ monitors cost the harness a few hundred KiB.
 * @throws Error on any non-success answer, or when creation falls far behind the pace
 */
export async function createMonitors(o: CreateMonitorsOptions): Promise<CreatedMonitors> {
  const n = o.count;
  if (n < 1 || n > 1_000_000) throw new Error('--monitors must be 1..1000000');
  if (o.users.length === 0) throw new Error('createMonitors: no users');
  const paceMs = (o.paceS ?? o.interval) * 1000;
  const chunk = Math.max(
    1,
    Math.min(1000, o.chunk ?? Math.ceil(paceMs > 0 ? n / (paceMs / 100) : 1000)),
  );
  const chunks = Math.ceil(n / chunk);
  const out: CreatedMonitors = {
    monitorIds: new Int32Array(n),
    checkIds: new Int32Array(n),
    owner: new Uint16Array(n),
    bulk: true,
    seconds: 0,
  };
  const deadline = Date.now() + paceMs + Math.max(120_000, n * 50);
  const start = Date.now();
  let created = 0;
  let nextLog = 10_000;
  const record = (i: number, m: MonitorJson, user: number): number => {
    const uptime = m.checks.find((c) => c.name === 'uptime');
    if (!uptime) throw new Error(`monitor ${m.id} has no uptime check`);
    out.monitorIds[i] = m.id;
    out.checkIds[i] = uptime.id;
    out.owner[i] = user;
    return uptime.id;
  };
  const single = async (i: number, user: number): Promise<void> => {
    const token = (o.users[user] as BenchUser).apiToken;
    const res = await api(o.http, token, 'POST', '/webapi/monitors', {
      url: o.url(i),
      alias: `m${i}`,
    });
    if (res.status !== 201) throw new Error(`POST /webapi/monitors: ${res.status}`);
    const id = record(i, res.json as MonitorJson, user);
    const put = await api(o.http, token, 'PUT', `/webapi/checks/${id}`, { interval: o.interval });
    if (put.status !== 200)
      throw new Error(`PUT /webapi/checks/${id}: ${put.status} ${JSON.stringify(put.json)}`);
  };
  let probeBulk: Promise<void> | null = null;
  const doChunk = async (k: number): Promise<void> => {
    const from = k * chunk;
    const to = Math.min(n, from + chunk);
    const notBefore = start + (from / n) * paceMs;
    if (notBefore > Date.now()) await sleep(notBefore - Date.now());
    if (Date.now() > deadline) throw new Error(`monitor creation too slow (${created} of ${n})`);
    o.alive?.();
    const user = k % o.users.length;
    // The first chunk finds out whether the bulk route exists; the others wait for that.
    if (k > 0 && probeBulk) await probeBulk;
    if (out.bulk) {
      const items = [];
      for (let i = from; i < to; i++)
        items.push({ url: o.url(i), alias: `m${i}`, interval: o.interval });
      const res = await api(
        o.http,
        (o.users[user] as BenchUser).apiToken,
        'POST',
        '/webapi/monitors/bulk',
        {
          monitors: items,
        },
      );
      if ((res.status === 404 || res.status === 405) && k === 0) {
        out.bulk = false;
        o.log?.('bench: POST /webapi/monitors/bulk is missing; creating monitors one by one');
      } else if (res.status !== 201) {
        throw new Error(
          `POST /webapi/monitors/bulk: ${res.status} ${JSON.stringify(res.json).slice(0, 500)}`,
        );
      } else {
        const list = (res.json as { monitors: MonitorJson[] }).monitors;
        if (list.length !== to - from) throw new Error('bulk answer has the wrong length');
        list.forEach((m, j) => record(from + j, m, user));
      }
    }
    if (!out.bulk) await forEachLimited(to - from, 8, (j) => single(from + j, user));
    created += to - from;
    if (created >= nextLog) {
      o.log?.(`bench: ${created} monitors`);
      nextLog += 10_000;
    }
  };
  probeBulk = doChunk(0);
  await probeBulk;
  await forEachLimited(chunks - 1, o.concurrency ?? 4, (k) => doChunk(k + 1));
  out.seconds = (Date.now() - start) / 1000;
  return out;
}

// ---------------------------------------------------------------------------------------------
// A whole load: fleet, coordinator, probes, users, monitors

/** Options of {@link startLoad}. */
export interface LoadOptions {
  monitors: number;
  /** Seconds; on the business plan (30, 60, 120, 300, …). */
  interval: number;
  /** Probe processes, one location each. */
  locations: number;
  /** Split the monitors over this many users (by chunk). @default 1 */
  users?: number;
  /** Webhook URL of every user. */
  webhookUrl?: string;
  /** Target fleet options. */
  targets?: TargetOptions;
  /** URL of monitor i. @default the fleet's `/site/i` */
  url?: (i: number, fleet: TargetFleet) => string;
  /** Write V8 CPU profiles of the coordinator into this directory. */
  cpuProfDir?: string;
  coordinatorEnv?: Record<string, string>;
  probeEnv?: Record<string, string>;
  /** Wait one interval after creating the monitors (the load settles). @default true */
  settle?: boolean;
  log?: Log;
}

/** A running load; {@link Load.stop} stops everything it started and removes its temp dir. */
export interface Load {
  options: LoadOptions;
  dir: string;
  dataDir: string;
  /** Probe token. */
  token: string;
  fleet: TargetFleet;
  /** The current coordinator (a scenario may replace it, e.g. on a restart). */
  coordinator: RunningCoordinator;
  probes: Child[];
  users: BenchUser[];
  monitors: CreatedMonitors;
  /** Seconds from the start to the last monitor created (before settling). */
  setupS: number;
  /** Coordinator + probes, for CPU/RSS figures. */
  vigil(): Child[];
  /**
   * Start another coordinator on the same data dir and ports (after the old one is gone);
   * waits up to 300 s for it to listen.
   */
  restartCoordinator(): Promise<RunningCoordinator>;
  stop(): Promise<void>;
}

/**
 * Start a fleet, a coordinator (with `--cpu-prof` if asked), K probes, create users and
 * monitors paced over one interval, and (by default) let the load settle for one interval.
 * On error everything started is stopped before the error is rethrown.
 */
export async function startLoad(o: LoadOptions): Promise<Load> {
  const log = o.log ?? stderrLog;
  if (o.monitors < 1 || o.monitors > 1_000_000) throw new Error('--monitors must be 1..1000000');
  if (o.locations < 1 || o.locations > 200) throw new Error('--locations must be 1..200');
  const t0 = Date.now();
  const dir = await mkdtemp(join(tmpdir(), 'vigil-bench-'));
  const dataDir = join(dir, 'data');
  const token = `bench-${process.pid}-${Date.now()}`;
  const started: Child[] = [];
  let stopping: Promise<void> | null = null;
  const stopAll = async (): Promise<void> => {
    // Probes first, then coordinators (so a CPU profile is written on a clean exit), then
    // the fleet.
    const order = [
      ...started.filter((c) => c.role.startsWith('probe')),
      ...started.filter((c) => c.role.startsWith('coordinator')),
      ...started.filter((c) => !c.role.startsWith('probe') && !c.role.startsWith('coordinator')),
    ];
    for (const c of order) await c.stop().catch(() => undefined);
    await rm(dir, { recursive: true, force: true }).catch(() => undefined);
  };
  try {
    const fleet = await startTargets(o.targets);
    started.push(fleet.child);
    const nodeArgs: string[] = [];
    if (o.cpuProfDir) {
      await mkdir(o.cpuProfDir, { recursive: true });
      nodeArgs.push('--cpu-prof', '--cpu-prof-dir', o.cpuProfDir);
    }
    const coordOpts: CoordinatorOptions = {
      dataDir,
      token,
      nodeArgs,
      ...(o.coordinatorEnv ? { env: o.coordinatorEnv } : {}),
    };
    let coordinator = await startCoordinator(coordOpts);
    started.push(coordinator.child);
    const probes = startProbes({
      grpc: coordinator.grpc,
      token,
      count: o.locations,
      ...(o.probeEnv ? { env: o.probeEnv } : {}),
    });
    started.push(...probes);
    await waitProbes(coordinator.http, o.locations, probes);
    const users: BenchUser[] = [];
    for (let u = 0; u < (o.users ?? 1); u++)
      users.push(
        await createUser(dataDir, {
          email: `bench${u}@example.com`,
          ...(o.webhookUrl ? { webhookUrl: o.webhookUrl } : {}),
        }),
      );
    log(
      `bench: ${o.locations} probes connected; creating ${o.monitors} monitors over ${o.interval} s`,
    );
    const monitors = await createMonitors({
      http: coordinator.http,
      users,
      count: o.monitors,
      interval: o.interval,
      url: (i) => (o.url ? o.url(i, fleet) : fleet.siteUrl(i)),
      alive: () => {
        coordinator.child.assertAlive();
        for (const p of probes) p.assertAlive();
      },
      log,
    });
    const setupS = (Date.now() - t0) / 1000;
    log(
      `bench: ${o.monitors} monitors in ${setupS.toFixed(1)} s (${monitors.bulk ? 'bulk' : 'one by one'})`,
    );
    if (o.settle ?? true) {
      log(`bench: settling for ${o.interval} s`);
      await sleep(o.interval * 1000);
    }
    const load: Load = {
      options: o,
      dir,
      dataDir,
      token,
      fleet,
      coordinator,
      probes,
      users,
      monitors,
      setupS,
      vigil: () => [load.coordinator.child, ...probes],
      restartCoordinator: async () => {
        coordinator = await startCoordinator({
          ...coordOpts,
          httpPort: load.coordinator.http,
          grpcPort: load.coordinator.grpc,
          role: 'coordinator',
          // Loading a large store takes a while; the caller measures how long, so wait long.
          timeoutMs: 300_000,
        });
        started.push(coordinator.child);
        load.coordinator = coordinator;
        return coordinator;
      },
      stop: () => (stopping ??= stopAll()),
    };
    return load;
  } catch (err) {
    await stopAll();
    throw err;
  }
}

// ---------------------------------------------------------------------------------------------
// /proc and disk

let clockTicks = 0;
async function ticksPerSecond(): Promise<number> {
  if (clockTicks === 0) {
    try {
      clockTicks = Number((await run('getconf', ['CLK_TCK'])).stdout.trim()) || 100;
    } catch {
      clockTicks = 100;
    }
  }
  return clockTicks;
}

/** CPU seconds (utime + stime) of `pid` from /proc/<pid>/stat, or null if it is gone. */
export async function cpuSeconds(pid: number): Promise<number | null> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    // Fields after "(comm)": state is field 3, utime 14, stime 15.
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(rest[11]) + Number(rest[12])) / (await ticksPerSecond());
  } catch {
    return null;
  }
}

/** Peak RSS (VmHWM) of `pid` in KiB, or null if it is gone. */
export async function peakRssKib(pid: number): Promise<number | null> {
  try {
    const status = await readFile(`/proc/${pid}/status`, 'utf8');
    const m = /^VmHWM:\s+(\d+) kB/m.exec(status);
    return m ? Number(m[1]) : null;
  } catch {
    return null;
  }
}

/** `du -sb dir`: bytes on disk under `dir`. */
export async function duBytes(dir: string): Promise<number> {
  const { stdout } = await run('du', ['-sb', dir]);
  return Number(stdout.split(/\s/)[0]);
}

// ---------------------------------------------------------------------------------------------
// /metrics

/** One Prometheus sample: name, labels, value. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Parse the Prometheus text format (comments skipped). */
export function parseMetrics(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g))
      labels[l[1] as string] = l[2] as string;
    out.push({ name: m[1] as string, labels, value: Number(m[3]) });
  }
  return out;
}

/** A /metrics scrape: when (Date.now()) and the samples. */
export interface Scrape {
  at: number;
  samples: Sample[];
}

/**
 * GET /metrics of the coordinator on `http` and parse it.
 * @throws Error on a non-200 answer or after 10 s
 */
export async function scrapeMetrics(http: number): Promise<Scrape> {
  const res = await fetch(`http://127.0.0.1:${http}/metrics`, {
    signal: AbortSignal.timeout(10_000),
  });
  if (res.status !== 200) throw new Error(`GET /metrics: ${res.status}`);
  const text = await res.text();
  return { at: Date.now(), samples: parseMetrics(text) };
}

/** Sum of the samples called `name` whose labels include `match`. */
export function sum(s: Scrape, name: string, match: Record<string, string> = {}): number {
  let total = 0;
  for (const x of s.samples)
    if (x.name === name && Object.entries(match).every(([k, v]) => x.labels[k] === v))
      total += x.value;
  return total;
}

/** Sums of `name` by the value of `label`. */
export function sumBy(s: Scrape, name: string, label: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const x of s.samples)
    if (x.name === name) {
      const k = x.labels[label] ?? '?';
      out[k] = (out[k] ?? 0) + x.value;
    }
  return out;
}

/** A Prometheus histogram: cumulative counts by upper bound (seconds, last = Infinity). */
export interface Histogram {
  buckets: { le: number; count: number }[];
  count: number;
  sum: number;
}

/** The histogram `name` (e.g. `vigil_schedule_lag_seconds`), summed over label sets. */
export function histogram(s: Scrape, name: string): Histogram {
  const byLe = new Map<number, number>();
  for (const x of s.samples)
    if (x.name === `${name}_bucket` && x.labels.le !== undefined) {
      const le = x.labels.le === '+Inf' ? Infinity : Number(x.labels.le);
      byLe.set(le, (byLe.get(le) ?? 0) + x.value);
    }
  return {
    buckets: [...byLe].sort((a, b) => a[0] - b[0]).map(([le, count]) => ({ le, count })),
    count: sum(s, `${name}_count`),
    sum: sum(s, `${name}_sum`),
  };
}

/** `b − a`: the observations between two scrapes. */
export function histogramDelta(a: Histogram, b: Histogram): Histogram {
  const before = new Map(a.buckets.map((x) => [x.le, x.count]));
  return {
    buckets: b.buckets.map((x) => ({ le: x.le, count: x.count - (before.get(x.le) ?? 0) })),
    count: b.count - a.count,
    sum: b.sum - a.sum,
  };
}

/** A bucket bound in JSON: seconds, or "+Inf" beyond the last bucket, or null (no data). */
export type Bound = number | '+Inf' | null;

const bound = (le: number): Bound => (le === Infinity ? '+Inf' : le);

/** Upper bound of the smallest bucket holding the `q` quantile (0..1); null if empty. */
export function bucketQuantile(h: Histogram, q: number): Bound {
  if (h.count <= 0) return null;
  for (const b of h.buckets) if (b.count >= q * h.count) return bound(b.le);
  return '+Inf';
}

/** Upper bound of the highest non-empty bucket (the max is at most this); null if empty. */
export function maxBucket(h: Histogram): Bound {
  let out: Bound = null;
  let prev = 0;
  for (const b of h.buckets) {
    if (b.count > prev) out = bound(b.le);
    prev = b.count;
  }
  return out;
}

/** Share (0..1) of observations above the bucket bound `le`; null if empty or no such bound. */
export function shareAbove(h: Histogram, le: number): number | null {
  const b = h.buckets.find((x) => x.le === le);
  if (h.count <= 0 || !b) return null;
  return (h.count - b.count) / h.count;
}

/** Exact quantiles (0..1) of raw samples (nearest rank); NaN for an empty list. */
export function quantiles(xs: ArrayLike<number>, qs: number[]): number[] {
  const sorted = Float64Array.from(xs).sort();
  return qs.map((q) =>
    sorted.length === 0
      ? NaN
      : (sorted[
          Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))
        ] as number),
  );
}

// ---------------------------------------------------------------------------------------------
// The common window figures

/** CPU and memory of one process over a window. */
export interface ProcFigures {
  role: string;
  pid: number;
  /** CPU seconds (user + system) over the measured window. */
  cpu_s_window: number;
  /** CPU seconds since the process started. */
  cpu_s_total: number;
  /** Peak RSS (VmHWM, since the process started), MiB. */
  peak_rss_mib: number;
}

/** Figures of a load over a measured window (the `steady` figures of issue 7). */
export interface WindowFigures {
  monitors: number;
  interval_s: number;
  duration_s: number;
  locations: number;
  expected_checks_per_s: number;
  achieved_checks_per_s: number;
  achieved_ratio: number;
  /** `check:result` → runs in the window. */
  runs_by_result: Record<string, number>;
  /** Bucket upper bounds, seconds (buckets 5 ms … 30 s of `vigil_schedule_lag_seconds`). */
  schedule_lag_p50_s: Bound;
  schedule_lag_p99_s: Bound;
  /** The coordinator keeps only the histogram: the max is at most this bound. */
  schedule_lag_max_bucket_s: Bound;
  late_over_1s_share: number | null;
  scheduled_runs: number;
  /** `vigil_verification_latency_seconds` bucket bounds; null when nothing was verified. */
  verification_latency_p50_s: Bound;
  verification_latency_p99_s: Bound;
  verifications: number;
  processes: ProcFigures[];
  vigil_cpu_s_window: number;
  /** CPU ms of coordinator + probes per check run in the window. */
  cpu_ms_per_check: number | null;
  /** CPU seconds of the harness process itself (run.js) in the window. */
  harness_cpu_s_window: number;
  coordinator_rss_kib_per_monitor: number;
  store_bytes: number;
  store_bytes_per_monitor: number;
  /** Store growth in the window, per monitor, extrapolated to a day (noisy on short windows). */
  store_growth_bytes_per_monitor_per_day: number;
}

/**
 * Measure `load` over `durationS` seconds: /metrics at both ends (runs, schedule lag,
 * verification latency), /proc CPU of every Vigil process, peak RSS, store size. The harness
 * sleeps in between (no polling), so its own CPU in the window is ~0 unless `during` works.
 * `during`, if given, runs concurrently over the window (e.g. an API driver); its result is
 * returned alongside.
 * @throws Error if a Vigil process is gone at the end
 */
export async function measureWindow<T = undefined>(
  load: Load,
  durationS: number,
  during?: () => Promise<T>,
): Promise<{ window: WindowFigures; during: T | undefined }> {
  const vigil = load.vigil();
  const cpuAt = async (): Promise<Map<Child, number>> => {
    const m = new Map<Child, number>();
    for (const c of vigil) {
      const s = await cpuSeconds(c.pid);
      if (s === null) throw new Error(`${c.role} is gone: ${c.stderr}`);
      m.set(c, s);
    }
    return m;
  };
  const http = load.coordinator.http;
  const cpu0 = await cpuAt();
  const du0 = await duBytes(load.dataDir);
  const s0 = await scrapeMetrics(http);
  const self0 = process.cpuUsage();
  const [duringResult] = await Promise.all([during?.(), sleep(durationS * 1000)]);
  const self1 = process.cpuUsage(self0);
  const s1 = await scrapeMetrics(http);
  const cpu1 = await cpuAt();
  const du1 = await duBytes(load.dataDir);
  const windowS = (s1.at - s0.at) / 1000;

  const processes: ProcFigures[] = [];
  let vigilCpu = 0;
  for (const c of vigil) {
    const w = (cpu1.get(c) ?? 0) - (cpu0.get(c) ?? 0);
    vigilCpu += w;
    processes.push({
      role: c.role,
      pid: c.pid,
      cpu_s_window: round(w, 2),
      cpu_s_total: round(cpu1.get(c) ?? 0, 2),
      peak_rss_mib: round(((await peakRssKib(c.pid)) ?? 0) / 1024, 1),
    });
  }
  const runs0 = sumByKey(s0);
  const runsByResult: Record<string, number> = {};
  for (const [k, v] of Object.entries(sumByKey(s1))) {
    const d = v - (runs0[k] ?? 0);
    if (d !== 0) runsByResult[k] = d;
  }
  const totalRuns = Object.values(runsByResult).reduce((a, b) => a + b, 0);
  const uptimeRuns =
    sum(s1, 'vigil_check_runs_total', { check: 'uptime' }) -
    sum(s0, 'vigil_check_runs_total', { check: 'uptime' });
  const lag = histogramDelta(
    histogram(s0, 'vigil_schedule_lag_seconds'),
    histogram(s1, 'vigil_schedule_lag_seconds'),
  );
  const ver = histogramDelta(
    histogram(s0, 'vigil_verification_latency_seconds'),
    histogram(s1, 'vigil_verification_latency_seconds'),
  );
  const o = load.options;
  const expected = o.monitors / o.interval;
  const achieved = uptimeRuns / windowS;
  const coordRss = (await peakRssKib(load.coordinator.child.pid)) ?? 0;
  const lateShare = shareAbove(lag, 1);
  return {
    during: duringResult,
    window: {
      monitors: o.monitors,
      interval_s: o.interval,
      duration_s: round(windowS, 1),
      locations: o.locations,
      expected_checks_per_s: round(expected, 1),
      achieved_checks_per_s: round(achieved, 1),
      achieved_ratio: round(achieved / expected, 4),
      runs_by_result: runsByResult,
      schedule_lag_p50_s: bucketQuantile(lag, 0.5),
      schedule_lag_p99_s: bucketQuantile(lag, 0.99),
      schedule_lag_max_bucket_s: maxBucket(lag),
      late_over_1s_share: lateShare === null ? null : round(lateShare, 5),
      scheduled_runs: lag.count,
      verification_latency_p50_s: bucketQuantile(ver, 0.5),
      verification_latency_p99_s: bucketQuantile(ver, 0.99),
      verifications: ver.count,
      processes,
      vigil_cpu_s_window: round(vigilCpu, 2),
      cpu_ms_per_check: totalRuns > 0 ? round((vigilCpu * 1000) / totalRuns, 3) : null,
      harness_cpu_s_window: round((self1.user + self1.system) / 1e6, 2),
      coordinator_rss_kib_per_monitor: round(coordRss / o.monitors, 2),
      store_bytes: du1,
      store_bytes_per_monitor: round(du1 / o.monitors, 1),
      store_growth_bytes_per_monitor_per_day: round(
        ((du1 - du0) / o.monitors) * (86_400 / windowS),
        0,
      ),
    },
  };
}

function sumByKey(s: Scrape): Record<string, number> {
  const out: Record<string, number> = {};
  for (const x of s.samples)
    if (x.name === 'vigil_check_runs_total') {
      const k = `${x.labels.check ?? '?'}:${x.labels.result ?? '?'}`;
      out[k] = (out[k] ?? 0) + x.value;
    }
  return out;
}

/** Markdown cell of a bucket bound: "0.005 s", "+Inf", "–". */
export function boundCell(b: Bound): string {
  return b === null ? '–' : b === '+Inf' ? '> 30 s' : `${b} s`;
}

/** Markdown cell of a share (0..1) as a percentage with 3 decimals, "–" for null. */
export function percentCell(x: number | null): string {
  return x === null ? '–' : `${(x * 100).toFixed(3)} %`;
}

// ---------------------------------------------------------------------------------------------
// Arguments

/** A bad command line: run.ts prints the message and exits with 2. */
export class UsageError extends Error {}

/**
 * A positive integer argument, `dflt` when absent.
 * @throws UsageError when not a positive integer
 */
export function intArg(v: string | undefined, name: string, dflt: number): number {
  if (v === undefined) return dflt;
  const n = Number(v);
  if (!Number.isInteger(n) || n <= 0) throw new UsageError(`--${name} must be a positive integer`);
  return n;
}

/**
 * A non-negative number argument, `dflt` when absent.
 * @throws UsageError when not a finite number ≥ 0
 */
export function numArg(v: string | undefined, name: string, dflt: number): number {
  if (v === undefined) return dflt;
  const n = Number(v);
  if (!Number.isFinite(n) || n < 0) throw new UsageError(`--${name} must be a number ≥ 0`);
  return n;
}

/** The arguments every load scenario takes. */
export interface LoadArgs {
  monitors: number;
  interval: number;
  duration: number;
  locations: number;
  cpuProf: boolean;
}

/**
 * Parse `[--monitors N] [--interval S] [--duration S] [--locations K] [--cpu-prof]` plus the
 * scenario's own `extra` options (node:util parseArgs style, strict).
 * @returns the common arguments and the raw values of the extra ones
 * @throws UsageError on unknown options or bad values
 */
export function parseLoadArgs(
  args: string[],
  dflt: Omit<LoadArgs, 'cpuProf'>,
  extra: Record<string, { type: 'string' | 'boolean' }> = {},
): { load: LoadArgs; values: Record<string, string | boolean | undefined> } {
  let values: Record<string, string | boolean | undefined>;
  try {
    values = parseArgs({
      args,
      options: {
        monitors: { type: 'string' },
        interval: { type: 'string' },
        duration: { type: 'string' },
        locations: { type: 'string' },
        'cpu-prof': { type: 'boolean' },
        ...extra,
      },
    }).values as Record<string, string | boolean | undefined>;
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  const str = (k: string): string | undefined =>
    typeof values[k] === 'string' ? (values[k] as string) : undefined;
  return {
    load: {
      monitors: intArg(str('monitors'), 'monitors', dflt.monitors),
      interval: intArg(str('interval'), 'interval', dflt.interval),
      duration: intArg(str('duration'), 'duration', dflt.duration),
      locations: intArg(str('locations'), 'locations', dflt.locations),
      cpuProf: values['cpu-prof'] === true,
    },
    values,
  };
}

// ---------------------------------------------------------------------------------------------
// Recording and the scenario registry

/** "2 × AMD EPYC, 24 GiB, Node v20.20.2". */
export function machine(): string {
  const cpu = cpus()[0]?.model.trim() ?? 'unknown CPU';
  return `${cpus().length} × ${cpu}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}`;
}

/**
 * Add `row` to the markdown table of bench/README.md whose header line is `header` (after its
 * last row); if there is no such table, append one (header, separator, row) at the end.
 */
export async function addRow(header: string, row: string): Promise<void> {
  const path = `${BENCH_DIR}README.md`;
  const lines = (await readFile(path, 'utf8')).replace(/\n+$/, '').split('\n');
  const at = lines.indexOf(header);
  if (at < 0) {
    const sep = header.replace(/[^|]+/g, (cell) => ` ${'-'.repeat(Math.max(3, cell.length - 2))} `);
    lines.push('', header, sep, row);
  } else {
    let end = at + 1;
    while (end < lines.length && lines[end]?.startsWith('|')) end++;
    lines.splice(end, 0, row);
  }
  await writeFile(path, `${lines.join('\n')}\n`);
}

/** What a scenario gets besides its options. */
export interface RunContext {
  /** ISO date of the run. */
  date: string;
  /** The date usable in file names. */
  stamp: string;
  /** bench/results/ (source tree). */
  resultsDir: string;
  log: Log;
}

/** The record a run writes as JSON (bench/results/<scenario>-<stamp>.json). */
export interface RunRecord<F, O = unknown> {
  scenario: string;
  date: string;
  commit: string;
  machine: string;
  options: O;
  figures: F;
}

/**
 * A scenario of `npm run bench -- <name> …`: parse its arguments, run, and describe its row.
 * O = parsed options, F = figures (plain JSON).
 */
export interface Scenario<O, F> {
  name: string;
  /** One line: the arguments, e.g. `[--monitors N] [--interval S]`. */
  usage: string;
  /** @throws UsageError on bad arguments */
  parse(args: string[], ctx: RunContext): O;
  run(o: O, ctx: RunContext): Promise<F>;
  /** Header line of its table in bench/README.md; null = figures are not recorded. */
  header: string | null;
  /** The markdown row (same columns as `header`). */
  row(r: RunRecord<F, O>): string;
}

/** A registry entry of bench/run.ts (a scenario with its types erased). */
export interface RegistryEntry {
  name: string;
  usage: string;
  /** Parse, run, print the JSON record on stdout and record it (JSON + README row). */
  main(args: string[]): Promise<void>;
}

/** Turn a scenario into a registry entry of bench/run.ts. */
export function runnable<O, F>(s: Scenario<O, F>): RegistryEntry {
  return {
    name: s.name,
    usage: s.usage,
    main: async (args) => {
      const date = new Date().toISOString();
      const ctx: RunContext = {
        date,
        stamp: date.replace(/[:.]/g, '-'),
        resultsDir: `${BENCH_DIR}results`,
        log: stderrLog,
      };
      const options = s.parse(args, ctx);
      const figures = await s.run(options, ctx);
      const record: RunRecord<F, O> = {
        scenario: s.name,
        date,
        commit: await headCommit(),
        machine: machine(),
        options,
        figures,
      };
      process.stdout.write(`${JSON.stringify(record, null, 2)}\n`);
      if (s.header === null) return;
      await mkdir(ctx.resultsDir, { recursive: true });
      await writeFile(
        `${ctx.resultsDir}/${s.name}-${ctx.stamp}.json`,
        JSON.stringify(record, null, 2),
      );
      await addRow(s.header, s.row(record));
    },
  };
}

/** Short hash of HEAD (git rev-parse), or "unknown". */
export async function headCommit(): Promise<string> {
  try {
    return (await run('git', ['rev-parse', '--short', 'HEAD'], { cwd: BENCH_DIR })).stdout.trim();
  } catch {
    return 'unknown';
  }
}
