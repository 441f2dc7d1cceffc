/**
 * End-to-end helpers for multi-location probing (issue 5): `vigil coordinator` and
 * `vigil probe` as child processes the way an operator runs them, a target HTTP server that
 * answers by the caller's source address (each probe binds its own 127.0.0.x with
 * `--local-address`), and a throw-away PKI made with the `openssl` CLI, following
 * docs/deployment.md §1.
 *
 * Why openssl and not test/tls-ca.ts: that helper issues server leaves only (EKU serverAuth,
 * one shared key), while mutual TLS needs client certificates (EKU clientAuth) and a second,
 * unrelated CA.
 */
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { readFile, rm, mkdir, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { MAIN, VigilProcess, apiRequest, sleep, waitFor, type ApiReply } from './harness.js';

const run = promisify(execFile);

/** Environment every child gets: info logs, and loopback webhook receivers allowed. */
function childEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return {
    ...process.env,
    VIGIL_LOG_LEVEL: 'info',
    VIGIL_WEBHOOK_ALLOW_PRIVATE: '1',
    // The tests poll /webapi several times a second (CONTRACT §4 default: 120 a minute).
    VIGIL_RATE_LIMIT: '100000',
    ...extra,
  };
}

/** Stop a child with `signal` and wait for its exit; resolves at once if it is gone. */
async function stopChild(
  p: ChildProcess | null,
  signal: NodeJS.Signals,
  graceMs = 10_000,
): Promise<number | null> {
  if (!p || p.exitCode !== null || p.signalCode !== null) return p?.exitCode ?? null;
  const exited = new Promise<number | null>((r) => p.once('exit', (code) => r(code)));
  p.kill(signal);
  // A child that ignores SIGTERM for too long is killed, so after() never hangs.
  const timer = setTimeout(() => p.kill('SIGKILL'), graceMs);
  const code = await exited;
  clearTimeout(timer);
  return code;
}

/** One pino JSON line of a child's stderr (other lines are kept as `{ msg: line }`). */
export interface LogLine {
  level?: number;
  msg: string;
  [field: string]: unknown;
}

/** Split and parse a child's stderr into log lines. */
export function parseLog(stderr: string): LogLine[] {
  const lines: LogLine[] = [];
  for (const line of stderr.split('\n')) {
    if (line.trim() === '') continue;
    try {
      const parsed = JSON.parse(line) as Partial<LogLine>;
      lines.push({ ...parsed, msg: String(parsed.msg ?? '') });
    } catch {
      lines.push({ msg: line });
    }
  }
  return lines;
}

/** The check object of `GET /webapi/checks/{id}` (CONTRACT §3 plus `last_location`). */
export interface CheckJson {
  id: number;
  monitor_id: number;
  name: string;
  enabled: boolean;
  interval: number;
  notification_threshold: number;
  status: 'ok' | 'nok' | null;
  last_check_at: string | null;
  last_location: string | null;
}

export interface MonitorJson {
  id: number;
  url: string;
  alias: string;
  checks: CheckJson[];
}

/** TLS flags for either side, as file paths. */
export interface TlsFlags {
  cert?: string;
  key?: string;
  ca?: string;
}

function tlsArgs(tls: TlsFlags | undefined): string[] {
  const args: string[] = [];
  if (tls?.cert) args.push('--tls-cert', tls.cert);
  if (tls?.key) args.push('--tls-key', tls.key);
  if (tls?.ca) args.push('--tls-ca', tls.ca);
  return args;
}

export interface CoordinatorOptions {
  /** Shared probe token (`--token`). */
  token: string;
  /** `--grpc-port`; 0 picks a free one (read back from endpoints.json). @default 0 */
  grpcPort?: number;
  tls?: TlsFlags;
}

/**
 * `vigil coordinator` in a child process: HTTP on a free port, gRPC on 127.0.0.1, started on
 * `dataDir`. Can be stopped and started again on the same data dir and ports.
 */
export class CoordinatorProcess {
  proc: ChildProcess | null = null;
  http = 0;
  grpc = 0;
  stderr = '';

  constructor(
    readonly dataDir: string,
    readonly options: CoordinatorOptions,
  ) {}

  /** `host:port` of the gRPC endpoint, for `vigil probe --coordinator`. */
  get address(): string {
    return `127.0.0.1:${this.grpc}`;
  }

  /**
   * Start and wait for `endpoints.json`.
   * @param grpcPort overrides the options' port (a restart on the first run's port)
   */
  async start(grpcPort = this.options.grpcPort ?? 0): Promise<void> {
    await mkdir(this.dataDir, { recursive: true });
    await rm(join(this.dataDir, 'endpoints.json'), { force: true });
    this.stderr = '';
    const proc = spawn(
      process.execPath,
      [
        MAIN,
        'coordinator',
        '--data-dir',
        this.dataDir,
        '--http-port',
        '0',
        '--grpc-host',
        '127.0.0.1',
        '--grpc-port',
        String(grpcPort),
        '--token',
        this.options.token,
        ...tlsArgs(this.options.tls),
      ],
      { stdio: ['ignore', 'ignore', 'pipe'], env: childEnv() },
    );
    this.proc = proc;
    proc.stderr?.on('data', (c: Buffer) => (this.stderr += c.toString()));
    const endpoints = await waitFor(
      'vigil coordinator to write endpoints.json',
      async () => {
        if (proc.exitCode !== null) throw new Error(`vigil coordinator exited: ${this.stderr}`);
        try {
          return JSON.parse(await readFile(join(this.dataDir, 'endpoints.json'), 'utf8')) as {
            http: number;
            grpc: number;
          };
        } catch {
          return undefined;
        }
      },
      30_000,
    );
    this.http = endpoints.http;
    this.grpc = endpoints.grpc;
  }

  /** Stop with `signal` and wait for the exit. */
  stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> {
    const p = this.proc;
    this.proc = null;
    return stopChild(p, signal);
  }

  /** Log lines so far. */
  logs(): LogLine[] {
    return parseLog(this.stderr);
  }

  /** A JSON request to /webapi with the token as a Bearer header. */
  api(method: string, path: string, token: string, body?: unknown): Promise<ApiReply> {
    return apiRequest(this.http, method, path, token, body);
  }

  /**
   * `vigil users create` on this data dir (goes through the running service): a business
   * user with the API on and `webhookUrl`; returns the API token.
   */
  async createUser(email: string, webhookUrl: string): Promise<string> {
    const created = await VigilProcess.cli([
      'users',
      'create',
      '--data-dir',
      this.dataDir,
      '--email',
      email,
      '--plan',
      'business',
      '--webhook-url',
      webhookUrl,
      '--api-enabled',
    ]);
    if (created.code !== 0) throw new Error(`users create failed: ${created.stderr}`);
    return String((JSON.parse(created.stdout) as { api_token: string }).api_token);
  }

  /** Add a monitor for `url`; returns it with its uptime check's id. */
  async addMonitor(
    apiToken: string,
    url: string,
    alias: string,
  ): Promise<{ monitor: MonitorJson; uptimeId: number }> {
    const res = await this.api('POST', '/webapi/monitors', apiToken, { url, alias });
    if (res.status !== 201) throw new Error(`POST /webapi/monitors: ${res.status}`);
    const monitor = res.json as MonitorJson;
    const uptime = monitor.checks.find((c) => c.name === 'uptime');
    if (!uptime) throw new Error('a new monitor has no uptime check');
    return { monitor, uptimeId: uptime.id };
  }

  async check(apiToken: string, checkId: number): Promise<CheckJson> {
    const res = await this.api('GET', `/webapi/checks/${checkId}`, apiToken);
    if (res.status !== 200) throw new Error(`GET /webapi/checks/${checkId}: ${res.status}`);
    return res.json as CheckJson;
  }
}

export interface ProbeProcessOptions {
  /** Coordinator `host:port`. */
  coordinator: string;
  location: string;
  token: string;
  /** `--local-address`. */
  localAddress?: string;
  tls?: TlsFlags;
}

/** `vigil probe` in a child process, its stderr parsed as pino lines. */
export class ProbeProcess {
  proc: ChildProcess | null = null;
  stderr = '';
  exitCode: number | null = null;

  constructor(readonly options: ProbeProcessOptions) {}

  /** Spawn; does not wait for the connection (see waitConnected()). */
  start(): void {
    const o = this.options;
    this.stderr = '';
    const proc = spawn(
      process.execPath,
      [
        MAIN,
        'probe',
        '--coordinator',
        o.coordinator,
        '--location',
        o.location,
        '--token',
        o.token,
        ...(o.localAddress ? ['--local-address', o.localAddress] : []),
        ...tlsArgs(o.tls),
      ],
      { stdio: ['ignore', 'ignore', 'pipe'], env: childEnv() },
    );
    this.proc = proc;
    proc.stderr?.on('data', (c: Buffer) => (this.stderr += c.toString()));
    proc.once('exit', (code) => (this.exitCode = code));
  }

  /** Log lines so far. */
  logs(): LogLine[] {
    return parseLog(this.stderr);
  }

  /** How many times it logged "connected to coordinator" (first connection and reconnects). */
  connections(): number {
    return this.logs().filter((l) => l.msg === 'connected to coordinator').length;
  }

  /** Wait until it was welcomed at least `count` times in all. */
  async waitConnected(count = 1, ms = 20_000): Promise<void> {
    await waitFor(
      `probe ${this.options.location} to connect (${count})`,
      () => {
        if (this.exitCode !== null) throw new Error(`probe exited: ${this.stderr}`);
        return this.connections() >= count ? true : undefined;
      },
      ms,
    );
  }

  stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> {
    const p = this.proc;
    this.proc = null;
    return stopChild(p, signal);
  }

  /**
   * Send `signal` without waiting for anything (e.g. SIGSTOP / SIGCONT: a probe that goes
   * silent without closing its socket). Returns false when the process is gone.
   */
  signal(signal: NodeJS.Signals): boolean {
    const p = this.proc;
    if (!p || p.pid === undefined || p.exitCode !== null || p.signalCode !== null) return false;
    try {
      process.kill(p.pid, signal);
      return true;
    } catch {
      return false;
    }
  }
}

/** One request the target saw. */
export interface TargetHit {
  remoteAddress: string;
  path: string;
  status: number;
  /** When the request arrived / was answered, ms since epoch (answered null while open). */
  at: number;
  answeredAt: number | null;
}

/** How the target answers one request. */
export interface TargetReply {
  status: number;
  /** Real-time delay before answering, ms. @default 0 */
  delayMs?: number;
}

/**
 * The monitored site: node:http on 127.0.0.1:0. `decide` picks each answer from the
 * caller's source address and the path, and may be replaced at any time.
 */
export class TargetServer {
  readonly hits: TargetHit[] = [];
  port = 0;
  private server: Server | null = null;

  constructor(public decide: (remoteAddress: string, path: string) => TargetReply) {}

  async start(): Promise<void> {
    this.server = createServer((req: IncomingMessage, res: ServerResponse) => {
      const remoteAddress = (req.socket.remoteAddress ?? '').replace(/^::ffff:/, '');
      const path = req.url ?? '/';
      const reply = this.decide(remoteAddress, path);
      const hit: TargetHit = {
        remoteAddress,
        path,
        status: reply.status,
        at: Date.now(),
        answeredAt: null,
      };
      this.hits.push(hit);
      const answer = (): void => {
        hit.answeredAt = Date.now();
        res.statusCode = reply.status;
        res.setHeader('content-type', 'text/plain');
        res.end(reply.status < 400 ? 'ok\n' : 'unavailable\n');
      };
      if (reply.delayMs) setTimeout(answer, reply.delayMs);
      else answer();
    });
    // The destination is 127.0.0.1; the probes' source addresses 127.0.0.2/.3/.4 are all
    // on the loopback interface (127.0.0.0/8), so no other bind is needed on Linux.
    await new Promise<void>((r) => this.server?.listen(0, '127.0.0.1', r));
    this.port = (this.server.address() as { port: number }).port;
  }

  url(path: string): string {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((r) => (this.server ? this.server.close(() => r()) : r()));
  }
}

/** Paths of a CA's files. */
export interface CaFiles {
  crt: string;
  key: string;
}

/** Paths of an issued certificate and its key. */
export interface CertFiles {
  cert: string;
  key: string;
}

/**
 * A private CA made with the openssl CLI as docs/deployment.md §1 makes it
 * (EC P-256, `req -x509`). `name` prefixes the files in `dir`.
 */
export async function makeCa(dir: string, name: string, cn: string): Promise<CaFiles> {
  await mkdir(dir, { recursive: true });
  const key = join(dir, `${name}.key`);
  const crt = join(dir, `${name}.crt`);
  await run('openssl', [
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-nodes',
    '-days',
    '30',
    '-keyout',
    key,
    '-out',
    crt,
    '-subj',
    `/CN=${cn}`,
  ]);
  return { crt, key };
}

/**
 * A certificate signed by `ca` for `name` with `subjectAltName` `san` (e.g.
 * `"DNS:localhost,IP:127.0.0.1"`), usable as server and client certificate (the `issue`
 * function of docs/deployment.md §1).
 */
export async function issueCert(
  dir: string,
  ca: CaFiles,
  name: string,
  san: string,
): Promise<CertFiles> {
  const key = join(dir, `${name}.key`);
  const csr = join(dir, `${name}.csr`);
  const ext = join(dir, `${name}.ext`);
  const cert = join(dir, `${name}.crt`);
  await run('openssl', [
    'req',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-nodes',
    '-keyout',
    key,
    '-out',
    csr,
    '-subj',
    `/CN=${name}`,
  ]);
  await writeFile(ext, `subjectAltName=${san}\nextendedKeyUsage=serverAuth,clientAuth\n`);
  await run('openssl', [
    'x509',
    '-req',
    '-in',
    csr,
    '-CA',
    ca.crt,
    '-CAkey',
    ca.key,
    '-CAcreateserial',
    '-days',
    '30',
    '-out',
    cert,
    '-extfile',
    ext,
  ]);
  return { cert, key };
}

/** Seconds-resolution `last_check_at` as ms since epoch (it is UTC). */
export function parseCheckTime(s: string | null): number | null {
  return s === null ? null : Date.parse(`${s.replace(' ', 'T')}Z`);
}

export { sleep, waitFor };
