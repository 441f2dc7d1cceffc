/**
 * The `peer` side of issue 7: Debian's prometheus-blackbox-exporter probing the same target
 * fleet as Vigil, driven at its maximum rate, so the two are measured side by side on one box.
 *
 * driveBlackbox() finds the exporter (installing it from Debian when missing and running as
 * root), writes a module equivalent to Vigil's uptime check, starts the exporter on a free
 * port of 127.0.0.1, and keeps `concurrency` `GET /probe` requests in flight for the given
 * time, rotating over the targets, through one keep-alive undici Pool (so the driver stays
 * cheap). It reads the exporter's CPU seconds and peak RSS from /proc. Targets must be on
 * 127.0.0.0/8; every wait is bounded; the exporter is stopped at the end, also on error.
 *
 * Standalone: `npm run build && node dist/bench/blackbox.js [--duration S] [--concurrency N]
 * [--sites N]` starts its own target fleet (bench/target.js, 4 ports) and prints the figures.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { access, constants, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { Pool } from 'undici';

/** What one drive of the exporter measured. */
export interface BlackboxFigures {
  /** The exporter's version, e.g. `0.23.0`. */
  version: string;
  /** Probes answered in the measured window (`probe_success` 0 or 1, or a failed request). */
  probes: number;
  /** Probes per second over the measured window. */
  probes_per_s: number;
  /** Share of probes with `probe_success 1`, 0–1. */
  ok_share: number;
  /** The exporter's CPU seconds (utime + stime) over the measured window. */
  cpu_s: number;
  /** The exporter's CPU ms per probe. */
  cpu_ms_per_probe: number;
  /** The exporter's peak RSS (VmHWM), MiB, since it started (includes the warm-up). */
  peak_rss_mib: number;
  /** Cores the exporter kept busy: cpu_s / window seconds. */
  cores_used: number;
}

/** Options of driveBlackbox. */
export interface BlackboxOptions {
  /**
   * Absolute `http://` or `https://` URLs on 127.0.0.0/8 (IPv4 literal hosts), probed in turn.
   * Anything else is refused.
   */
  targets: string[];
  /** Length of the measured window, seconds (after a 1 s warm-up). 1–3600. */
  durationS: number;
  /**
   * `GET /probe` requests kept in flight, 1–1024. @default DEFAULT_CONCURRENCY (32; on the
   * 2-core dev box against a fleet without latency 16 and 32 gave the most probes/s, 64 and
   * more fewer: bench/README.md "peer"). A fleet with latency needs about rate × latency.
   */
  concurrency?: number;
  /** Progress lines. @default write to stderr */
  log?: (line: string) => void;
}

/** Debian's package and binary name. */
const PACKAGE = 'prometheus-blackbox-exporter';
const INSTALL_COMMAND = `apt-get install -y --no-install-recommends ${PACKAGE}`;
const MODULE = 'vigil_uptime';
/** Requests in flight when the caller does not say; see BlackboxOptions.concurrency. */
export const DEFAULT_CONCURRENCY = 32;
/** Vigil's uptime budget (CONTRACT §5), as the module timeout. */
const PROBE_TIMEOUT_S = 30;
const WARMUP_MS = 1_000;
/** Past the end of the window, the longest we wait for requests still in flight, ms. */
const DRAIN_MS = (PROBE_TIMEOUT_S + 10) * 1000;
const START_TIMEOUT_MS = 10_000;
const APT_TIMEOUT_MS = 5 * 60_000;

/**
 * The module: Vigil's uptime check as blackbox can say it. GET, follow redirects (blackbox
 * stops after 10, Vigil after 5), IPv4 only, 30 s budget. Valid status: blackbox's default,
 * 2xx (Vigil's is 200–399 after redirects; the bench fleet answers only 200 or 503, so the
 * verdicts agree). HTTP/1.1 like Vigil's undici. Each probe builds a new HTTP client in
 * blackbox (prober/http.go: NewClientFromConfig per probe), so every probe opens a fresh
 * connection, as Vigil's checks do.
 */
const CONFIG = `modules:
  ${MODULE}:
    prober: http
    timeout: ${PROBE_TIMEOUT_S}s
    http:
      method: GET
      valid_status_codes: []
      follow_redirects: true
      enable_http2: false
      preferred_ip_protocol: ip4
      ip_protocol_fallback: false
`;

/** Result of a child command: exit code (null on signal/timeout), stdout, stderr. */
interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(cmd: string, args: string[], timeoutMs: number): Promise<Ran> {
  return new Promise((resolve) => {
    execFile(
      cmd,
      args,
      {
        timeout: timeoutMs,
        maxBuffer: 16 * 2 ** 20,
        env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
      },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : null) : 0;
        resolve({ code, stdout: String(stdout), stderr: String(stderr) });
      },
    );
  });
}

async function executable(path: string): Promise<boolean> {
  try {
    await access(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

async function findBinary(): Promise<string | null> {
  const dirs = [...(process.env.PATH ?? '').split(delimiter), '/usr/bin', '/usr/local/bin'];
  for (const dir of dirs) {
    if (dir && (await executable(join(dir, PACKAGE)))) return join(dir, PACKAGE);
  }
  return null;
}

/**
 * Path of the exporter binary; installs the Debian package when it is missing and this
 * process is root (`apt-get update` first only if the install fails).
 * @throws Error naming the command to run when it is missing and cannot be installed here.
 */
export async function locateBlackbox(log: (line: string) => void): Promise<string> {
  const found = await findBinary();
  if (found) return found;
  if (process.getuid?.() !== 0) {
    throw new Error(`${PACKAGE} is not installed; install it with: sudo ${INSTALL_COMMAND}`);
  }
  log(`bench peer: ${PACKAGE} missing, running ${INSTALL_COMMAND}`);
  const args = ['install', '-y', '--no-install-recommends', PACKAGE];
  let r = await run('apt-get', args, APT_TIMEOUT_MS);
  if (r.code !== 0) {
    log('bench peer: install failed, running apt-get update and trying again');
    await run('apt-get', ['update'], APT_TIMEOUT_MS);
    r = await run('apt-get', args, APT_TIMEOUT_MS);
  }
  const path = await findBinary();
  if (r.code !== 0 || !path) {
    const tail = r.stderr.trim().split('\n').slice(-3).join(' | ');
    throw new Error(`could not install ${PACKAGE} (${tail}); run: ${INSTALL_COMMAND}`);
  }
  return path;
}

/** The `x.y.z` the binary reports (kingpin prints `--version` on stderr). */
async function versionOf(bin: string): Promise<string> {
  const r = await run(bin, ['--version'], 10_000);
  return /version (\S+)/.exec(`${r.stdout}\n${r.stderr}`)?.[1] ?? 'unknown';
}

/**
 * Refuse any target that is not an http(s) URL with an IPv4 literal host in 127.0.0.0/8.
 * @throws Error naming the first bad target.
 */
function checkTargets(targets: string[]): void {
  if (targets.length === 0) throw new Error('driveBlackbox: no targets');
  for (const t of targets) {
    let url: URL;
    try {
      url = new URL(t);
    } catch {
      throw new Error(`driveBlackbox: not a URL: ${t}`);
    }
    const octets = /^127\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(url.hostname);
    const loopback = octets !== null && octets.slice(1).every((o) => Number(o) <= 255);
    if ((url.protocol !== 'http:' && url.protocol !== 'https:') || !loopback) {
      throw new Error(`driveBlackbox: only http(s) targets on 127.0.0.0/8, refused: ${t}`);
    }
  }
}

/** A free TCP port on 127.0.0.1 (bound then released; the caller retries if it is taken). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      const port = typeof a === 'object' && a ? a.port : 0;
      s.close(() => resolve(port));
    });
  });
}

let clockTicks = 0;
async function ticksPerSecond(): Promise<number> {
  if (clockTicks === 0) {
    const r = await run('getconf', ['CLK_TCK'], 5_000);
    clockTicks = Number(r.stdout.trim()) || 100;
  }
  return clockTicks;
}

/** CPU seconds (utime + stime, all threads) of `pid` from /proc/<pid>/stat. */
async function cpuSeconds(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  // After "(comm) ": state is field 3 of stat(5), utime 14 and stime 15.
  const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(rest[11]) + Number(rest[12])) / (await ticksPerSecond());
}

/** Peak RSS (VmHWM) of `pid`, KiB. */
async function peakRssKib(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  return Number(/^VmHWM:\s+(\d+) kB/m.exec(status)?.[1] ?? 0);
}

/** A started exporter: its process, port, and the tail of its stderr. */
interface Exporter {
  proc: ChildProcess;
  port: number;
  stderr: () => string;
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Start the exporter on `port` and wait until `/-/healthy` answers 200. */
async function startExporter(bin: string, configPath: string, port: number): Promise<Exporter> {
  const proc = spawn(
    bin,
    [
      `--config.file=${configPath}`,
      `--web.listen-address=127.0.0.1:${port}`,
      // Per-probe logs only at debug; warn keeps its stderr quiet under load.
      '--log.level=warn',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let tail = '';
  proc.stderr?.on('data', (c: Buffer) => {
    tail = (tail + c.toString()).slice(-4000);
  });
  let exited = false;
  proc.once('exit', () => (exited = true));
  const exporter: Exporter = { proc, port, stderr: () => tail };
  const deadline = Date.now() + START_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (exited) throw new Error(`${PACKAGE} exited at start: ${tail.trim()}`);
    try {
      const res = await fetch(`http://127.0.0.1:${port}/-/healthy`, {
        signal: AbortSignal.timeout(1_000),
      });
      await res.arrayBuffer();
      if (res.status === 200) return exporter;
    } catch {
      // not listening yet
    }
    await sleep(50);
  }
  await stopExporter(exporter);
  throw new Error(`${PACKAGE} did not answer on 127.0.0.1:${port} within ${START_TIMEOUT_MS} ms`);
}

/** SIGTERM, then SIGKILL after 3 s; resolves once it has exited. */
async function stopExporter(e: Exporter): Promise<void> {
  const p = e.proc;
  if (p.exitCode !== null || p.signalCode !== null) return;
  const exited = new Promise<void>((r) => p.once('exit', () => r()));
  p.kill('SIGTERM');
  const killer = setTimeout(() => p.kill('SIGKILL'), 3_000);
  await exited;
  clearTimeout(killer);
}

/** Counts of one driving phase. */
interface Counts {
  probes: number;
  ok: number;
  /** Requests the exporter did not answer with 200 (or that failed in transport). */
  errors: number;
  firstError: string;
}

/**
 * Keep `concurrency` probe requests in flight until `untilMs` (Date.now() scale), rotating
 * over `targets` from `start`. Requests in flight at the end are awaited (each is bounded by
 * the pool's timeouts).
 */
async function drive(
  pool: Pool,
  targets: string[],
  concurrency: number,
  untilMs: number,
  start: number,
): Promise<Counts> {
  const counts: Counts = { probes: 0, ok: 0, errors: 0, firstError: '' };
  const paths = targets.map((t) => `/probe?module=${MODULE}&target=${encodeURIComponent(t)}`);
  let next = start;
  const worker = async (): Promise<void> => {
    while (Date.now() < untilMs) {
      const path = paths[next++ % paths.length] as string;
      try {
        const res = await pool.request({ method: 'GET', path });
        const body = await res.body.text();
        counts.probes++;
        if (res.statusCode !== 200) {
          counts.errors++;
          counts.firstError ||= `HTTP ${res.statusCode}: ${body.slice(0, 200)}`;
        } else if (body.includes('\nprobe_success 1\n')) {
          counts.ok++;
        }
      } catch (err) {
        counts.probes++;
        counts.errors++;
        counts.firstError ||= (err as Error).message;
        await sleep(10); // a broken exporter must not turn this into a busy loop
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return counts;
}

/**
 * Drive Debian's prometheus-blackbox-exporter at its maximum rate against `targets` and
 * measure it; see the file comment. Takes about `durationS` + 2 s (at most + 40 s more when
 * probes hang until their 30 s budget).
 * @throws Error when a target is not on 127.0.0.0/8, when the exporter is missing and cannot
 * be installed (the message names the command), or when it does not start.
 */
export async function driveBlackbox(o: BlackboxOptions): Promise<BlackboxFigures> {
  const log = o.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  checkTargets(o.targets);
  const concurrency = Math.max(1, Math.min(1024, Math.floor(o.concurrency ?? DEFAULT_CONCURRENCY)));
  if (!(o.durationS >= 1 && o.durationS <= 3600)) {
    throw new Error(`driveBlackbox: durationS must be 1–3600, got ${o.durationS}`);
  }
  const bin = await locateBlackbox(log);
  const version = await versionOf(bin);
  const dir = await mkdtemp(join(tmpdir(), 'vigil-bench-blackbox-'));
  let exporter: Exporter | null = null;
  let pool: Pool | null = null;
  const killOnExit = (): void => {
    exporter?.proc.kill('SIGKILL');
  };
  process.once('exit', killOnExit);
  try {
    const configPath = join(dir, 'blackbox.yml');
    await writeFile(configPath, CONFIG);
    for (let attempt = 1; !exporter; attempt++) {
      const port = await freePort();
      try {
        exporter = await startExporter(bin, configPath, port);
      } catch (err) {
        // Another process may have taken the port between freePort() and the bind.
        if (attempt >= 3 || !/address already in use/.test((err as Error).message)) throw err;
      }
    }
    const pid = exporter.proc.pid ?? 0;
    log(`bench peer: blackbox_exporter ${version} (pid ${pid}) on 127.0.0.1:${exporter.port}`);
    pool = new Pool(`http://127.0.0.1:${exporter.port}`, {
      connections: concurrency,
      pipelining: 1,
      keepAliveTimeout: 60_000,
      headersTimeout: DRAIN_MS,
      bodyTimeout: DRAIN_MS,
    });
    const warm = await drive(pool, o.targets, concurrency, Date.now() + WARMUP_MS, 0);
    if (warm.probes > 0 && warm.errors === warm.probes) {
      throw new Error(`${PACKAGE} answers no probe: ${warm.firstError}`);
    }
    const cpu0 = await cpuSeconds(pid);
    const driverCpu0 = process.cpuUsage();
    const t0 = process.hrtime.bigint();
    const counts = await drive(
      pool,
      o.targets,
      concurrency,
      Date.now() + o.durationS * 1000,
      warm.probes,
    );
    const windowS = Number(process.hrtime.bigint() - t0) / 1e9;
    const cpuS = (await cpuSeconds(pid)) - cpu0;
    const peakKib = await peakRssKib(pid);
    const driverCpu = process.cpuUsage(driverCpu0);
    const driverMs = (driverCpu.user + driverCpu.system) / 1000;
    log(
      `bench peer: ${counts.probes} probes in ${windowS.toFixed(1)} s at concurrency ` +
        `${concurrency}; driver CPU ${(driverMs / Math.max(1, counts.probes)).toFixed(3)} ms/probe`,
    );
    if (counts.errors > 0) {
      log(`bench peer: ${counts.errors} probe requests failed, first: ${counts.firstError}`);
    }
    const probes = counts.probes;
    return {
      version,
      probes,
      probes_per_s: Math.round((probes / windowS) * 10) / 10,
      ok_share: probes > 0 ? Math.round((counts.ok / probes) * 10_000) / 10_000 : 0,
      cpu_s: Math.round(cpuS * 100) / 100,
      cpu_ms_per_probe: probes > 0 ? Math.round(((cpuS * 1000) / probes) * 1000) / 1000 : 0,
      peak_rss_mib: Math.round((peakKib / 1024) * 10) / 10,
      cores_used: Math.round((cpuS / windowS) * 100) / 100,
    };
  } finally {
    await pool?.destroy().catch(() => undefined);
    if (exporter) await stopExporter(exporter);
    process.removeListener('exit', killOnExit);
    await rm(dir, { recursive: true, force: true });
  }
}

/** Standalone run: own target fleet, `sites` distinct paths over its ports; figures on stdout. */
async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      duration: { type: 'string', default: '10' },
      concurrency: { type: 'string', default: String(DEFAULT_CONCURRENCY) },
      sites: { type: 'string', default: '1000' },
    },
  });
  const targetJs = fileURLToPath(new URL('./target.js', import.meta.url));
  const fleet = spawn(process.execPath, [targetJs, '--ports', '4'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  try {
    const ports = await new Promise<number[]>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('target fleet did not start')), 10_000);
      fleet.stdout.once('data', (d: Buffer) => {
        clearTimeout(timer);
        resolve((JSON.parse(d.toString()) as { ports: number[] }).ports);
      });
      fleet.once('exit', () => reject(new Error('target fleet exited')));
    });
    const sites = Math.max(1, Number(values.sites) || 1000);
    const targets = Array.from(
      { length: sites },
      (_, i) => `http://127.0.0.1:${ports[i % ports.length]}/site/${i}`,
    );
    const figures = await driveBlackbox({
      targets,
      durationS: Number(values.duration),
      concurrency: Number(values.concurrency),
    });
    process.stdout.write(`${JSON.stringify(figures)}\n`);
  } finally {
    fleet.kill();
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((err: unknown) => {
    process.stderr.write(`${(err as Error).message}\n`);
    process.exitCode = 1;
  });
}
