/**
 * The scheduler: when each enabled check runs and which probe runs it (ARCHITECTURE
 * "Scheduler"). Runs are spread over the interval by their own phase, a new or re-enabled
 * check runs at once, verification runs go to another location (CONTRACT §5), and no probe is
 * given more runs than its announced capacity (runs wait in a queue instead).
 */
import type { Clock, TimerHandle } from '../common/clock.js';
import type { Logger } from '../common/logger.js';
import type { CheckName } from '../domain/check.js';
import type { RunResult__Output } from '../generated/vigil/probe/v1/RunResult.js';
import type { RunOutcome, RunPurpose } from '../domain/result.js';
import { checkRuns, scheduleLag } from '../common/metrics.js';
import type { ProbeRegistry, ProbeSession, Run } from './probe-registry.js';
import { TimeHeap } from './time-heap.js';

/**
 * How far ahead of its planned start a scheduled run may be handed out, ms: when the timer fires
 * for the earliest due run, every run due within this much after it goes out too, as one batch
 * per probe. At 2,000 runs/s that is one timer and one gRPC message per probe every ~50 ms
 * instead of one per run (each wake-up of the event loop and each message costs more CPU than
 * the run's own bookkeeping; issue 7). A run starts at most this much early, never later.
 */
export const DISPATCH_AHEAD_MS = 50;

/** What the scheduler needs to know about a check. */
export interface SchedulableCheck {
  id: number;
  name: CheckName;
  url: string;
  intervalSeconds: number;
  /** Where it last ran (from its stored state), so the next run goes elsewhere. */
  lastLocation?: string | null;
}

/** A result as it arrives from a probe: the proto RunResult (src/generated, never edited). */
export type ProbeResult = RunResult__Output;

export interface SchedulerOptions {
  clock: Clock;
  registry: ProbeRegistry;
  /** Receives every accepted result; late, duplicate and unknown results are dropped. */
  onOutcome: (checkId: number, outcome: RunOutcome) => void;
  logger: Logger;
  /** Run budget, ms. @default 30000 (CONTRACT §5) */
  runTimeoutMs?: number;
  /** Extra wait past the budget before a run counts as lost, ms. @default 10000 */
  lostGraceMs?: number;
  /** With no other location connected, the detector re-checks after this, ms. @default 5000 */
  sameLocationVerifyDelayMs?: number;
  /** See DISPATCH_AHEAD_MS; 0 hands each run out exactly when due. @default DISPATCH_AHEAD_MS */
  dispatchAheadMs?: number;
}

/** One scheduled check; plain fields, no nested objects (there are 100,000s of them). */
interface Entry {
  id: number;
  name: CheckName;
  url: string;
  intervalMs: number;
  /** Next planned start, ms since epoch. */
  nextAt: number;
  /**
   * Taken from one counter on every (re)schedule, so heap items of any earlier schedule — also
   * of an entry that was removed and added again — are stale.
   */
  version: number;
  /** The scheduled run in flight, if any (one at a time per check). */
  scheduledRunId: number | null;
  /**
   * Where and when this check last ran, for rotation over locations: `[location, ms since
   * epoch, location, ms, …]`, one pair per location (a Map per check costs four times more).
   */
  ranAt: Array<string | number>;
}

/** When the check of `entry` last ran in `location`, ms since epoch; 0 = never. */
function ranAtOf(entry: Entry, location: string): number {
  const r = entry.ranAt;
  for (let i = 0; i < r.length; i += 2) if (r[i] === location) return r[i + 1] as number;
  return 0;
}

/** Note that the check of `entry` ran in `location` at `at` (ms since epoch). */
function setRanAt(entry: Entry, location: string, at: number): void {
  const r = entry.ranAt;
  for (let i = 0; i < r.length; i += 2) {
    if (r[i] === location) {
      r[i + 1] = at;
      return;
    }
  }
  entry.ranAt = [...r, location, at]; // exact size, not push()'s spare room
}

/** A verification or re-check waiting for a probe. */
interface Urgent {
  checkId: number;
  purpose: RunPurpose;
  excludeLocation: string | null;
  excludeUntil: number;
}

/** When each check runs and on which probe; see the file comment. All times via the Clock. */
export class Scheduler {
  private readonly clock: Clock;
  private readonly registry: ProbeRegistry;
  private readonly log: Logger;
  private readonly runTimeoutMs: number;
  private readonly lostGraceMs: number;
  private readonly sameLocationDelayMs: number;
  private readonly dispatchAheadMs: number;
  private readonly onOutcome: SchedulerOptions['onOutcome'];

  private readonly entries = new Map<number, Entry>();
  private readonly heap = new TimeHeap();
  /** Source of Entry.version (wraps after 2^32 schedules, far beyond a process's life). */
  private versionSeq = 0;
  private heapTimer: TimerHandle | null = null;
  private heapTimerAt = Infinity;
  /** Scheduled runs that are due, waiting for probe capacity (FIFO, head index). */
  private regular: number[] = [];
  /** Planned start of each `regular` item (same index), ms since epoch. */
  private regularDue: number[] = [];
  private regularHead = 0;
  private urgent: Urgent[] = [];
  private urgentTimer: TimerHandle | null = null;
  private sweepTimer: TimerHandle | null = null;
  private runSeq = 0;
  private running = false;

  constructor(opts: SchedulerOptions) {
    this.clock = opts.clock;
    this.registry = opts.registry;
    this.log = opts.logger;
    this.onOutcome = opts.onOutcome;
    this.runTimeoutMs = opts.runTimeoutMs ?? 30_000;
    this.lostGraceMs = opts.lostGraceMs ?? 10_000;
    this.sameLocationDelayMs = opts.sameLocationVerifyDelayMs ?? 5_000;
    this.dispatchAheadMs = opts.dispatchAheadMs ?? DISPATCH_AHEAD_MS;
  }

  /** Begin firing timers (checks may be added before). */
  start(): void {
    this.running = true;
    this.armHeap();
  }

  stop(): void {
    this.running = false;
    for (const t of [this.heapTimer, this.urgentTimer, this.sweepTimer]) {
      if (t) this.clock.clearTimer(t);
    }
    this.heapTimer = this.urgentTimer = this.sweepTimer = null;
    this.heapTimerAt = Infinity;
  }

  /** Number of checks scheduled. */
  get size(): number {
    return this.entries.size;
  }

  /** Runs due but waiting for probe capacity. */
  get backlog(): number {
    return this.regular.length - this.regularHead + this.urgent.length;
  }

  /**
   * Schedule `check` with its first run at `firstAt` (ms since epoch; now = at once).
   * Replaces an existing entry for the same id.
   */
  add(check: SchedulableCheck, firstAt: number): void {
    const old = this.entries.get(check.id);
    const version = (this.versionSeq = (this.versionSeq + 1) >>> 0);
    if (old) {
      old.name = check.name;
      old.url = check.url;
      old.intervalMs = check.intervalSeconds * 1000;
      old.nextAt = firstAt;
      old.version = version;
    } else {
      this.entries.set(check.id, {
        id: check.id,
        name: check.name,
        url: check.url,
        intervalMs: check.intervalSeconds * 1000,
        nextAt: firstAt,
        version,
        scheduledRunId: null,
        ranAt: check.lastLocation ? [check.lastLocation, this.clock.now()] : [],
      });
    }
    this.push(firstAt, check.id, version);
  }

  /** New interval: the next run is one (new) interval from now (CONTRACT §3). */
  changeInterval(checkId: number, intervalSeconds: number): void {
    const entry = this.entries.get(checkId);
    if (!entry) return;
    const { id, name, url } = entry;
    this.add({ id, name, url, intervalSeconds }, this.clock.now() + intervalSeconds * 1000);
  }

  /** Stop running `checkId`; results of its runs in flight are dropped. */
  remove(checkId: number): void {
    this.entries.delete(checkId);
    this.urgent = this.urgent.filter((u) => u.checkId !== checkId);
  }

  /**
   * Run `checkId` now outside its schedule. `verify` runs avoid `excludeLocation`; when no
   * other location is connected, the same location runs it after 5 s (CONTRACT §5).
   */
  requestRun(checkId: number, purpose: RunPurpose, excludeLocation: string | null): void {
    if (!this.entries.has(checkId)) return;
    const excludeUntil = this.clock.now() + (excludeLocation ? this.sameLocationDelayMs : 0);
    this.urgent.push({ checkId, purpose, excludeLocation, excludeUntil });
    this.pump();
  }

  /** A probe connected (or freed capacity): hand out waiting runs. */
  sessionOpened(session: ProbeSession): void {
    this.registry.add(session);
    this.log.info({ sessionId: session.id, location: session.location }, 'probe connected');
    this.pump();
  }

  /** A probe is gone: its runs in flight are re-run elsewhere. */
  sessionClosed(sessionId: string, reason: string): void {
    const session = this.registry.get(sessionId);
    const orphans = this.registry.remove(sessionId);
    if (session) {
      this.log.warn(
        { sessionId, location: session.location, orphans: orphans.length, reason },
        'probe disconnected',
      );
    }
    for (const run of orphans) this.requeue(run);
    this.pump();
  }

  /** A result from `sessionId`. Unknown or late run ids are ignored. */
  resultArrived(sessionId: string, result: ProbeResult): void {
    const session = this.registry.get(sessionId);
    const run = this.registry.complete(sessionId, result.run_id);
    if (!session || !run || run.checkId !== result.check_id) return;
    const entry = this.entries.get(run.checkId);
    if (entry) {
      checkRuns.inc({
        check: run.checkName,
        result: result.ok
          ? 'ok'
          : result.detail_json.includes('"unreachable":true')
            ? 'unreachable'
            : 'fail',
      });
      if (entry.scheduledRunId === run.runId) entry.scheduledRunId = null;
      setRanAt(entry, session.location, this.clock.now());
      let detail: Record<string, unknown> | null = null;
      if (result.detail_json) {
        try {
          detail = JSON.parse(result.detail_json) as Record<string, unknown>;
        } catch {
          detail = null;
        }
      }
      this.onOutcome(run.checkId, {
        ok: result.ok,
        httpStatusCode: result.http_status_code,
        error: result.error,
        responseTimeMs: result.response_time_ms,
        at: result.started_at_ms || this.clock.now(),
        location: session.location,
        purpose: run.purpose,
        detail,
      });
    }
    this.pump();
  }

  private requeue(run: Run): void {
    const entry = this.entries.get(run.checkId);
    if (!entry) return;
    if (run.purpose === 'scheduled') {
      if (entry.scheduledRunId === run.runId) entry.scheduledRunId = null;
      this.regular.push(run.checkId);
      this.regularDue.push(this.clock.now());
    } else {
      this.urgent.push({
        checkId: run.checkId,
        purpose: run.purpose,
        excludeLocation: run.excludeLocation,
        excludeUntil: run.excludeUntil,
      });
    }
  }

  /** Assign waiting runs to probes with room: verifications first, then scheduled runs. */
  private pump(): void {
    if (!this.running) return;
    const now = this.clock.now();
    let blockedUntil = Infinity;
    if (this.urgent.length > 0) {
      const waiting: Urgent[] = [];
      for (const u of this.urgent) {
        const entry = this.entries.get(u.checkId);
        if (!entry) continue;
        const exclusive = u.excludeLocation !== null && now < u.excludeUntil;
        const onlyThere =
          exclusive &&
          u.excludeLocation !== null &&
          !this.registry.hasOtherLocation(u.excludeLocation);
        const session = onlyThere ? null : this.registry.pick(exclusive ? u.excludeLocation : null);
        if (session) this.assign(session, entry, u.purpose, u.excludeLocation, u.excludeUntil);
        else {
          waiting.push(u);
          if (exclusive) blockedUntil = Math.min(blockedUntil, u.excludeUntil);
        }
      }
      this.urgent = waiting;
    }
    while (this.regularHead < this.regular.length) {
      const id = this.regular[this.regularHead] as number;
      const entry = this.entries.get(id);
      if (!entry || entry.scheduledRunId !== null) {
        this.regularHead++;
        continue;
      }
      const session = this.registry.pick(null, (l) => ranAtOf(entry, l));
      if (!session) break;
      scheduleLag.observe(Math.max(0, now - (this.regularDue[this.regularHead] ?? now)) / 1000);
      this.regularHead++;
      this.assign(session, entry, 'scheduled', null, 0);
    }
    if (this.regularHead > 1024 && this.regularHead * 2 > this.regular.length) {
      this.regular = this.regular.slice(this.regularHead);
      this.regularDue = this.regularDue.slice(this.regularHead);
      this.regularHead = 0;
    }
    if (blockedUntil !== Infinity && !this.urgentTimer) {
      this.urgentTimer = this.clock.setTimer(() => {
        this.urgentTimer = null;
        this.pump();
      }, blockedUntil - now);
    }
  }

  private assign(
    session: ProbeSession,
    entry: Entry,
    purpose: RunPurpose,
    excludeLocation: string | null,
    excludeUntil: number,
  ): void {
    const now = this.clock.now();
    const run: Run = {
      runId: ++this.runSeq,
      checkId: entry.id,
      checkName: entry.name,
      url: entry.url,
      purpose,
      excludeLocation,
      excludeUntil,
      sessionId: session.id,
      deadline: now + this.runTimeoutMs + this.lostGraceMs,
    };
    if (purpose === 'scheduled') entry.scheduledRunId = run.runId;
    this.registry.dispatch(session, run);
    if (!this.sweepTimer) this.armSweep();
  }

  private armSweep(): void {
    this.sweepTimer = this.clock.setTimer(() => this.sweep(), 1000);
  }

  private push(at: number, id: number, version: number): void {
    this.heap.push(at, id, version);
    if (at < this.heapTimerAt) this.armHeap();
  }

  private armHeap(): void {
    if (!this.running) return;
    if (this.heapTimer) this.clock.clearTimer(this.heapTimer);
    this.heapTimer = null;
    this.heapTimerAt = Infinity;
    const at = this.heap.topAt;
    if (at === Infinity) return;
    this.heapTimerAt = at;
    this.heapTimer = this.clock.setTimer(() => this.fireDue(), at - this.clock.now());
  }

  private fireDue(): void {
    this.heapTimer = null;
    this.heapTimerAt = Infinity;
    const now = this.clock.now();
    const horizon = now + this.dispatchAheadMs;
    while (this.heap.topAt <= horizon) {
      const at = this.heap.topAt;
      const id = this.heap.topId;
      const version = this.heap.topVersion;
      this.heap.pop();
      const entry = this.entries.get(id);
      if (!entry || entry.version !== version) continue;
      // One scheduled run at a time per check: a run still going skips this slot.
      if (entry.scheduledRunId === null) {
        this.regular.push(id);
        this.regularDue.push(at);
      }
      let next = entry.nextAt + entry.intervalMs;
      if (next <= now) next = now + entry.intervalMs - ((now - entry.nextAt) % entry.intervalMs);
      entry.nextAt = next;
      this.heap.push(next, id, version); // not push(): the timer is re-armed once, below
    }
    this.pump();
    this.armHeap();
  }

  /** Every second while runs are in flight: runs past their deadline are lost and re-run. */
  private sweep(): void {
    this.sweepTimer = null;
    if (!this.running) return;
    const now = this.clock.now();
    let inflight = 0;
    for (const session of this.registry.all()) {
      inflight += session.inflight.size;
      for (const run of session.inflight.values()) {
        if (run.deadline > now) continue;
        session.inflight.delete(run.runId);
        this.log.warn(
          { checkId: run.checkId, sessionId: session.id },
          'run lost, no result in time',
        );
        this.requeue(run);
      }
    }
    this.pump();
    if (inflight > 0 && !this.sweepTimer) this.armSweep();
  }
}
