/**
 * The check actor: the single owner of one check's state (ARCHITECTURE "Check actor"). It
 * handles one message at a time from its mailbox — probe results, re-check timers, settings
 * changes, enable/disable/delete — so nothing races. Every webhook comes out of a transition
 * and is written to the outbox in the same atomic batch as the new state (CONTRACT §6
 * durability) before the actor moves on.
 */
import type { Clock, TimerHandle } from '../common/clock.js';
import { verificationLatency } from '../common/metrics.js';
import type { Logger } from '../common/logger.js';
import type { Check, Monitor, User } from '../domain/check.js';
import { webhookBody, type OutboxEvent } from '../domain/events.js';
import type { RunOutcome } from '../domain/result.js';
import { recordRun } from '../domain/uptime.js';
import {
  applyCertificateResult,
  applyUptimeResult,
  type CheckState,
  type Effect,
} from '../domain/transition.js';
import { signWebhook } from '../delivery/signature.js';
import { Mailbox } from './mailbox.js';
import type { Scheduler } from './scheduler.js';
import type { Sequences, Store, StoreOp } from './store/store.js';

/** Messages a check actor accepts. */
export type CheckMessage =
  | { type: 'result'; outcome: RunOutcome }
  | { type: 'recheck' }
  | {
      type: 'update';
      intervalSeconds?: number;
      notificationThresholdSeconds?: number;
      expiryThresholdDays?: number | null;
    }
  | { type: 'enable' }
  | { type: 'disable' }
  | { type: 'delete' };

/** What an actor needs from the coordinator; shared by all actors. */
export interface ActorContext {
  clock: Clock;
  store: Store;
  scheduler: Scheduler;
  /** The live id sequences (written with every record that takes an id). */
  seq: Sequences;
  monitor(id: number): Monitor | undefined;
  user(id: number): User | undefined;
  /** Hand a persisted event to the dispatcher. */
  deliver(event: OutboxEvent): void;
  logger: Logger;
}

/** One check's state owner; see the file comment. Construct, then `resume()` once started. */
export class CheckActor {
  /** Settings; replaced (never mutated in place) on update. */
  check: Check;
  /** State as last persisted. */
  state: CheckState;
  private readonly mailbox: Mailbox<CheckMessage>;
  private recheckTimer: TimerHandle | null = null;
  private deleted = false;

  constructor(
    check: Check,
    state: CheckState,
    private readonly ctx: ActorContext,
  ) {
    this.check = check;
    this.state = state;
    this.mailbox = new Mailbox(
      (m) => this.handle(m),
      (err, m) =>
        ctx.logger.error({ err, checkId: this.check.id, msg: m.type }, 'check actor failed'),
    );
  }

  /** Queue a message; resolves once it is handled and persisted. */
  post(msg: CheckMessage): Promise<void> {
    return this.mailbox.post(msg);
  }

  /**
   * Put the check on the schedule after a (re)start: an open outage resumes its
   * verification or threshold re-check; otherwise the next run follows the last one by one
   * interval, or comes within 10 s when overdue (spread by id, so a restart has no herd).
   */
  resume(): void {
    if (!this.check.enabled) return;
    const now = this.ctx.clock.now();
    const intervalMs = this.check.intervalSeconds * 1000;
    const last = this.state.lastCheckAt;
    const spreadMs = (this.check.id * 7919) % Math.min(intervalMs, 10_000);
    const firstAt = last !== null && last + intervalMs > now ? last + intervalMs : now + spreadMs;
    this.schedule(firstAt);
    const outage = this.state.outage;
    if (outage && outage.verifiedVia === null) {
      this.ctx.scheduler.requestRun(this.check.id, 'verify', outage.detectedBy);
    } else if (outage && !outage.notified) {
      this.armRecheck(outage.detectedAt + this.check.notificationThresholdSeconds * 1000);
    }
  }

  private schedule(firstAt: number): void {
    const monitor = this.ctx.monitor(this.check.monitorId);
    if (!monitor) return;
    this.ctx.scheduler.add(
      {
        id: this.check.id,
        name: this.check.name,
        url: monitor.url,
        intervalSeconds: this.check.intervalSeconds,
        lastLocation: this.state.lastLocation,
      },
      firstAt,
    );
  }

  private async handle(msg: CheckMessage): Promise<void> {
    if (this.deleted) return;
    switch (msg.type) {
      case 'result':
        if (this.check.enabled) await this.applyResult(msg.outcome);
        return;
      case 'recheck':
        if (this.check.enabled && this.state.outage) {
          this.ctx.scheduler.requestRun(this.check.id, 'recheck', null);
        }
        return;
      case 'update':
        return this.update(msg);
      case 'enable':
        if (this.check.enabled) {
          // Already enabled: still run at once, as users expect from "enable".
          this.schedule(this.ctx.clock.now());
          return;
        }
        await this.persistCheck({ ...this.check, enabled: true });
        this.schedule(this.ctx.clock.now());
        return;
      case 'disable':
        if (!this.check.enabled) return;
        await this.persistCheck({ ...this.check, enabled: false });
        this.ctx.scheduler.remove(this.check.id);
        this.clearRecheck();
        return;
      case 'delete':
        this.deleted = true;
        this.ctx.scheduler.remove(this.check.id);
        this.clearRecheck();
        return;
    }
  }

  private async update(msg: Extract<CheckMessage, { type: 'update' }>): Promise<void> {
    const next: Check = {
      ...this.check,
      intervalSeconds: msg.intervalSeconds ?? this.check.intervalSeconds,
      notificationThresholdSeconds:
        msg.notificationThresholdSeconds ?? this.check.notificationThresholdSeconds,
      expiryThresholdDays:
        msg.expiryThresholdDays !== undefined
          ? msg.expiryThresholdDays
          : this.check.expiryThresholdDays,
    };
    await this.persistCheck(next);
    if (msg.intervalSeconds !== undefined && next.enabled) {
      this.ctx.scheduler.changeInterval(next.id, next.intervalSeconds);
    }
    const outage = this.state.outage;
    if (msg.notificationThresholdSeconds !== undefined && outage?.verifiedVia && !outage.notified) {
      this.armRecheck(outage.detectedAt + next.notificationThresholdSeconds * 1000);
    }
  }

  private async persistCheck(next: Check): Promise<void> {
    await this.ctx.store.write([{ kind: 'check', id: next.id, value: next }]);
    this.check = next;
  }

  private async applyResult(outcome: RunOutcome): Promise<void> {
    // A probe that cannot run this kind of check says so; that is no verdict on the site.
    if (outcome.detail?.unsupported === true) return;
    const step =
      this.check.name === 'uptime'
        ? applyUptimeResult(this.state, outcome, {
            notificationThresholdSeconds: this.check.notificationThresholdSeconds,
          })
        : applyCertificateResult(this.state, outcome, {
            expiryThresholdDays: this.check.expiryThresholdDays,
          });
    if (step.state === this.state) return;
    const state: CheckState = {
      ...step.state,
      stats: recordRun(step.state.stats, outcome.at, outcome.ok),
    };
    const ops: StoreOp[] = [
      { kind: 'state', id: this.check.id, value: state },
      {
        kind: 'result',
        value: {
          checkId: this.check.id,
          at: outcome.at,
          location: outcome.location,
          ok: outcome.ok,
          httpStatusCode: outcome.httpStatusCode,
          responseTimeMs: outcome.responseTimeMs,
          error: outcome.ok ? null : outcome.error,
        },
      },
    ];
    const events: OutboxEvent[] = [];
    for (const effect of step.effects) {
      if (effect.type !== 'event') continue;
      const event = this.buildEvent(effect.event);
      if (event) events.push(event);
    }
    for (const event of events) ops.push({ kind: 'event', id: event.id, value: event });
    if (events.length > 0) ops.push({ kind: 'seq', value: this.ctx.seq });
    await this.ctx.store.write(ops);
    const verified = state.outage?.verifiedVia && !this.state.outage?.verifiedVia;
    if (verified && state.outage) {
      verificationLatency.observe(Math.max(0, outcome.at - state.outage.detectedAt) / 1000);
    }
    this.state = state;
    for (const event of events) {
      this.ctx.logger.info(
        { checkId: this.check.id, eventId: event.id, type: event.type },
        'transition, webhook queued',
      );
      this.ctx.deliver(event);
    }
    for (const effect of step.effects) this.carryOut(effect);
    if (this.state.outage === null) this.clearRecheck();
  }

  private buildEvent(event: Extract<Effect, { type: 'event' }>['event']): OutboxEvent | null {
    const monitor = this.ctx.monitor(this.check.monitorId);
    const user = monitor && this.ctx.user(monitor.userId);
    if (!monitor || !user) return null;
    const body = JSON.stringify(webhookBody(event, monitor));
    return {
      id: this.ctx.seq.event++,
      userId: user.id,
      monitorId: monitor.id,
      checkId: this.check.id,
      type: event.type,
      body,
      signature: signWebhook(body, user.apiToken),
      createdAt: this.ctx.clock.now(),
      status: 'pending',
      parentAttemptId: null,
      attempts: [],
      nextAttemptAt: this.ctx.clock.now(),
    };
  }

  private carryOut(effect: Effect): void {
    if (effect.type === 'verify') {
      this.ctx.scheduler.requestRun(this.check.id, 'verify', effect.excludeLocation);
    } else if (effect.type === 'recheck') {
      this.armRecheck(effect.at);
    }
  }

  private armRecheck(at: number): void {
    this.clearRecheck();
    this.recheckTimer = this.ctx.clock.setTimer(() => {
      this.recheckTimer = null;
      void this.post({ type: 'recheck' }).catch(() => undefined);
    }, at - this.ctx.clock.now());
  }

  private clearRecheck(): void {
    if (this.recheckTimer) this.ctx.clock.clearTimer(this.recheckTimer);
    this.recheckTimer = null;
  }
}
