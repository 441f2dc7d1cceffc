/**
 * A probe node (CONTRACT §7): keeps one authenticated stream to the coordinator, runs the
 * checks it is sent on a CheckPool, streams the results back, sends heartbeats, and reconnects
 * with backoff whenever the stream ends.
 */
import { EventEmitter } from 'node:events';
import { hostname } from 'node:os';
import * as grpc from '@grpc/grpc-js';
import { backoffDelayMs } from '../common/backoff.js';
import { systemClock, type Clock, type TimerHandle } from '../common/clock.js';
import { logger as moduleLogger, type Logger } from '../common/logger.js';
import { PROTOCOL_VERSION } from '../common/proto.js';
import { CHECK_NAMES, type CheckName } from '../domain/check.js';
import {
  createProbeControlClient,
  describeStreamEnd,
  openControlStream,
  toRunResult,
  type ControlStream,
  type CoordinatorMessage__Output,
  type ProbeControlClient,
  type ProbeMessage,
  type RunRequest__Output,
} from './grpc-client.js';
import { CheckPool } from './pool.js';
import type { CheckTaskResult } from './task.js';
import type { RunResult } from '../generated/vigil/probe/v1/RunResult.js';

/** Options of a ProbeNode (CONTRACT §1 `vigil probe`, §7). */
export interface ProbeNodeOptions {
  /** Coordinator gRPC address, `host:port`. */
  coordinator: string;
  /** Location name announced in Hello, e.g. `"amsterdam"`; several nodes may share one. */
  location: string;
  /** Shared probe token, sent as `authorization: Bearer <token>`. */
  token: string;
  /** Source IP for every outgoing check connection (`--local-address`), or null. */
  localAddress: string | null;
  /**
   * Most runs in flight at once, announced in Hello.
   * @default the pool's capacity (threads × concurrentTasksPerWorker)
   */
  capacity?: number;
  /** Worker threads of the check pool. @default min(2, os.availableParallelism()) */
  threads?: number;
  /** Runs one worker thread works on at once. @default 256 */
  concurrentTasksPerWorker?: number;
  /** Channel credentials (TLS with `--tls-ca` etc.). @default insecure */
  credentials?: grpc.ChannelCredentials;
  /** Timers and wall time. @default systemClock */
  clock?: Clock;
  /** @default logger('probe', { location }) */
  logger?: Logger;
  /** Node identity for the coordinator's logs. @default `${os.hostname()}:${process.pid}` */
  nodeName?: string;
  /**
   * Heartbeat period, ms, when the coordinator's Welcome names none.
   * @default 5000
   */
  heartbeatIntervalMs?: number;
  /**
   * How long to wait for Welcome after Hello before giving up on the stream, ms.
   * @default 15000
   */
  welcomeTimeoutMs?: number;
  /** First reconnect delay, ms; doubles per failed attempt. @default 500 */
  initialBackoffMs?: number;
  /** Longest reconnect delay, ms. @default 10000 */
  maxBackoffMs?: number;
}

/** ProbeNodeOptions validated, with defaults applied, frozen. */
interface ResolvedProbeNodeOptions {
  readonly coordinator: string;
  readonly location: string;
  readonly token: string;
  readonly localAddress: string | null;
  readonly capacity: number | undefined;
  readonly threads: number | undefined;
  readonly concurrentTasksPerWorker: number | undefined;
  readonly credentials: grpc.ChannelCredentials | undefined;
  readonly nodeName: string;
  readonly heartbeatIntervalMs: number;
  readonly welcomeTimeoutMs: number;
  readonly initialBackoffMs: number;
  readonly maxBackoffMs: number;
}

/** How the last stream ended, for operators (`vigil probe` prints it) and tests. */
export interface StreamEnd {
  /** gRPC status code, e.g. `grpc.status.UNAUTHENTICATED`. */
  code: grpc.status;
  details: string;
  /** Wall time it ended, ms since the Unix epoch. */
  at: number;
}

/** Missed coordinator heartbeats after which the stream counts as dead (proto: 15 s at 5 s). */
const SILENT_HEARTBEATS = 3;

/**
 * How long a successful run's result may wait for others to share its ResultBatch, ms. Every
 * gRPC message costs CPU on both ends (framing, a write, a wake-up, decoding); at 1,000 results
 * per second a 20 ms window sends about 50 messages instead of 1,000. Nothing waits on a good
 * result. A failed run's result is not held: it starts a verification from another location
 * (CONTRACT §5, within 2 s), so it goes out with whatever is pending in the next turn.
 */
export const RESULT_FLUSH_WINDOW_MS = 20;

/** Results that go out at once, without waiting out RESULT_FLUSH_WINDOW_MS. */
export const RESULT_BATCH_MAX = 256;

/** One connection attempt: a stream and what belongs to it. Dropped whole when it ends. */
interface Session {
  readonly call: ControlStream;
  /** Session id from Welcome; '' until welcomed. */
  sessionId: string;
  welcomed: boolean;
  /** True once the stream ended or was abandoned; nothing may be written after. */
  closed: boolean;
  /** Heartbeat period in force, ms (from Welcome, else the default). */
  heartbeatIntervalMs: number;
  /** True once the coordinator sent a heartbeat: only then is its silence a failure. */
  coordinatorBeats: boolean;
  heartbeatTimer: TimerHandle | null;
  welcomeTimer: TimerHandle | null;
  silenceTimer: TimerHandle | null;
  /** Results not written yet; flushed as RESULT_FLUSH_WINDOW_MS says. */
  pending: RunResult[];
  /** The window's timer, while one runs. */
  flushTimer: TimerHandle | null;
  /** True while a flush in the next turn is scheduled (a failed result is pending). */
  flushSoon: boolean;
}

function positive(name: string, value: number): number {
  if (!Number.isFinite(value) || value <= 0) {
    throw new TypeError(`${name} must be a positive number, got ${value}`);
  }
  return value;
}

function resolveOptions(o: ProbeNodeOptions): ResolvedProbeNodeOptions {
  if (!/^.+:\d+$/.test(o.coordinator)) {
    throw new TypeError(`coordinator must be host:port, got ${JSON.stringify(o.coordinator)}`);
  }
  if (o.location.trim() === '') throw new TypeError('location must not be empty');
  if (o.capacity !== undefined && (!Number.isInteger(o.capacity) || o.capacity < 1)) {
    throw new TypeError(`capacity must be a positive integer, got ${o.capacity}`);
  }
  return Object.freeze({
    coordinator: o.coordinator,
    location: o.location,
    token: o.token,
    localAddress: o.localAddress,
    capacity: o.capacity,
    threads: o.threads,
    concurrentTasksPerWorker: o.concurrentTasksPerWorker,
    credentials: o.credentials,
    nodeName: o.nodeName ?? `${hostname()}:${process.pid}`,
    heartbeatIntervalMs: positive('heartbeatIntervalMs', o.heartbeatIntervalMs ?? 5000),
    welcomeTimeoutMs: positive('welcomeTimeoutMs', o.welcomeTimeoutMs ?? 15_000),
    initialBackoffMs: positive('initialBackoffMs', o.initialBackoffMs ?? 500),
    maxBackoffMs: positive('maxBackoffMs', o.maxBackoffMs ?? 10_000),
  });
}

function isCheckName(name: string): name is CheckName {
  return (CHECK_NAMES as readonly string[]).includes(name);
}

/**
 * A probe node. `start()` connects and keeps reconnecting until `stop()`.
 *
 * Events: `'connected'` (sessionId: string) after each Welcome; `'disconnected'`
 * (end: StreamEnd) whenever a stream ends while running. Runs in flight when a stream ends are
 * dropped: the coordinator re-queues them.
 */
export class ProbeNode extends EventEmitter {
  /** The options in force; private because they hold the token. */
  private readonly options: ResolvedProbeNodeOptions;
  private readonly clock: Clock;
  private readonly log: Logger;
  /** The check pool; created by start(), null before. */
  private pool: CheckPool | null = null;
  /** The gRPC client; created by start(), null before and after stop(). */
  private client: ProbeControlClient | null = null;
  /** The current connection attempt; null between attempts and after stop(). */
  private session: Session | null = null;
  /** Pending reconnect; null unless waiting out a backoff. */
  private reconnectTimer: TimerHandle | null = null;
  /** Failed attempts since the last Welcome; decides the next reconnect delay. */
  private failedAttempts = 0;
  private started = false;
  /** Set by stop(); once set nothing reconnects. */
  private stopping: Promise<void> | null = null;
  /**
   * Holds the event loop open while the node runs: the clock's timers are unref'd and a
   * waiting node has no socket open, yet `vigil probe` must not exit between attempts.
   */
  private keepAlive: NodeJS.Timeout | null = null;
  private readonly readyPromise: Promise<void>;
  private resolveReady!: () => void;
  private rejectReady!: (err: Error) => void;
  private readyDone = false;
  /** Whether a Welcome'd stream is open right now. */
  private isConnected = false;
  /** How the latest stream ended, or null if none has. */
  private lastEnd: StreamEnd | null = null;

  constructor(options: ProbeNodeOptions) {
    super();
    this.options = resolveOptions(options);
    this.clock = options.clock ?? systemClock;
    this.log = options.logger ?? moduleLogger('probe', { location: this.options.location });
    this.readyPromise = new Promise<void>((resolve, reject) => {
      this.resolveReady = resolve;
      this.rejectReady = reject;
    });
    // A caller that never asks for ready() must not see an unhandled rejection on stop().
    this.readyPromise.catch(() => undefined);
  }

  /** The location name this node announces. */
  get location(): string {
    return this.options.location;
  }

  /** True while a stream is open and the coordinator has welcomed this node. */
  get connected(): boolean {
    return this.isConnected;
  }

  /** How the latest stream ended (code and details), or null if none has ended. */
  get lastStreamEnd(): StreamEnd | null {
    return this.lastEnd;
  }

  /** Runs this node announces it accepts at once; known after start(). */
  get capacity(): number {
    return this.options.capacity ?? this.pool?.capacity ?? 0;
  }

  /**
   * Resolves on the first Welcome from the coordinator; rejects if stop() comes first.
   * Later reconnects do not affect it.
   */
  ready(): Promise<void> {
    return this.readyPromise;
  }

  /** Start the pool and connect; reconnects on its own until stop(). Idempotent. */
  start(): void {
    if (this.started) return;
    if (this.stopping) throw new Error('ProbeNode was stopped; create a new one');
    // The client first: a bad address throws here, before any thread was started.
    this.client = createProbeControlClient(this.options.coordinator, this.options.credentials);
    this.pool = new CheckPool({
      threads: this.options.threads,
      concurrentTasksPerWorker: this.options.concurrentTasksPerWorker,
      localAddress: this.options.localAddress,
    });
    this.started = true;
    this.keepAlive = setInterval(() => undefined, 1 << 30);
    this.log.info(
      { coordinator: this.options.coordinator, capacity: this.capacity },
      'probe node starting',
    );
    this.connect();
  }

  /** Close the stream, the client and the pool. Resolves when all are down. Idempotent. */
  stop(): Promise<void> {
    if (this.stopping) return this.stopping;
    this.stopping = this.shutdown();
    return this.stopping;
  }

  private async shutdown(): Promise<void> {
    if (this.reconnectTimer) this.clock.clearTimer(this.reconnectTimer);
    this.reconnectTimer = null;
    const session = this.session;
    this.session = null;
    this.isConnected = false;
    if (session) {
      this.closeSession(session);
      session.call.end();
      session.call.cancel();
    }
    this.client?.close();
    this.client = null;
    if (this.keepAlive) clearInterval(this.keepAlive);
    this.keepAlive = null;
    if (!this.readyDone) {
      this.readyDone = true;
      this.rejectReady(new Error('probe node stopped before the coordinator welcomed it'));
    }
    await this.pool?.close();
    this.log.info('probe node stopped');
  }

  /** Open a stream and say Hello. */
  private connect(): void {
    this.reconnectTimer = null;
    if (this.stopping || !this.client) return;
    let call: ControlStream;
    try {
      call = openControlStream(this.client, this.options.token);
    } catch (err) {
      // Only a bad client (e.g. closed) throws here; treat it like a failed attempt.
      this.log.error({ err }, 'could not open the coordinator stream');
      this.scheduleReconnect();
      return;
    }
    const session: Session = {
      call,
      sessionId: '',
      welcomed: false,
      closed: false,
      heartbeatIntervalMs: this.options.heartbeatIntervalMs,
      coordinatorBeats: false,
      heartbeatTimer: null,
      welcomeTimer: null,
      silenceTimer: null,
      pending: [],
      flushTimer: null,
      flushSoon: false,
    };
    this.session = session;
    call.on('data', (msg: CoordinatorMessage__Output) => this.onMessage(session, msg));
    // 'status' always follows a failure and is where the session ends; this listener only
    // keeps the stream's 'error' from being unhandled.
    call.on('error', () => undefined);
    call.on('status', (status: grpc.StatusObject) => this.onStreamEnd(session, status));
    session.welcomeTimer = this.clock.setTimer(() => {
      session.welcomeTimer = null;
      if (session.welcomed || session.closed) return;
      this.log.warn(
        { welcomeTimeoutMs: this.options.welcomeTimeoutMs },
        'no welcome from coordinator in time',
      );
      call.cancel();
    }, this.options.welcomeTimeoutMs);
    this.write(session, {
      hello: {
        protocol_version: PROTOCOL_VERSION,
        location: this.options.location,
        capacity: this.capacity,
        node_name: this.options.nodeName,
      },
    });
  }

  private onMessage(session: Session, msg: CoordinatorMessage__Output): void {
    if (session !== this.session || session.closed) return;
    this.armSilenceTimer(session);
    switch (msg.body) {
      case 'welcome':
        if (msg.welcome)
          this.onWelcome(session, msg.welcome.session_id, msg.welcome.heartbeat_interval_ms);
        break;
      case 'runs':
        for (const run of msg.runs?.runs ?? []) this.startRun(session, run);
        break;
      case 'heartbeat':
        if (!session.coordinatorBeats) {
          session.coordinatorBeats = true;
          this.armSilenceTimer(session);
        }
        break;
      default:
        this.log.debug({ body: msg.body }, 'ignoring unknown coordinator message');
    }
  }

  private onWelcome(session: Session, sessionId: string, heartbeatIntervalMs: number): void {
    if (session.welcomed) return;
    session.welcomed = true;
    session.sessionId = sessionId;
    if (heartbeatIntervalMs > 0) session.heartbeatIntervalMs = heartbeatIntervalMs;
    if (session.welcomeTimer) this.clock.clearTimer(session.welcomeTimer);
    session.welcomeTimer = null;
    this.isConnected = true;
    this.failedAttempts = 0;
    this.log.info({ sessionId, coordinator: this.options.coordinator }, 'connected to coordinator');
    this.scheduleHeartbeat(session);
    if (!this.readyDone) {
      this.readyDone = true;
      this.resolveReady();
    }
    this.emit('connected', sessionId);
  }

  private scheduleHeartbeat(session: Session): void {
    session.heartbeatTimer = this.clock.setTimer(() => {
      session.heartbeatTimer = null;
      if (session.closed) return;
      this.write(session, { heartbeat: { sent_at_ms: this.clock.now() } });
      this.scheduleHeartbeat(session);
    }, session.heartbeatIntervalMs);
  }

  /**
   * (Re)start the coordinator-silence watchdog. Armed only once the coordinator has shown
   * it sends heartbeats, so a coordinator that does not is never mistaken for a dead one.
   */
  private armSilenceTimer(session: Session): void {
    if (!session.coordinatorBeats) return;
    if (session.silenceTimer) this.clock.clearTimer(session.silenceTimer);
    const limitMs = session.heartbeatIntervalMs * SILENT_HEARTBEATS;
    session.silenceTimer = this.clock.setTimer(() => {
      session.silenceTimer = null;
      if (session.closed) return;
      this.log.warn({ silentMs: limitMs }, 'coordinator silent; reconnecting');
      session.call.cancel();
    }, limitMs);
  }

  private startRun(session: Session, run: RunRequest__Output): void {
    const pool = this.pool;
    if (!pool) return;
    if (!isCheckName(run.check_name)) {
      this.queueResult(session, run, {
        ok: false,
        httpStatusCode: 0,
        error: `0 - Unknown check ${JSON.stringify(run.check_name)}`,
        responseTimeMs: 0,
        startedAtMs: this.clock.now(),
        detail: { unsupported: true },
      });
      return;
    }
    pool.run({ checkName: run.check_name, url: run.url, timeoutMs: run.timeout_ms || 30_000 }).then(
      (result) => this.queueResult(session, run, result),
      (err: unknown) => {
        // A fault of the pool, not of the site: report nothing, the coordinator re-runs it.
        if (!this.stopping) {
          this.log.error(
            { err, runId: run.run_id, checkId: run.check_id },
            'check run failed in the pool',
          );
        }
      },
    );
  }

  /**
   * Queue a finished run's result. Good results wait up to RESULT_FLUSH_WINDOW_MS (or until
   * RESULT_BATCH_MAX are pending) to share one message; a failed one goes out in the next turn,
   * together with everything pending.
   */
  private queueResult(session: Session, run: RunRequest__Output, result: CheckTaskResult): void {
    if (session.closed) {
      this.log.debug(
        { runId: run.run_id, checkId: run.check_id },
        'dropping result of a closed stream',
      );
      return;
    }
    session.pending.push(toRunResult(run, result));
    if (session.pending.length >= RESULT_BATCH_MAX) {
      this.flushResults(session);
    } else if (!result.ok) {
      if (session.flushSoon) return;
      session.flushSoon = true;
      setImmediate(() => this.flushResults(session));
    } else if (session.flushTimer === null && !session.flushSoon) {
      session.flushTimer = this.clock.setTimer(
        () => this.flushResults(session),
        RESULT_FLUSH_WINDOW_MS,
      );
    }
  }

  /** Write every pending result of `session` in one ResultBatch. */
  private flushResults(session: Session): void {
    if (session.flushTimer) this.clock.clearTimer(session.flushTimer);
    session.flushTimer = null;
    session.flushSoon = false;
    const results = session.pending;
    session.pending = [];
    if (results.length > 0 && !session.closed) this.write(session, { results: { results } });
  }

  private write(session: Session, msg: ProbeMessage): void {
    if (session.closed) return;
    try {
      session.call.write(msg);
    } catch (err) {
      // A write racing the stream's end; the 'status' handler reconnects.
      this.log.debug({ err }, 'write to a closing coordinator stream failed');
    }
  }

  private onStreamEnd(session: Session, status: grpc.StatusObject): void {
    this.closeSession(session);
    if (session !== this.session) return;
    this.session = null;
    this.isConnected = false;
    if (this.stopping) return;
    const end: StreamEnd = { code: status.code, details: status.details, at: this.clock.now() };
    this.lastEnd = end;
    const { level, message } = describeStreamEnd(
      status,
      this.options.credentials?._isSecure() ?? false,
    );
    const retryInMs = this.scheduleReconnect();
    this.log[level](
      { code: grpc.status[status.code], details: status.details, retryInMs },
      message,
    );
    this.emit('disconnected', end);
  }

  /** Schedule the next attempt: initial delay doubling to the cap, ±10 % jitter. */
  private scheduleReconnect(): number {
    if (this.stopping) return 0;
    this.failedAttempts += 1;
    const delayMs = backoffDelayMs(this.failedAttempts, {
      initialMs: this.options.initialBackoffMs,
      maxMs: this.options.maxBackoffMs,
      // Probes that lost the same coordinator should not all knock again in the same ms.
      jitter: 0.1,
    });
    this.reconnectTimer = this.clock.setTimer(() => this.connect(), delayMs);
    return delayMs;
  }

  /** Mark a session over and stop its timers; pending results are dropped. */
  private closeSession(session: Session): void {
    if (session.closed) return;
    session.closed = true;
    session.pending = [];
    const timers = [
      session.heartbeatTimer,
      session.welcomeTimer,
      session.silenceTimer,
      session.flushTimer,
    ];
    for (const t of timers) if (t) this.clock.clearTimer(t);
    session.heartbeatTimer = session.welcomeTimer = session.silenceTimer = null;
    session.flushTimer = null;
  }
}
