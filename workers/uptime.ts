/**
 * The `uptime` check (CONTRACT §5): GET the URL over fresh connections, follow up to 5
 * redirects, 30 s in total; up when the final status is 200–399. Runs inside a piscina worker,
 * many runs at once per thread. Never throws: a site being down is a result.
 *
 * The hot path of a probe, so it is built for little CPU per run (bench/micro.ts `benchPool`):
 * - every request (the first one and each redirect hop) gets its own undici `Client`, closed
 *   as soon as it was dispatched, and its own socket, opened by the run (DNS lookup, TCP, TLS
 *   without a session cache) and used for that request only — no socket, DNS answer or TLS
 *   session is shared with another run;
 * - the redirect interceptor is built once per thread, not per run;
 * - the run is its own undici dispatch handler (no `request()` response stream, no
 *   AbortSignal): one object and one timer per run.
 *
 * A connection whose response has been read completely is closed with a TCP reset, leaving
 * no TIME_WAIT (why: lib/close.ts). Connections that fail or time out close as undici closes
 * them.
 */
import { isIP, connect as netConnect, type Socket } from 'node:net';
import { STATUS_CODES, type IncomingHttpHeaders } from 'node:http';
import { connect as tlsConnect } from 'node:tls';
import { Client, interceptors, type buildConnector, type Dispatcher } from 'undici';
import type { CheckTask, CheckTaskResult } from './lib/task.js';
import { closeWithReset } from './lib/close.js';
import { describeFailure, timeoutError, tooManyRedirectsError } from './lib/describe-error.js';
import { PhaseRecorder } from './lib/timing.js';

/** Most redirects followed before the run fails (CONTRACT §5). */
export const MAX_REDIRECTS = 5;

/** Total budget of a run when the task names none, ms (CONTRACT §5). */
export const DEFAULT_TIMEOUT_MS = 30_000;

/** Body bytes read before the body counts as done; the rest is not downloaded. */
export const MAX_BODY_BYTES = 1024 * 1024;

/**
 * How much longer than the run's budget undici's own timeouts (headers, body) are, ms: the
 * run's timer decides, undici's only clean up after it.
 */
const UNDICI_GRACE_MS = 1000;

const REDIRECT_STATUSES = new Set([300, 301, 302, 303, 307, 308]);

/** Request headers of every run. */
const REQUEST_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'user-agent': 'Vigil/1.0',
  accept: '*/*',
});

/** `"<status> - <reason phrase>"` (CONTRACT §5), e.g. `"503 - Service Unavailable"`. */
export function statusError(status: number): string {
  return `${status} - ${STATUS_CODES[status] ?? 'Unknown Status'}`;
}

/** Run one uptime check. Resolves with the outcome in every case. */
export default function runUptime(task: CheckTask): Promise<CheckTaskResult> {
  return new Promise((resolve) => new UptimeRun(task, resolve).start());
}

/** Where a run rides along in its dispatch options, through every redirect hop. */
const kRun = Symbol('vigil.uptimeRun');

type RunDispatchOptions = Dispatcher.DispatchOptions & { [kRun]: UptimeRun };

const noop = (): void => undefined;

/**
 * Dispatch one request (one hop) on a new Client of its own. The Client is closed at once:
 * it finishes this request and then destroys its socket, so the connection is never reused.
 * localAddress must be a Client option: undici's connector overrides one given per connect.
 */
function dispatchOnFreshClient(
  opts: Dispatcher.DispatchOptions,
  handler: Dispatcher.DispatchHandler,
): boolean {
  const run = (opts as RunDispatchOptions)[kRun];
  const client = new Client(opts.origin as string, {
    connect: run.connect,
    ...(run.localAddress !== null ? { localAddress: run.localAddress } : {}),
  });
  try {
    return client.dispatch(opts, handler);
  } finally {
    client.close(noop);
  }
}

/**
 * Follows redirects: without throwOnMaxRedirect the interceptor stops after MAX_REDIRECTS
 * hops and hands over the next response; a redirect there means the chain was too long. (Its
 * throwOnMaxRedirect mode would also reject a chain of exactly MAX_REDIRECTS.) Each hop is
 * dispatched through dispatchOnFreshClient with the run's options, so each gets a new Client.
 */
const dispatchWithRedirects = interceptors.redirect({ maxRedirections: MAX_REDIRECTS })(
  dispatchOnFreshClient as Dispatcher['dispatch'],
);

/** One run: its state and the undici dispatch handler of its requests. */
class UptimeRun implements Dispatcher.DispatchHandler {
  readonly localAddress: string | null;
  /** The Client connector of this run's hops (see openSocket). */
  readonly connect: (options: buildConnector.Options, callback: buildConnector.Callback) => void;
  private readonly task: CheckTask;
  private readonly resolve: (result: CheckTaskResult) => void;
  private readonly startedAtMs = Date.now();
  private readonly phases = new PhaseRecorder();
  private readonly timeoutMs: number;
  private timer: NodeJS.Timeout | null = null;
  private done = false;
  /** The current hop's controller, once its request is being sent. */
  private controller: Dispatcher.DispatchController | null = null;
  /** The current hop's socket as undici uses it (TLS for `https:`), once opened. */
  private socket: Socket | null = null;
  /** The current hop's TCP socket (under `socket` for `https:`). */
  private tcp: Socket | null = null;
  /** URLs requested so far, kept by the redirect interceptor (one per response). */
  private history: readonly unknown[] | null = null;
  private status = 0;
  private location: string | string[] | undefined;
  private bodyBytes = 0;

  constructor(task: CheckTask, resolve: (result: CheckTaskResult) => void) {
    this.task = task;
    this.resolve = resolve;
    this.localAddress = task.localAddress;
    this.timeoutMs = task.timeoutMs > 0 ? task.timeoutMs : DEFAULT_TIMEOUT_MS;
    this.connect = (options, callback) => this.openSocket(options, callback);
  }

  /**
   * Open a hop's connection the way undici's own connector does (TCP without keep-alive
   * probes, no Nagle; for `https:` TLS with SNI unless the host is an IP literal, ALPN
   * http/1.1, certificate checked, no session reused), keeping the TCP socket so that it can be
   * reset when done. The previous hop's response is complete by now, so its connection goes.
   * No connect timeout: the run's deadline drops a connection still in progress.
   */
  private openSocket(options: buildConnector.Options, callback: buildConnector.Callback): void {
    if (this.tcp !== null) closeWithReset(this.tcp, this.socket !== this.tcp);
    const https = options.protocol === 'https:';
    const tcp = netConnect({
      host: options.hostname,
      port: Number(options.port) || (https ? 443 : 80),
      ...(options.localAddress ? { localAddress: options.localAddress } : {}),
      noDelay: true,
    });
    let socket = tcp;
    if (https) {
      // Its errors reach undici through the TLS socket; one of its own (say, a reset of an
      // already closed socket) must never go unhandled.
      tcp.on('error', noop);
      socket = tlsConnect({
        socket: tcp,
        host: options.hostname,
        servername: options.servername || (isIP(options.hostname) ? '' : options.hostname),
        ALPNProtocols: ['http/1.1'],
      });
    }
    this.tcp = tcp;
    this.socket = socket;
    this.phases.watch(tcp, https ? socket : null);
    let pending: buildConnector.Callback | null = callback;
    socket.once(https ? 'secureConnect' : 'connect', () => {
      const cb = pending;
      pending = null;
      cb?.(null, socket);
    });
    // Stays attached: later errors are undici's to handle, and must never go unhandled.
    socket.on('error', (err) => {
      const cb = pending;
      pending = null;
      cb?.(err, null);
    });
  }

  start(): void {
    let url: URL;
    try {
      url = new URL(this.task.url);
    } catch {
      this.finish(false, 0, '0 - Invalid URL');
      return;
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      this.finish(false, 0, `0 - Unsupported URL scheme (${url.protocol})`);
      return;
    }
    this.timer = setTimeout(() => this.onDeadline(), this.timeoutMs);
    const opts: RunDispatchOptions = {
      origin: url.origin,
      path: url.search ? `${url.pathname}${url.search}` : url.pathname,
      method: 'GET',
      headers: REQUEST_HEADERS,
      headersTimeout: this.timeoutMs + UNDICI_GRACE_MS,
      bodyTimeout: this.timeoutMs + UNDICI_GRACE_MS,
      [kRun]: this,
    };
    try {
      dispatchWithRedirects(opts, this);
    } catch (err) {
      this.fail(err);
    }
  }

  onRequestStart(controller: Dispatcher.DispatchController, context: unknown): void {
    if (this.done) {
      // The run is over (deadline) and this hop only now got its connection.
      controller.abort(new Error('run is over'));
      return;
    }
    this.controller = controller;
    const history = (context as { history?: unknown } | null | undefined)?.history;
    if (Array.isArray(history)) this.history = history;
  }

  onResponseStart(
    _controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: IncomingHttpHeaders,
  ): void {
    // 1xx interim answers are not the response.
    if (this.done || statusCode < 200) return;
    this.phases.markHeaders();
    this.status = statusCode;
    this.location = headers.location;
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.done) return;
    this.bodyBytes += chunk.length;
    if (this.bodyBytes >= MAX_BODY_BYTES) {
      // Enough read: the body counts as done and the rest is not downloaded.
      this.complete();
      controller.abort(new Error('body limit reached'));
    }
  }

  onResponseEnd(): void {
    this.complete();
  }

  onResponseError(_controller: Dispatcher.DispatchController, err: Error): void {
    this.fail(err);
  }

  /** The final response is in (or enough of its body): judge the status, reset the connection. */
  private complete(): void {
    if (this.done) return;
    if (this.tcp !== null) closeWithReset(this.tcp, this.socket !== this.tcp);
    const status = this.status;
    if (REDIRECT_STATUSES.has(status) && this.location !== undefined) {
      this.finish(false, 0, tooManyRedirectsError(MAX_REDIRECTS));
      return;
    }
    const ok = status >= 200 && status <= 399;
    this.finish(ok, status, ok ? '' : statusError(status));
  }

  /**
   * The request failed. A failure after the headers (reset mid-body) is still a run that did
   * not complete, so it reports like one that got no answer: code 0 and a "0 - …" error.
   */
  private fail(err: unknown): void {
    if (this.done) return;
    this.finish(false, 0, describeFailure(err, this.timeoutMs, false));
  }

  /** The budget is spent: report the timeout now and drop the connection in progress. */
  private onDeadline(): void {
    this.timer = null;
    if (this.done) return;
    this.finish(false, 0, timeoutError(this.timeoutMs));
    const reason = new Error(timeoutError(this.timeoutMs));
    if (this.controller && !this.controller.aborted) this.controller.abort(reason);
    // Still connecting (DNS, TCP or TLS): the request has no controller yet. Destroyed with an
    // error, the socket fails its connect and undici lets go of the request at once.
    if (this.socket && !this.socket.destroyed) this.socket.destroy(reason);
    if (this.tcp && !this.tcp.destroyed) this.tcp.destroy();
  }

  private finish(ok: boolean, httpStatusCode: number, error: string): void {
    if (this.done) return;
    this.done = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    // Microsecond precision is plenty and keeps the JSON short.
    const responseTimeMs = Math.round(this.phases.elapsed() * 1000) / 1000;
    const history = this.history;
    const redirects = history !== null && history.length > 0 ? history.length - 1 : 0;
    this.resolve({
      ok,
      httpStatusCode,
      error,
      responseTimeMs,
      startedAtMs: this.startedAtMs,
      detail: { timings: this.phases.result(responseTimeMs), redirects },
    });
  }
}
