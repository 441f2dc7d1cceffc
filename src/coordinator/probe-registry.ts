/**
 * The probe registry: one record per connected probe session (location, capacity, runs in
 * flight, last heartbeat) and the choice of which probe takes a run. Transport-agnostic: the
 * gRPC server supplies `send`.
 */
import type { CheckName } from '../domain/check.js';
import type { RunPurpose } from '../domain/result.js';

/** A run handed to a probe and not yet answered. */
export interface Run {
  runId: number;
  checkId: number;
  checkName: CheckName;
  url: string;
  purpose: RunPurpose;
  /** Location that must not run it (verification), or null. */
  excludeLocation: string | null;
  /** When the exclusion lapses, ms since epoch (then any location may verify). */
  excludeUntil: number;
  sessionId: string;
  /** Past this (ms since epoch) the run counts as lost. */
  deadline: number;
}

/** What the registry sends to a probe: the proto RunRequest fields. */
export interface RunRequestMessage {
  run_id: number;
  check_id: number;
  check_name: string;
  url: string;
  timeout_ms: number;
}

/** A connected probe. */
export interface ProbeSession {
  readonly id: string;
  readonly location: string;
  /** Most runs in flight at once (Hello.capacity). */
  readonly capacity: number;
  /** run id → run */
  readonly inflight: Map<number, Run>;
  /** Last message from the probe, ms since epoch. */
  lastSeenAt: number;
  /** Transport: deliver a batch of run requests. */
  send(requests: RunRequestMessage[]): void;
  /** Transport: end the session (heartbeat lost, shutdown). */
  close(reason: string): void;
}

/** The connected probe sessions, their runs in flight, and the choice of probe per run. */
export class ProbeRegistry {
  private readonly sessions = new Map<string, ProbeSession>();
  private readonly outgoing = new Map<string, RunRequestMessage[]>();
  private flushQueued = false;

  /** @param timeoutMs the run budget sent to probes (CONTRACT §5: 30 s), ms */
  constructor(private readonly timeoutMs: number) {}

  add(session: ProbeSession): void {
    this.sessions.set(session.id, session);
  }

  /** Forget a session; returns its runs in flight, for re-queueing. */
  remove(sessionId: string): Run[] {
    const s = this.sessions.get(sessionId);
    if (!s) return [];
    this.sessions.delete(sessionId);
    this.outgoing.delete(sessionId);
    const orphans = [...s.inflight.values()];
    s.inflight.clear();
    return orphans;
  }

  get(sessionId: string): ProbeSession | undefined {
    return this.sessions.get(sessionId);
  }

  all(): IterableIterator<ProbeSession> {
    return this.sessions.values();
  }

  get size(): number {
    return this.sessions.size;
  }

  /** Whether any connected probe is in a location other than `location`. */
  hasOtherLocation(location: string): boolean {
    for (const s of this.sessions.values()) if (s.location !== location) return true;
    return false;
  }

  /**
   * A probe with room for one more run, not in `exclude`: of the location this check ran in
   * least recently (`lastRanAt`, ms since epoch, 0 = never), the least busy
   * (in-flight/capacity). Null when none has room.
   */
  pick(
    exclude: string | null,
    lastRanAt: (location: string) => number = () => 0,
  ): ProbeSession | null {
    let best: ProbeSession | null = null;
    let bestRan = Infinity;
    let bestLoad = Infinity;
    for (const s of this.sessions.values()) {
      if (s.location === exclude || s.inflight.size >= s.capacity) continue;
      const ran = lastRanAt(s.location);
      const load = s.inflight.size / s.capacity;
      if (ran < bestRan || (ran === bestRan && load < bestLoad)) {
        best = s;
        bestRan = ran;
        bestLoad = load;
      }
    }
    return best;
  }

  /** Hand `run` to its session; requests of one tick go out as one batch. */
  dispatch(session: ProbeSession, run: Run): void {
    session.inflight.set(run.runId, run);
    let batch = this.outgoing.get(session.id);
    if (!batch) this.outgoing.set(session.id, (batch = []));
    batch.push({
      run_id: run.runId,
      check_id: run.checkId,
      check_name: run.checkName,
      url: run.url,
      timeout_ms: this.timeoutMs,
    });
    if (!this.flushQueued) {
      this.flushQueued = true;
      setImmediate(() => this.flush());
    }
  }

  /** The run `runId` of `sessionId`, removed from its in-flight set; null if unknown. */
  complete(sessionId: string, runId: number): Run | null {
    const s = this.sessions.get(sessionId);
    const run = s?.inflight.get(runId);
    if (!s || !run) return null;
    s.inflight.delete(runId);
    return run;
  }

  private flush(): void {
    this.flushQueued = false;
    for (const [id, batch] of this.outgoing) {
      this.sessions.get(id)?.send(batch);
    }
    this.outgoing.clear();
  }
}
