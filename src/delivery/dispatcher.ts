/**
 * The webhook dispatcher (CONTRACT §6): reads the durable outbox, POSTs each event's stored
 * bytes with its stored signature, records every attempt, retries with exponential backoff
 * until a 200, keeps per-monitor order, and picks up where it left off after a restart.
 */
import { Agent, request } from 'undici';
import { backoffDelayMs, type BackoffOptions } from '../common/backoff.js';
import type { Clock, TimerHandle } from '../common/clock.js';
import type { Logger } from '../common/logger.js';
import type { DeliveryAttempt, OutboxEvent } from '../domain/events.js';
import type { Sequences, Store } from '../coordinator/store/store.js';

/** `User-Agent` of every webhook (spec §6: `<service_name>/<major>.<minor>`). */
export const WEBHOOK_USER_AGENT = 'Vigil/1.0';

export interface DispatcherOptions {
  clock: Clock;
  store: Store;
  /** The live id sequences; attempt ids come from `seq.attempt`. */
  seq: Sequences;
  /** The user's current webhook URL, or null (events then wait until one is set). */
  webhookUrl: (userId: number) => string | null;
  logger: Logger;
  /** Per-attempt timeout, ms. @default 10000 (CONTRACT §6) */
  timeoutMs?: number;
  /** Retry schedule. @default 10 s doubling to 1 h, ±10 % jitter (CONTRACT §6) */
  backoff?: BackoffOptions;
  /** Give up (status `failed`) once an event is this old, ms. @default 3 days */
  giveUpAfterMs?: number;
  /** Attempts in flight at once, all receivers together. @default 64 */
  maxConcurrency?: number;
  /** Injectable randomness for the jitter. */
  random?: () => number;
}

export const DEFAULT_BACKOFF: BackoffOptions = { initialMs: 10_000, maxMs: 3_600_000, jitter: 0.1 };

export class Dispatcher {
  private readonly o: Required<Omit<DispatcherOptions, 'random'>> & { random: () => number };
  private readonly agent: Agent;
  /** monitor id → its pending events, ascending id (only the head is ever attempted). */
  private readonly queues = new Map<number, OutboxEvent[]>();
  private readonly inFlight = new Set<number>();
  private readonly settled = new Set<Promise<void>>();
  private timer: TimerHandle | null = null;
  private timerAt = Infinity;
  private running = false;

  constructor(opts: DispatcherOptions) {
    this.o = {
      timeoutMs: 10_000,
      backoff: DEFAULT_BACKOFF,
      giveUpAfterMs: 3 * 24 * 3600 * 1000,
      maxConcurrency: 64,
      random: Math.random,
      ...opts,
    };
    this.agent = new Agent({ connections: 8, keepAliveTimeout: 4_000 });
  }

  /** Queue the pending events of a loaded outbox (any order). */
  load(events: readonly OutboxEvent[]): void {
    for (const e of [...events].sort((a, b) => a.id - b.id)) {
      if (e.status === 'pending') this.enqueue(e);
    }
  }

  /** Queue an event that is already in the store. */
  enqueue(event: OutboxEvent): void {
    let q = this.queues.get(event.monitorId);
    if (!q) this.queues.set(event.monitorId, (q = []));
    q.push(event);
    this.pump();
  }

  /** Drop a monitor's pending events from memory (they stay in the store as they are). */
  forgetMonitor(monitorId: number): void {
    this.queues.delete(monitorId);
  }

  /** Re-examine queues now, e.g. after a webhook URL was set. */
  kick(): void {
    this.pump();
  }

  /** Pending events in memory. */
  get depth(): number {
    let n = 0;
    for (const q of this.queues.values()) n += q.length;
    return n;
  }

  start(): void {
    this.running = true;
    this.pump();
  }

  /** Stop starting attempts and wait for those in flight to be recorded. */
  async stop(): Promise<void> {
    this.running = false;
    if (this.timer) this.clock.clearTimer(this.timer);
    this.timer = null;
    await Promise.allSettled([...this.settled]);
    await this.agent.close();
  }

  private get clock(): Clock {
    return this.o.clock;
  }

  private pump(): void {
    if (!this.running) return;
    const now = this.clock.now();
    let wakeAt = Infinity;
    for (const [monitorId, q] of this.queues) {
      const head = q[0];
      if (!head) {
        this.queues.delete(monitorId);
        continue;
      }
      if (this.inFlight.has(head.id)) continue;
      if (this.o.webhookUrl(head.userId) === null) continue; // waits for a URL: kick()
      if (head.nextAttemptAt > now) {
        wakeAt = Math.min(wakeAt, head.nextAttemptAt);
        continue;
      }
      if (this.inFlight.size >= this.o.maxConcurrency) break;
      this.inFlight.add(head.id);
      const p = this.attempt(head)
        .catch((err: unknown) => this.o.logger.error({ err, eventId: head.id }, 'delivery failed'))
        .finally(() => {
          this.inFlight.delete(head.id);
          this.settled.delete(p);
          this.pump();
        });
      this.settled.add(p);
    }
    if (wakeAt < this.timerAt) {
      if (this.timer) this.clock.clearTimer(this.timer);
      this.timerAt = wakeAt;
      this.timer = this.clock.setTimer(() => {
        this.timer = null;
        this.timerAt = Infinity;
        this.pump();
      }, wakeAt - now);
    }
  }

  private async attempt(event: OutboxEvent): Promise<void> {
    const url = this.o.webhookUrl(event.userId);
    if (url === null) return;
    // The attempt id is made durable before the POST, so X-Service-Webhook is never reused.
    const attemptId = this.o.seq.attempt++;
    const parent = event.parentAttemptId ?? attemptId;
    const tryNo = event.attempts.length + 1;
    await this.o.store.write([
      { kind: 'event', id: event.id, value: { ...event, parentAttemptId: parent } },
      { kind: 'seq', value: this.o.seq },
    ]);
    event.parentAttemptId = parent;

    const started = this.clock.now();
    const t0 = performance.now();
    let status: number | null = null;
    let error: string | null = null;
    try {
      const res = await request(url, {
        method: 'POST',
        body: event.body,
        headers: {
          'content-type': 'application/json',
          'user-agent': WEBHOOK_USER_AGENT,
          'x-service-webhook': String(attemptId),
          'x-service-parent-webhook': String(parent),
          'x-service-current-try': String(tryNo),
          'x-service-signature': event.signature,
        },
        dispatcher: this.agent,
        headersTimeout: this.o.timeoutMs,
        bodyTimeout: this.o.timeoutMs,
        signal: AbortSignal.timeout(this.o.timeoutMs),
      });
      status = res.statusCode;
      await res.body.dump({ limit: 64 * 1024 }).catch(() => undefined);
    } catch (err) {
      error = describeFailure(err, this.o.timeoutMs);
    }
    const record: DeliveryAttempt = {
      id: attemptId,
      try: tryNo,
      at: started,
      url,
      status,
      error,
      durationMs: Math.round(performance.now() - t0),
    };
    event.attempts = [...event.attempts, record];
    const now = this.clock.now();
    if (status === 200) {
      event.status = 'delivered';
    } else if (now - event.createdAt >= this.o.giveUpAfterMs) {
      event.status = 'failed';
    } else {
      event.nextAttemptAt = now + backoffDelayMs(tryNo, this.o.backoff, this.o.random);
    }
    await this.o.store.write([{ kind: 'event', id: event.id, value: event }]);
    const log = { eventId: event.id, monitorId: event.monitorId, try: tryNo, status, error };
    if (event.status === 'pending') this.o.logger.warn(log, 'webhook not accepted, will retry');
    else this.o.logger.info(log, `webhook ${event.status}`);
    if (event.status !== 'pending') {
      const q = this.queues.get(event.monitorId);
      if (q && q[0] === event) q.shift();
    }
  }
}

function describeFailure(err: unknown, timeoutMs: number): string {
  const e = err as { code?: string; name?: string; message?: string; cause?: { code?: string } };
  const code = e.code ?? e.cause?.code;
  if (
    e.name === 'TimeoutError' ||
    code === 'UND_ERR_HEADERS_TIMEOUT' ||
    code === 'UND_ERR_BODY_TIMEOUT'
  ) {
    return `Timed out after ${timeoutMs / 1000} s`;
  }
  if (code === 'ECONNREFUSED') return 'Connection refused';
  if (code === 'ECONNRESET' || code === 'UND_ERR_SOCKET') return 'Connection reset';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return `DNS lookup failed (${code})`;
  return e.message ?? String(err);
}
