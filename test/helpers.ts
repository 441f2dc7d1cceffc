/**
 * Shared test helpers: temp data dirs that clean up after themselves, a quiet logger, real-time
 * polling for work that crosses real I/O (LevelDB, sockets) while time itself is a
 * ManualClock, a real loopback webhook receiver, and a fake in-process probe session — the
 * only stand-in the coordinator tests use, plugged in where the gRPC server plugs in its own.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import { connect, createServer as createTcpServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import type { Logger } from '../src/common/logger.js';
import type { ProbeSession, Run, RunRequestMessage } from '../src/coordinator/probe-registry.js';
import type { ProbeResult, Scheduler } from '../src/coordinator/scheduler.js';
import type { Sequences, Store } from '../src/coordinator/store/store.js';
import { signWebhook } from '../src/delivery/signature.js';
import type { OutboxEvent } from '../src/domain/events.js';

/** Something that runs cleanup functions after a test (node:test's TestContext, or `after`). */
export interface Cleanup {
  after(fn: () => unknown): void;
}

/**
 * A fresh directory under the OS temp dir, removed after the test.
 * @param t the test context whose `after` hook removes it
 */
export async function tempDir(t: Cleanup, prefix = 'vigil-test-'): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

// Modules that log through the process-wide logger (common/logger.ts reads this when it first
// logs) stay quiet in tests unless asked otherwise.
process.env.VIGIL_LOG_LEVEL ??= process.env.VIGIL_TEST_LOG ?? 'silent';

/** A logger that drops everything; `VIGIL_TEST_LOG=debug` shows the logs on stderr. */
export const quietLogger: Logger = pino(
  { level: process.env.VIGIL_TEST_LOG ?? 'silent' },
  pino.destination({ fd: 2, sync: true }),
);

/** Real-time sleep, ms. */
export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/**
 * Poll `pred` in real time (every few ms) until it returns a truthy value, which is returned.
 * Fails the test with `what` when `timeoutMs` pass first.
 */
export async function waitFor<T>(
  pred: () => T | Promise<T>,
  what: string,
  timeoutMs = 5000,
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await pred();
    if (v) return v as NonNullable<T>;
    if (Date.now() > deadline) assert.fail(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(3);
  }
}

/** One POST (or any request) the receiver saw. */
export interface ReceivedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  /** The raw body bytes, exactly as received. */
  raw: Buffer;
  /** `raw` as UTF-8. */
  body: string;
  /** Status the receiver answered. */
  status: number;
  /** Real time (Date.now()) when the request was complete. */
  receivedAt: number;
}

/** A real HTTP server on 127.0.0.1, port 0, recording every request. */
export interface Receiver {
  /** `http://<host>:<port>/hook` (host 127.0.0.1 unless chosen) */
  readonly url: string;
  readonly port: number;
  readonly requests: ReceivedRequest[];
  /** Decides the status of each request; replaceable at any time. */
  respond: (req: ReceivedRequest, index: number) => number;
  close(): Promise<void>;
}

/**
 * Start a webhook receiver. `respond` returns the status for each request (default 200);
 * `statuses([500, 500, 200])` is a ready-made sequence (the last one repeats).
 * @param opts.host loopback address to listen on. @default '127.0.0.1' (Linux answers on all
 *   of 127.0.0.0/8, so '127.0.0.2' is another receiver host on the same machine)
 */
export async function startReceiver(
  respond: (req: ReceivedRequest, index: number) => number = () => 200,
  opts: { host?: string } = {},
): Promise<Receiver> {
  const host = opts.host ?? '127.0.0.1';
  const requests: ReceivedRequest[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      const rec: ReceivedRequest = {
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        raw,
        body: raw.toString('utf8'),
        status: 0,
        receivedAt: Date.now(),
      };
      rec.status = receiver.respond(rec, requests.length);
      requests.push(rec);
      if (rec.status >= 300 && rec.status < 400) res.setHeader('location', '/redirected');
      res.statusCode = rec.status;
      res.end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const port = (server.address() as AddressInfo).port;
  const receiver: Receiver = {
    url: `http://${host}:${port}/hook`,
    port,
    requests,
    respond,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  return receiver;
}

/** A `respond` that answers the given statuses in turn, repeating the last one. */
export function statuses(list: number[]): (req: ReceivedRequest, index: number) => number {
  return (_req, index) => list[Math.min(index, list.length - 1)] ?? 200;
}

/**
 * A probe session without a network: what the gRPC server registers for a connected probe,
 * with `send` recording the run requests instead of writing them to a stream.
 */
export class FakeSession implements ProbeSession {
  readonly inflight = new Map<number, Run>();
  /** Every request ever sent to this session, in order. */
  readonly sent: RunRequestMessage[] = [];
  lastSeenAt: number;
  closedReason: string | null = null;
  private read = 0;

  constructor(
    readonly id: string,
    readonly location: string,
    readonly capacity = 50,
    now = 0,
  ) {
    this.lastSeenAt = now;
  }

  send(requests: RunRequestMessage[]): void {
    this.sent.push(...requests);
  }

  close(reason: string): void {
    this.closedReason = reason;
  }

  /** Requests sent since the previous `take()`. */
  take(): RunRequestMessage[] {
    const out = this.sent.slice(this.read);
    this.read = this.sent.length;
    return out;
  }

  /** Number of requests not yet taken. */
  get unread(): number {
    return this.sent.length - this.read;
  }
}

/** How a fake probe answers one run. */
export interface Answer {
  ok: boolean;
  /** @default 200 when ok, 503 otherwise */
  status?: number;
  /** @default '' when ok, `'<status> - Service Unavailable'` otherwise */
  error?: string;
  /** Start of the run, ms since epoch. */
  startedAt: number;
}

/** Report a run's result the way the gRPC server does: `scheduler.resultArrived`. */
export function answer(
  scheduler: Scheduler,
  session: FakeSession,
  req: Pick<RunRequestMessage, 'run_id' | 'check_id'>,
  a: Answer,
): void {
  const status = a.status ?? (a.ok ? 200 : 503);
  const result: ProbeResult = {
    run_id: req.run_id,
    check_id: req.check_id,
    ok: a.ok,
    http_status_code: status,
    error: a.error ?? (a.ok ? '' : `${status} - Service Unavailable`),
    response_time_ms: 42,
    started_at_ms: a.startedAt,
    detail_json: '',
  };
  scheduler.resultArrived(session.id, result);
}

/** What differs between the outbox events the delivery tests make. */
export interface NewEvent {
  userId: number;
  monitorId: number;
  checkId: number;
  type: OutboxEvent['type'];
  /** The serialized webhook body. */
  body: string;
  /** The user's API token: the signing key. */
  token: string;
  /** Creation time, ms since epoch (also the first try's due time). */
  at: number;
}

/**
 * Write a new pending outbox event with the next id from `seq`, as a check actor would
 * (event and sequence in one batch), and return it.
 */
export async function storeNewEvent(
  store: Store,
  seq: Sequences,
  e: NewEvent,
): Promise<OutboxEvent> {
  const event: OutboxEvent = {
    id: seq.event++,
    userId: e.userId,
    monitorId: e.monitorId,
    checkId: e.checkId,
    type: e.type,
    body: e.body,
    signature: signWebhook(e.body, e.token),
    createdAt: e.at,
    status: 'pending',
    parentAttemptId: null,
    attempts: [],
    nextAttemptAt: e.at,
  };
  await store.write([
    { kind: 'event', id: event.id, value: event },
    { kind: 'seq', value: seq },
  ]);
  return event;
}

/** A port of 127.0.0.1 nothing listens on (listened on, noted, closed). */
export async function deadPort(): Promise<number> {
  const server = createTcpServer();
  const port = await new Promise<number>((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)),
  );
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/**
 * Whether this machine lets a socket bind the source `address` (Linux loopback is a whole
 * /8; other systems may have only 127.0.0.1): one connection to a throw-away local server.
 */
export async function canBind(address: string): Promise<boolean> {
  const server = createTcpServer((socket) => socket.destroy());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  try {
    return await new Promise<boolean>((resolve) => {
      const socket = connect({ host: '127.0.0.1', port, localAddress: address });
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
  } finally {
    server.close();
  }
}
