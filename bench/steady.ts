/**
 * The `steady` load scenario (issue 7): every site up, N monitors at one interval, Vigil run
 * as a user runs it. Starts, as separate processes, a target fleet (bench/target.js on several
 * ports, one distinct path per monitor), `vigil coordinator` on a temp data dir and K
 * `vigil probe` processes (each with its own 127.0.0.(2+i) source address and location);
 * creates one business user and N monitors through the public API (paced over one interval, so
 * that the checks' phases are spread evenly), sets each uptime check's interval, lets the load
 * settle for one interval and measures over `duration` seconds from
 * /metrics and /proc. Everything talks to 127.0.0.0/8 only; every wait is bounded in time;
 * every process it started is stopped, also on error.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const MAIN = fileURLToPath(new URL('../src/main.js', import.meta.url));
const TARGET = fileURLToPath(new URL('./target.js', import.meta.url));
const run = promisify(execFile);
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export interface SteadyOptions {
  monitors: number;
  /** Seconds; one of the intervals the business plan allows (30, 60, 120, 300, …). */
  interval: number;
  /** Measured window, seconds. */
  duration: number;
  /** Probe processes, one location each. */
  locations: number;
  /** Target fleet ports. @default 4 */
  targetPorts?: number;
  /** Write a V8 CPU profile of the coordinator into this directory. */
  cpuProfDir?: string;
  /** Progress lines go here. */
  log?: (line: string) => void;
}

export interface ProcFigures {
  role: string;
  pid: number;
  /** CPU seconds (user + system) over the measured window. */
  cpu_s_window: number;
  /** CPU seconds since the process started. */
  cpu_s_total: number;
  /** Peak RSS (VmHWM), MiB. */
  peak_rss_mib: number;
}

export interface SteadyFigures {
  monitors: number;
  interval_s: number;
  duration_s: number;
  locations: number;
  setup_s: number;
  expected_checks_per_s: number;
  achieved_checks_per_s: number;
  achieved_ratio: number;
  runs_by_result: Record<string, number>;
  /** Bucket upper bounds, seconds ("+Inf" when beyond the last bucket). */
  schedule_lag_p50_s: number | string | null;
  schedule_lag_p99_s: number | string | null;
  schedule_lag_max_bucket_s: number | string | null;
  late_over_1s_share: number | null;
  scheduled_runs: number;
  processes: ProcFigures[];
  vigil_cpu_s_window: number;
  cpu_ms_per_check: number | null;
  coordinator_rss_kib_per_monitor: number;
  store_bytes: number;
  store_bytes_per_monitor: number;
  store_growth_bytes_per_monitor_per_day: number;
  cpu_profile_dir?: string;
}

/** A child process with the tail of its stderr (bounded, for error messages). */
class Child {
  stderr = '';
  exited = false;
  constructor(
    readonly role: string,
    readonly proc: ChildProcess,
  ) {
    proc.stderr?.on('data', (c: Buffer) => {
      this.stderr = (this.stderr + c.toString()).slice(-8192);
    });
    proc.once('exit', () => (this.exited = true));
  }
  get pid(): number {
    return this.proc.pid ?? 0;
  }
  /** SIGTERM, then SIGKILL after `graceMs`; resolves on exit. */
  async stop(graceMs = 10_000): Promise<void> {
    const p = this.proc;
    if (this.exited || p.exitCode !== null || p.signalCode !== null) return;
    const exited = new Promise<void>((r) => p.once('exit', () => r()));
    p.kill('SIGTERM');
    const timer = setTimeout(() => p.kill('SIGKILL'), graceMs);
    await exited;
    clearTimeout(timer);
  }
}

const childEnv = (): NodeJS.ProcessEnv => ({
  ...process.env,
  VIGIL_LOG_LEVEL: 'warn',
  VIGIL_WEBHOOK_ALLOW_PRIVATE: '1',
});

/** Poll `fn` every 200 ms until it returns a value, or throw after `ms`. */
async function waitFor<T>(what: string, fn: () => Promise<T | undefined>, ms: number): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > until) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(200);
  }
}

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
async function cpuSeconds(pid: number): Promise<number | null> {
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
async function peakRssKib(pid: number): Promise<number | null> {
  try {
    const status = await readFile(`/proc/${pid}/status`, 'utf8');
    const m = /^VmHWM:\s+(\d+) kB/m.exec(status);
    return m ? Number(m[1]) : null;
  } catch {
    return null;
  }
}

async function duBytes(dir: string): Promise<number> {
  const { stdout } = await run('du', ['-sb', dir]);
  return Number(stdout.split(/\s/)[0]);
}

/** One Prometheus sample: name, labels, value. */
interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

function parseMetrics(text: string): Sample[] {
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

interface Scrape {
  at: number;
  runsByResult: Record<string, number>;
  uptimeRuns: number;
  /** le → cumulative count */
  lagBuckets: Map<string, number>;
  lagCount: number;
}

async function scrape(http: number): Promise<Scrape> {
  const res = await fetch(`http://127.0.0.1:${http}/metrics`, {
    signal: AbortSignal.timeout(10_000),
  });
  if (res.status !== 200) throw new Error(`GET /metrics: ${res.status}`);
  const samples = parseMetrics(await res.text());
  const s: Scrape = {
    at: Date.now(),
    runsByResult: {},
    uptimeRuns: 0,
    lagBuckets: new Map(),
    lagCount: 0,
  };
  for (const x of samples) {
    if (x.name === 'vigil_check_runs_total') {
      const key = `${x.labels.check ?? '?'}:${x.labels.result ?? '?'}`;
      s.runsByResult[key] = (s.runsByResult[key] ?? 0) + x.value;
      if (x.labels.check === 'uptime') s.uptimeRuns += x.value;
    } else if (x.name === 'vigil_schedule_lag_seconds_bucket' && x.labels.le !== undefined) {
      s.lagBuckets.set(x.labels.le, x.value);
    } else if (x.name === 'vigil_schedule_lag_seconds_count') {
      s.lagCount = x.value;
    }
  }
  return s;
}

/** Smallest bucket bound whose cumulative delta reaches `q` of the total. */
function quantileBound(buckets: [string, number][], total: number, q: number): number | string {
  for (const [le, n] of buckets) if (n >= q * total) return le === '+Inf' ? '+Inf' : Number(le);
  return '+Inf';
}

async function probesConnected(http: number): Promise<number> {
  const res = await fetch(`http://127.0.0.1:${http}/metrics`, {
    signal: AbortSignal.timeout(10_000),
  });
  let n = 0;
  for (const x of parseMetrics(await res.text()))
    if (x.name === 'vigil_probes_connected') n += x.value;
  return n;
}

async function api(
  http: number,
  token: string,
  method: string,
  path: string,
  body: unknown,
): Promise<{ status: number; json: unknown }> {
  const res = await fetch(`http://127.0.0.1:${http}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      accept: 'application/json',
      'content-type': 'application/json',
    },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(30_000),
  });
  const text = await res.text();
  return { status: res.status, json: text ? (JSON.parse(text) as unknown) : null };
}

/** Run `fn(i)` for i in [0, n) with at most `concurrency` at once; rejects on the first error. */
async function forEachLimited(
  n: number,
  concurrency: number,
  fn: (i: number) => Promise<void>,
): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < n) {
      const i = next++;
      await fn(i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, n) }, worker));
}

export async function benchSteady(o: SteadyOptions): Promise<SteadyFigures> {
  const log = o.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  if (o.locations < 1 || o.locations > 200) throw new Error('--locations must be 1..200');
  if (o.monitors < 1 || o.monitors > 1_000_000) throw new Error('--monitors must be 1..1000000');
  const children: Child[] = [];
  const dir = await mkdtemp(join(tmpdir(), 'vigil-bench-steady-'));
  const dataDir = join(dir, 'data');
  const t0 = Date.now();
  try {
    // Target fleet.
    const target = new Child(
      'target',
      spawn(process.execPath, [TARGET, '--ports', String(o.targetPorts ?? 4)], {
        stdio: ['ignore', 'pipe', 'pipe'],
      }),
    );
    children.push(target);
    const ports = await new Promise<number[]>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('target did not start')), 10_000);
      target.proc.stdout?.once('data', (d: Buffer) => {
        clearTimeout(timer);
        resolve((JSON.parse(d.toString()) as { ports: number[] }).ports);
      });
      target.proc.once('exit', () => reject(new Error(`target exited: ${target.stderr}`)));
    });

    // Coordinator.
    await mkdir(dataDir, { recursive: true });
    const token = `bench-${process.pid}-${Date.now()}`;
    const nodeArgs: string[] = [];
    if (o.cpuProfDir) {
      await mkdir(o.cpuProfDir, { recursive: true });
      nodeArgs.push('--cpu-prof', '--cpu-prof-dir', o.cpuProfDir);
    }
    const coordinator = new Child(
      'coordinator',
      spawn(
        process.execPath,
        [
          ...nodeArgs,
          MAIN,
          'coordinator',
          '--data-dir',
          dataDir,
          '--http-port',
          '0',
          '--grpc-port',
          '0',
          '--grpc-host',
          '127.0.0.1',
          '--token',
          token,
          '--rate-limit',
          '1000000',
        ],
        { stdio: ['ignore', 'ignore', 'pipe'], env: childEnv() },
      ),
    );
    children.push(coordinator);
    const endpoints = await waitFor(
      'the coordinator to write endpoints.json',
      async () => {
        if (coordinator.exited) throw new Error(`coordinator exited: ${coordinator.stderr}`);
        try {
          return JSON.parse(await readFile(join(dataDir, 'endpoints.json'), 'utf8')) as {
            http: number;
            grpc: number;
          };
        } catch {
          return undefined;
        }
      },
      30_000,
    );
    const http = endpoints.http;

    // Probes.
    const probes: Child[] = [];
    for (let i = 0; i < o.locations; i++) {
      const probe = new Child(
        `probe-${i}`,
        spawn(
          process.execPath,
          [
            MAIN,
            'probe',
            '--coordinator',
            `127.0.0.1:${endpoints.grpc}`,
            '--location',
            `bench-${i}`,
            '--local-address',
            `127.0.0.${2 + i}`,
            '--token',
            token,
          ],
          { stdio: ['ignore', 'ignore', 'pipe'], env: childEnv() },
        ),
      );
      children.push(probe);
      probes.push(probe);
    }
    await waitFor(
      `${o.locations} probes to connect`,
      async () => {
        for (const p of probes) if (p.exited) throw new Error(`${p.role} exited: ${p.stderr}`);
        return (await probesConnected(http)) >= o.locations ? true : undefined;
      },
      30_000,
    );
    log(`steady: ${o.locations} probes connected; creating ${o.monitors} monitors`);

    // User and monitors through the public API.
    const { stdout } = await run(
      process.execPath,
      [
        MAIN,
        'users',
        'create',
        '--data-dir',
        dataDir,
        '--email',
        'bench@example.com',
        '--plan',
        'business',
        '--api-enabled',
      ],
      { timeout: 30_000, env: childEnv() },
    );
    const apiToken = String((JSON.parse(stdout) as { api_token: string }).api_token);
    const createDeadline = Date.now() + o.interval * 1000 + Math.max(120_000, o.monitors * 50);
    let created = 0;
    // A new check runs at once and the PUT puts its next run one interval later, so a check's
    // phase is the moment it was created. Creating monitor i no earlier than i/N of an
    // interval after the first spreads the runs evenly (as users adding monitors over time
    // would); creating them all in a burst would make the load a burst every interval.
    const paceStart = Date.now();
    await forEachLimited(o.monitors, 8, async (i) => {
      const notBefore = paceStart + (i * o.interval * 1000) / o.monitors;
      if (notBefore > Date.now()) await sleep(notBefore - Date.now());
      if (Date.now() > createDeadline) throw new Error(`monitor creation too slow (${created})`);
      if (coordinator.exited) throw new Error(`coordinator exited: ${coordinator.stderr}`);
      const url = `http://127.0.0.1:${ports[i % ports.length]}/site/${i}`;
      const res = await api(http, apiToken, 'POST', '/webapi/monitors', { url, alias: `m${i}` });
      if (res.status !== 201) throw new Error(`POST /webapi/monitors: ${res.status}`);
      const monitor = res.json as { checks: { id: number; name: string }[] };
      const uptime = monitor.checks.find((c) => c.name === 'uptime');
      if (!uptime) throw new Error('a new monitor has no uptime check');
      const put = await api(http, apiToken, 'PUT', `/webapi/checks/${uptime.id}`, {
        interval: o.interval,
      });
      if (put.status !== 200)
        throw new Error(
          `PUT /webapi/checks/${uptime.id}: ${put.status} ${JSON.stringify(put.json)}`,
        );
      created++;
      if (created % 10_000 === 0) log(`steady: ${created} monitors`);
    });
    const setupS = (Date.now() - t0) / 1000;
    log(`steady: ${created} monitors in ${setupS.toFixed(1)} s; settling for ${o.interval} s`);
    await sleep(o.interval * 1000);

    // Measure.
    const vigil = children.filter((c) => c.role !== 'target');
    const cpuAt = async (): Promise<Map<string, number>> => {
      const m = new Map<string, number>();
      for (const c of vigil) {
        const s = await cpuSeconds(c.pid);
        if (s === null) throw new Error(`${c.role} is gone: ${c.stderr}`);
        m.set(c.role, s);
      }
      return m;
    };
    const cpu0 = await cpuAt();
    const du0 = await duBytes(dataDir);
    const s0 = await scrape(http);
    log(`steady: measuring for ${o.duration} s`);
    await sleep(o.duration * 1000);
    const s1 = await scrape(http);
    const cpu1 = await cpuAt();
    const du1 = await duBytes(dataDir);
    const windowS = (s1.at - s0.at) / 1000;

    const processes: ProcFigures[] = [];
    let vigilCpu = 0;
    for (const c of vigil) {
      const w = (cpu1.get(c.role) ?? 0) - (cpu0.get(c.role) ?? 0);
      vigilCpu += w;
      processes.push({
        role: c.role,
        pid: c.pid,
        cpu_s_window: round(w, 2),
        cpu_s_total: round(cpu1.get(c.role) ?? 0, 2),
        peak_rss_mib: round(((await peakRssKib(c.pid)) ?? 0) / 1024, 1),
      });
    }
    const runsByResult: Record<string, number> = {};
    for (const [k, v] of Object.entries(s1.runsByResult)) {
      const d = v - (s0.runsByResult[k] ?? 0);
      if (d !== 0) runsByResult[k] = d;
    }
    const totalRuns = Object.values(runsByResult).reduce((a, b) => a + b, 0);
    const uptimeRuns = s1.uptimeRuns - s0.uptimeRuns;
    const lagTotal = s1.lagCount - s0.lagCount;
    const lagDelta: [string, number][] = [...s1.lagBuckets].map(([le, n]) => [
      le,
      n - (s0.lagBuckets.get(le) ?? 0),
    ]);
    const under1 = lagDelta.find(([le]) => le === '1')?.[1];
    let maxBucket: number | string | null = null;
    for (let i = 0; i < lagDelta.length; i++) {
      const prev = i === 0 ? 0 : (lagDelta[i - 1]?.[1] ?? 0);
      const [le, n] = lagDelta[i] as [string, number];
      if (n > prev) maxBucket = le === '+Inf' ? '+Inf' : Number(le);
    }
    const expected = o.monitors / o.interval;
    const achieved = uptimeRuns / windowS;
    const coordRss = (await peakRssKib(coordinator.pid)) ?? 0;
    return {
      monitors: o.monitors,
      interval_s: o.interval,
      duration_s: round(windowS, 1),
      locations: o.locations,
      setup_s: round(setupS, 1),
      expected_checks_per_s: round(expected, 1),
      achieved_checks_per_s: round(achieved, 1),
      achieved_ratio: round(achieved / expected, 4),
      runs_by_result: runsByResult,
      schedule_lag_p50_s: lagTotal > 0 ? quantileBound(lagDelta, lagTotal, 0.5) : null,
      schedule_lag_p99_s: lagTotal > 0 ? quantileBound(lagDelta, lagTotal, 0.99) : null,
      schedule_lag_max_bucket_s: maxBucket,
      late_over_1s_share:
        lagTotal > 0 && under1 !== undefined ? round((lagTotal - under1) / lagTotal, 5) : null,
      scheduled_runs: lagTotal,
      processes,
      vigil_cpu_s_window: round(vigilCpu, 2),
      cpu_ms_per_check: totalRuns > 0 ? round((vigilCpu * 1000) / totalRuns, 3) : null,
      coordinator_rss_kib_per_monitor: round(coordRss / o.monitors, 2),
      store_bytes: du1,
      store_bytes_per_monitor: round(du1 / o.monitors, 1),
      store_growth_bytes_per_monitor_per_day: round(
        ((du1 - du0) / o.monitors) * (86_400 / windowS),
        0,
      ),
      ...(o.cpuProfDir ? { cpu_profile_dir: o.cpuProfDir } : {}),
    };
  } finally {
    // Probes first, then the coordinator (so its profile is written on a clean exit), then
    // the target fleet.
    const order = [
      ...children.filter((c) => c.role.startsWith('probe')),
      ...children.filter((c) => c.role === 'coordinator'),
      ...children.filter((c) => c.role === 'target'),
    ];
    for (const c of order) await c.stop().catch(() => undefined);
    await rm(dir, { recursive: true, force: true }).catch(() => undefined);
  }
}

function round(x: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}
