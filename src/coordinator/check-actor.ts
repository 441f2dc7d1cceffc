/**
 * The check actor: the single owner of one check's state (ARCHITECTURE "Check actor"). It
 * handles one message at a time from its mailbox — probe results, re-check timers, settings
 * changes, enable/disable/delete — so nothing races. Every webhook comes out of a transition
 * and is written to the outbox in the same atomic batch as the new state (CONTRACT §6
 * durability) before the actor moves on.
 *
 * A routine run — one that changes only the last-run fields and the uptime counters
 * (`isRoutineStep`) — is not written at once: the actor keeps it and the RoutineWriter writes
 * it, with those of every other check, within `ROUTINE_FLUSH_MS` (issue 7). A transition
 * writes the check's unsaved runs along with it, so the store never holds a transition without
 * the runs before it.
 */
import type { Clock, TimerHandle } from '../common/clock.js';
import { verificationLatency } from '../common/metrics.js';
import type { Logger } from '../common/logger.js';
import type { Check, Monitor, User } from '../domain/check.js';
import { webhookBody, type OutboxEvent } from '../domain/events.js';
import type { RunOutcome, StoredResult } from '../domain/result.js';
import { RunCounters } from '../domain/uptime.js';
import {
  applyCertificateResult,
  applyUptimeResult,
  isRoutineStep,
  type CheckState,
  type Effect,
  type Step,
} from '../domain/transition.js';
import { signWebhook } from '../delivery/signature.js';
import { Mailbox, type MailboxHandler } from './mailbox.js';
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
  /**
   * Have `takeUnsaved()` of `actor` written soon, in bulk (the RoutineWriter). Without it every
   * run is written at once, like a transition.
   */
  writeLater?(actor: CheckActor): void;
  logger: Logger;
}

/** One check's state owner; see the file comment. Construct, then `resume()` once started. */
export class CheckActor implements MailboxHandler<CheckMessage> {
  /** Settings; replaced (never mutated in place) on update. */
  check: Check;
  /** State as last applied (persisted, or about to be by the RoutineWriter). */
  state: CheckState;
  /** Uptime counters of every applied run, changed in place. */
  readonly counters: RunCounters;
  private readonly mailbox: Mailbox<CheckMessage>;
  private recheckTimer: TimerHandle | null = null;
  private deleted = false;
  /** Applied routine runs not yet handed to the store, oldest first; null when none. */
  private unsaved: StoredResult[] | null = null;
  /** Runs handed to the store whose write has not finished (still shown in the history). */
  private saving: StoredResult[] | null = null;
  /** `state` (with the counters' head) changed since it was last handed to the store. */
  private stateDirty = false;
  /** The counters opened a new hour since the full set was last handed to the store. */
  private statsDirty = false;

  constructor(
    check: Check,
    state: CheckState,
    private readonly ctx: ActorContext,
    counters: RunCounters = new RunCounters(),
  ) {
    this.check = check;
    this.state = state;
    this.counters = counters;
    this.mailbox = new Mailbox<CheckMessage>(this);
  }

  /** Queue a message; resolves once it is handled and persisted. */
  post(msg: CheckMessage): Promise<void> {
    return this.mailbox.post(msg);
  }

  /** Queue a message without waiting (probe results); failures are logged. */
  tell(msg: CheckMessage): void {
    this.mailbox.tell(msg);
  }

  /**
   * Applied runs the store may not have yet (their write has not finished), oldest first; the
   * history adds them, dropping those it already read from the store.
   */
  unsavedResults(): readonly StoredResult[] {
    if (!this.saving) return this.unsaved ?? [];
    return this.unsaved ? [...this.saving, ...this.unsaved] : this.saving;
  }

  /**
   * The ops that bring the store up to date with this check's routine runs; they count as
   * saved from now on (`unsavedWritten` follows). None once the check is deleted. Called by
   * the RoutineWriter.
   */
  takeUnsaved(): StoreOp[] {
    const ops: StoreOp[] = [];
    if (this.deleted) {
      this.unsaved = null;
      this.stateDirty = this.statsDirty = false;
      return ops;
    }
    if (this.stateDirty) {
      ops.push({ kind: 'state', id: this.check.id, value: this.state, head: this.counters.head() });
    }
    if (this.statsDirty) {
      ops.push({ kind: 'stats', id: this.check.id, value: this.counters.pack() });
    }
    this.takeResults(ops);
    this.stateDirty = this.statsDirty = false;
    return ops;
  }

  /**
   * The write of `ops` (from `takeUnsaved()`) finished: its runs are in the store, or, when
   * `ok` is false, unsaved again (the RoutineWriter writes them again later).
   */
  unsavedWritten(ops: readonly StoreOp[], ok: boolean): void {
    const results: StoredResult[] = [];
    for (const op of ops) {
      if (op.kind === 'result') results.push(op.value);
      else if (!ok && op.kind === 'state') this.stateDirty = true;
      else if (!ok && op.kind === 'stats') this.statsDirty = true;
    }
    this.settle(results, ok);
  }

  /** Move the unsaved runs into `ops` and count them as being saved. */
  private takeResults(ops: StoreOp[]): void {
    if (!this.unsaved) return;
    for (const value of this.unsaved) ops.push({ kind: 'result', value });
    this.saving = this.saving ? [...this.saving, ...this.unsaved] : this.unsaved;
    this.unsaved = null;
  }

  /** Runs whose write finished: no longer being saved; unsaved again when it failed. */
  private settle(results: StoredResult[], ok: boolean): void {
    if (results.length === 0) return;
    if (this.saving) {
      const done = new Set(results);
      const left = this.saving.filter((r) => !done.has(r));
      this.saving = left.length > 0 ? left : null;
    }
    if (!ok && !this.deleted) {
      this.unsaved = this.unsaved ? [...results, ...this.unsaved] : results;
    }
  }

  /** @internal Mailbox: a message that failed is logged. */
  messageFailed(err: unknown, msg: CheckMessage): void {
    this.ctx.logger.error({ err, checkId: this.check.id, msg: msg.type }, 'check actor failed');
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

  /** @internal Mailbox: one message, to the end; undefined when done synchronously. */
  handleMessage(msg: CheckMessage): Promise<void> | undefined {
    if (this.deleted) return;
    switch (msg.type) {
      case 'result':
        return this.check.enabled ? this.applyResult(msg.outcome) : undefined;
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
        return this.enable();
      case 'disable':
        return this.check.enabled ? this.disable() : undefined;
      case 'delete':
        this.deleted = true;
        this.unsaved = null;
        this.ctx.scheduler.remove(this.check.id);
        this.clearRecheck();
        return;
    }
  }

  private async enable(): Promise<void> {
    await this.persistCheck({ ...this.check, enabled: true });
    this.schedule(this.ctx.clock.now());
  }

  private async disable(): Promise<void> {
    await this.persistCheck({ ...this.check, enabled: false });
    this.ctx.scheduler.remove(this.check.id);
    this.clearRecheck();
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

  /**
   * Apply one run. A routine run only updates memory and is left to the RoutineWriter
   * (synchronous, returns undefined); a transition is written at once, with the events it
   * emits, before its effects are carried out.
   */
  private applyResult(outcome: RunOutcome): Promise<void> | undefined {
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
    if (this.counters.record(outcome.at, outcome.ok)) this.statsDirty = true;
    const result: StoredResult = {
      checkId: this.check.id,
      at: outcome.at,
      location: outcome.location,
      ok: outcome.ok,
      httpStatusCode: outcome.httpStatusCode,
      responseTimeMs: outcome.responseTimeMs,
      error: outcome.ok ? null : outcome.error,
    };
    if (this.ctx.writeLater && isRoutineStep(this.state, step)) {
      this.state = step.state;
      this.stateDirty = true;
      (this.unsaved ??= []).push(result);
      this.ctx.writeLater(this);
      return;
    }
    return this.transition(step, result, outcome);
  }

  /** Write a transition (state, counters, unsaved runs, this run, events) at once, then act. */
  private async transition(step: Step, result: StoredResult, outcome: RunOutcome): Promise<void> {
    const state = step.state;
    const ops: StoreOp[] = [
      { kind: 'state', id: this.check.id, value: state, head: this.counters.head() },
    ];
    if (this.statsDirty) {
      ops.push({ kind: 'stats', id: this.check.id, value: this.counters.pack() });
    }
    // Everything unsaved goes with this write; a bulk write running meanwhile finds nothing.
    this.takeResults(ops);
    const earlier: StoredResult[] = [];
    for (const op of ops) if (op.kind === 'result') earlier.push(op.value);
    ops.push({ kind: 'result', value: result });
    const events: OutboxEvent[] = [];
    for (const effect of step.effects) {
      if (effect.type !== 'event') continue;
      const event = this.buildEvent(effect.event);
      if (event) events.push(event);
    }
    for (const event of events) ops.push({ kind: 'event', id: event.id, value: event });
    if (events.length > 0) ops.push({ kind: 'seq', value: this.ctx.seq });
    const was = { state: this.stateDirty, stats: this.statsDirty };
    this.stateDirty = this.statsDirty = false;
    try {
      await this.ctx.store.write(ops);
    } catch (err) {
      if (!this.deleted) {
        this.stateDirty ||= was.state;
        this.statsDirty ||= was.stats;
      }
      this.settle(earlier, false);
      if (this.unsaved || this.stateDirty) this.ctx.writeLater?.(this);
      throw err;
    }
    this.settle(earlier, true);
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
