/**
 * End-to-end helpers: a real nginx on a loopback port, a webhook receiver, and `vigil` run
 * as a user runs it (child process of dist/src/main.js). Everything listens on 127.0.0.1 and
 * is stopped by the caller.
 */
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { createServer as createNetServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

export const MAIN = fileURLToPath(new URL('../../src/main.js', import.meta.url));

/** Resolve after `ms` real milliseconds. */
export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Poll `fn` every 100 ms until it returns a value other than undefined, or throw after `ms`. */
export async function waitFor<T>(
  what: string,
  fn: () => T | undefined | Promise<T | undefined>,
  ms = 20_000,
): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > until) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(100);
  }
}

/** A port that was free a moment ago (for servers that cannot take port 0, like nginx). */
export async function freePort(): Promise<number> {
  const srv = createNetServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as { port: number }).port;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}

export function nginxBinary(): string | null {
  for (const p of ['/usr/sbin/nginx', '/usr/bin/nginx', '/usr/local/sbin/nginx'])
    if (existsSync(p)) return p;
  return null;
}

/**
 * nginx serving `GET /site` with 200 on 127.0.0.1:`port`, or 503 while the file `maint`
 * exists in its directory.
 */
export class Nginx {
  private proc: ChildProcess | null = null;
  readonly maintFile: string;
  constructor(
    readonly dir: string,
    readonly port: number,
  ) {
    this.maintFile = join(dir, 'maint');
  }

  async start(): Promise<void> {
    const bin = nginxBinary();
    if (!bin) throw new Error('nginx is not installed (.ci/run installs Debian nginx-light)');
    await mkdir(join(this.dir, 'tmp'), { recursive: true, mode: 0o755 });
    const conf = join(this.dir, 'nginx.conf');
    const t = join(this.dir, 'tmp');
    await writeFile(
      conf,
      `daemon off;\nworker_processes 1;\npid ${join(this.dir, 'nginx.pid')};\nerror_log ${join(this.dir, 'error.log')};\n` +
        `events { worker_connections 256; }\n` +
        `http {\n  access_log off;\n  client_body_temp_path ${t}/body;\n  proxy_temp_path ${t}/proxy;\n` +
        `  fastcgi_temp_path ${t}/fastcgi;\n  uwsgi_temp_path ${t}/uwsgi;\n  scgi_temp_path ${t}/scgi;\n` +
        `  server {\n    listen 127.0.0.1:${this.port};\n` +
        `    location / {\n      if (-f ${this.maintFile}) { return 503; }\n      default_type text/plain;\n      return 200 "ok\\n";\n    }\n  }\n}\n`,
    );
    this.proc = spawn(bin, ['-c', conf, '-p', this.dir, '-e', join(this.dir, 'error.log')], {
      stdio: 'ignore',
    });
    await waitFor('nginx to answer', async () => {
      try {
        const res = await fetch(`http://127.0.0.1:${this.port}/site`);
        await res.arrayBuffer();
        return true;
      } catch {
        return undefined;
      }
    });
  }

  /** Stop nginx; resolves once the port refuses connections. */
  async stop(): Promise<void> {
    const p = this.proc;
    this.proc = null;
    if (!p || p.exitCode !== null) return;
    const exited = new Promise((r) => p.once('exit', r));
    p.kill('SIGTERM');
    await exited;
  }

  async setMaintenance(on: boolean): Promise<void> {
    if (on) await writeFile(this.maintFile, '1');
    else await (await import('node:fs/promises')).rm(this.maintFile, { force: true });
  }
}

export interface ReceivedWebhook {
  headers: IncomingHttpHeaders;
  raw: string;
  body: {
    check: Record<string, unknown> & { meta?: Record<string, unknown> };
    monitor: Record<string, unknown>;
  };
  at: number;
}

/** A webhook receiver on 127.0.0.1:0 that records every POST and answers `status()`. */
export class Receiver {
  readonly received: ReceivedWebhook[] = [];
  status = 200;
  private server: Server | null = null;
  port = 0;

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const raw = Buffer.concat(chunks).toString('utf8');
        let body: ReceivedWebhook['body'];
        try {
          body = JSON.parse(raw) as ReceivedWebhook['body'];
        } catch {
          body = { check: {}, monitor: {} };
        }
        this.received.push({ headers: req.headers, raw, body, at: Date.now() });
        res.statusCode = this.status;
        res.end();
      });
    });
    await new Promise<void>((r) => this.server?.listen(0, '127.0.0.1', r));
    this.port = (this.server.address() as { port: number }).port;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}/hook`;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((r) => (this.server ? this.server.close(() => r()) : r()));
  }
}

/** Status and parsed JSON body (null when empty) of an API call. */
export interface ApiReply {
  status: number;
  json: unknown;
}

/** A JSON request to the API on 127.0.0.1:`port`, the token as `Authorization: Bearer`. */
export async function apiRequest(
  port: number,
  method: string,
  path: string,
  token: string,
  body?: unknown,
): Promise<ApiReply> {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      accept: 'application/json',
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  return { status: res.status, json: text ? (JSON.parse(text) as unknown) : null };
}

/** `vigil` as a user runs it, in a child process. */
export class VigilProcess {
  proc: ChildProcess | null = null;
  http = 0;
  stderr = '';

  /**
   * @param dataDir the service's `--data-dir`
   * @param env extra environment for every start (e.g. `NODE_EXTRA_CA_CERTS`), over this
   *   process's own
   */
  constructor(
    readonly dataDir: string,
    readonly env: Readonly<Record<string, string>> = {},
  ) {}

  async start(args: string[] = ['--locations', 'local-a,local-b']): Promise<void> {
    await (
      await import('node:fs/promises')
    ).rm(join(this.dataDir, 'endpoints.json'), { force: true });
    this.stderr = '';
    this.proc = spawn(
      process.execPath,
      [MAIN, 'start', '--data-dir', this.dataDir, '--http-port', '0', '--grpc-port', '0', ...args],
      {
        stdio: ['ignore', 'ignore', 'pipe'],
        env: { ...process.env, VIGIL_LOG_LEVEL: 'info', ...this.env },
      },
    );
    this.proc.stderr?.on('data', (c: Buffer) => (this.stderr += c.toString()));
    const endpoints = await waitFor(
      'vigil to write endpoints.json',
      async () => {
        if (this.proc?.exitCode !== null) throw new Error(`vigil exited: ${this.stderr}`);
        try {
          return JSON.parse(await readFile(join(this.dataDir, 'endpoints.json'), 'utf8')) as {
            http: number;
          };
        } catch {
          return undefined;
        }
      },
      30_000,
    );
    this.http = endpoints.http;
  }

  /** Stop with `signal` and wait for the exit. */
  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> {
    const p = this.proc;
    this.proc = null;
    if (!p || p.exitCode !== null) return p?.exitCode ?? null;
    const exited = new Promise<number | null>((r) => p.once('exit', (code) => r(code)));
    p.kill(signal);
    return exited;
  }

  /** Run `vigil <args>` to completion; returns exit code and output. */
  static async cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
    try {
      const { stdout, stderr } = await promisify(execFile)(process.execPath, [MAIN, ...args], {
        timeout: 30_000,
      });
      return { code: 0, stdout, stderr };
    } catch (err) {
      const e = err as { code?: number; stdout?: string; stderr?: string };
      return {
        code: typeof e.code === 'number' ? e.code : -1,
        stdout: e.stdout ?? '',
        stderr: e.stderr ?? '',
      };
    }
  }

  /** A JSON request to /webapi with the token as a Bearer header. */
  api(method: string, path: string, token: string, body?: unknown): Promise<ApiReply> {
    return apiRequest(this.http, method, path, token, body);
  }
}
