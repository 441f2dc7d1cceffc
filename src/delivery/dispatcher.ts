/**
 * The webhook dispatcher (CONTRACT §6): reads the durable outbox, POSTs each event's stored
 * bytes with its stored signature, records every attempt, retries with exponential backoff
 * until a 200, keeps per-monitor order, and picks up where it left off after a restart.
 */
import { Agent, request } from 'undici';
import { backoffDelayMs, type BackoffOptions } from '../common/backoff.js';
import type { Clock, TimerHandle } from '../common/clock.js';
import { webhookAttempts } from '../common/metrics.js';
import type { Logger } from '../common/logger.js';
import type { DeliveryAttempt, OutboxEvent } from '../domain/events.js';
import type { Sequences, Store } from '../coordinator/store/store.js';
import {
  allowPrivateFromEnv,
  internalDestinationProblem,
  publicOnlyLookup,
} from './address-policy.js';
import { Outbox } from './outbox.js';

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
  /** Attempts in flight at once to one receiver host, so a hung one cannot hog. @default 8 */
  maxPerHost?: number;
  /** Allow loopback/private receivers. @default `VIGIL_WEBHOOK_ALLOW_PRIVATE=1` in the env */
  allowPrivate?: boolean;
  /** Delivered and failed events are forgotten after this, ms. @default 30 days */
  retentionMs?: number;
  /** Injectable randomness for the jitter. */
  random?: () => number;
}

export const DEFAULT_BACKOFF: BackoffOptions = { initialMs: 10_000, maxMs: 3_600_000, jitter: 0.1 };

/**
 * Delivers outbox events: `load()` the stored ones, `start()`, then `enqueue()` each new
 * event after it is stored; `stop()` waits for attempts in flight to be recorded.
 */
export class Dispatcher {
  private readonly o: Required<Omit<DispatcherOptions, 'random'>> & { random: () => number };
  private readonly agent: Agent;
  /** Every event, for listing and redelivery. */
  readonly outbox: Outbox;
  /** monitor id → its pending events, in delivery order (only the head is ever attempted). */
  private readonly queues = new Map<number, OutboxEvent[]>();
  private readonly inFlight = new Set<number>();
  /** receiver host → attempts in flight */
  private readonly perHost = new Map<string, number>();
  private retentionTimer: TimerHandle | null = null;
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
      maxPerHost: 8,
      allowPrivate: allowPrivateFromEnv(),
      retentionMs: 30 * 24 * 3600 * 1000,
      random: Math.random,
      ...opts,
    };
    this.outbox = new Outbox(this.o.store);
    this.agent = new Agent({
      connections: this.o.maxPerHost,
      keepAliveTimeout: 4_000,
      ...(this.o.allowPrivate ? {} : { connect: { lookup: publicOnlyLookup } }),
    });
  }

  /** Mirror a loaded outbox and queue its pending events. */
  load(events: readonly OutboxEvent[]): void {
    this.outbox.load(events);
    for (const e of this.outbox.pending()) this.queue(e);
  }

  /** Queue a new event that is already in the store. */
  enqueue(event: OutboxEvent): void {
    this.outbox.add(event);
    this.queue(event);
    this.pump();
  }

  private queue(event: OutboxEvent): void {
    let q = this.queues.get(event.monitorId);
    if (!q) this.queues.set(event.monitorId, (q = []));
    q.push(event);
  }

  /**
   * Send a delivered or failed event again (issue 4 redelivery): a new attempt chain — tries
   * count from 1, the 3-day limit starts now — under the same parent id, after the monitor's
   * pending events. Resolves once the change is stored.
   * @throws Error when the event is pending or unknown (the caller checks first).
   */
  async redeliver(eventId: number): Promise<OutboxEvent> {
    const event = this.outbox.get(eventId);
    if (!event || event.status === 'pending')
      throw new Error(`event ${eventId} cannot be redelivered`);
    const now = this.clock.now();
    const next: OutboxEvent = {
      ...event,
      status: 'pending',
      nextAttemptAt: now,
      chainStart: event.attempts.length,
      chainStartedAt: now,
    };
    await this.o.store.write([{ kind: 'event', id: next.id, value: next }]);
    Object.assign(event, next);
    this.queue(event);
    this.pump();
    return event;
  }

  /** Stop sending a deleted monitor's events and forget them (CONTRACT §3). */
  async forgetMonitor(monitorId: number): Promise<void> {
    this.queues.delete(monitorId);
    await this.outbox.dropMonitor(monitorId);
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
    this.armRetention(0);
  }

  private armRetention(delayMs: number): void {
    this.retentionTimer = this.clock.setTimer(() => {
      void this.outbox
        .prune(this.clock.now() - this.o.retentionMs)
        .catch((err: unknown) => this.o.logger.error({ err }, 'outbox retention failed'))
        .finally(() => {
          if (this.running) this.armRetention(3_600_000);
        });
    }, delayMs);
  }

  /** Stop starting attempts and wait for those in flight to be recorded. */
  async stop(): Promise<void> {
    this.running = false;
    if (this.timer) this.clock.clearTimer(this.timer);
    if (this.retentionTimer) this.clock.clearTimer(this.retentionTimer);
    this.timer = this.retentionTimer = null;
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
      let head = q[0];
      while (head && head.status !== 'pending') {
        q.shift(); // settled meanwhile (defensive: only pending events belong in a queue)
        head = q[0];
      }
      if (!head) {
        this.queues.delete(monitorId);
        continue;
      }
      if (this.inFlight.has(head.id)) continue;
      const url = this.o.webhookUrl(head.userId);
      if (url === null) continue; // waits for a URL: kick()
      if (head.nextAttemptAt > now) {
        wakeAt = Math.min(wakeAt, head.nextAttemptAt);
        continue;
      }
      if (this.inFlight.size >= this.o.maxConcurrency) break;
      const host = hostOf(url);
      const busy = this.perHost.get(host) ?? 0;
      if (busy >= this.o.maxPerHost) continue; // woken again when one of them settles
      this.perHost.set(host, busy + 1);
      this.inFlight.add(head.id);
      const p = this.attempt(head, url)
        .catch((err: unknown) => this.o.logger.error({ err, eventId: head.id }, 'delivery failed'))
        .finally(() => {
          const left = (this.perHost.get(host) ?? 1) - 1;
          if (left > 0) this.perHost.set(host, left);
          else this.perHost.delete(host);
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

  private async attempt(event: OutboxEvent, url: string): Promise<void> {
    // The attempt id is made durable before the POST, so X-Service-Webhook is never reused.
    const attemptId = this.o.seq.attempt++;
    // The parent id is the receivers' idempotency key: fixed (and stored with the attempt id)
    // before the first POST, the same on every later try, across crashes and redelivery chains.
    const parent = event.parentAttemptId ?? attemptId;
    const tryNo = event.attempts.length - (event.chainStart ?? 0) + 1;
    await this.o.store.write([
      { kind: 'event', id: event.id, value: { ...event, parentAttemptId: parent } },
      { kind: 'seq', value: this.o.seq }, // the live object, serialized at flush
    ]);
    event.parentAttemptId = parent;

    const started = this.clock.now();
    const t0 = performance.now();
    let status: number | null = null;
    let error: string | null = null;
    const refused = this.o.allowPrivate ? null : internalDestinationProblem(url);
    try {
      if (refused) throw Object.assign(new Error(refused), { code: 'EINTERNALADDRESS' });
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
    // Work on a copy and apply it only once stored: until then the event stays `pending`, so a
    // redelivery racing with this write is refused (409) instead of queueing it twice.
    const next: OutboxEvent = {
      ...event,
      parentAttemptId: parent,
      attempts: [...event.attempts, record],
    };
    const now = this.clock.now();
    if (status === 200) {
      next.status = 'delivered';
    } else if (now - (event.chainStartedAt ?? event.createdAt) >= this.o.giveUpAfterMs) {
      next.status = 'failed';
    } else {
      next.nextAttemptAt = now + backoffDelayMs(tryNo, this.o.backoff, this.o.random);
    }
    // The monitor was deleted while this POST was in flight: its events are gone for good.
    if (this.queues.get(event.monitorId)?.[0] !== event) return;
    await this.o.store.write([{ kind: 'event', id: event.id, value: next }]);
    Object.assign(event, next);
    webhookAttempts.inc({ outcome: event.status === 'pending' ? 'retry' : event.status });
    const log = { eventId: event.id, monitorId: event.monitorId, try: tryNo, status, error };
    if (event.status === 'pending') this.o.logger.warn(log, 'webhook not accepted, will retry');
    else this.o.logger.info(log, `webhook ${event.status}`);
    if (event.status !== 'pending') {
      const q = this.queues.get(event.monitorId);
      if (q && q[0] === event) q.shift();
    }
  }
}

function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return url;
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
  if (code === 'EINTERNALADDRESS') return e.message ?? 'Internal address not allowed';
  if (code === 'ECONNRESET' || code === 'UND_ERR_SOCKET') return 'Connection reset';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return `DNS lookup failed (${code})`;
  return e.message ?? String(err);
}
