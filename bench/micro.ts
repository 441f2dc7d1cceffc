/**
 * Micro-benchmarks of Vigil's hot paths (issue 7 item 4): the state machine, the scheduler
 * handing out due runs, store batch writes, and a probe's piscina round trip against a local
 * target. Each returns plain figures; run.ts records them with the machine they came from.
 * Loops are bounded in count and time, and only talk to 127.0.0.1.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import type { Clock, TimerHandle } from '../src/common/clock.js';
import {
  ProbeRegistry,
  type ProbeSession,
  type Run,
  type RunRequestMessage,
} from '../src/coordinator/probe-registry.js';
import { Scheduler } from '../src/coordinator/scheduler.js';
import { LevelStore } from '../src/coordinator/store/level-store.js';
import { initialCheckState, applyUptimeResult } from '../src/domain/transition.js';
import type { RunOutcome } from '../src/domain/result.js';
import { CheckPool } from '../src/probe/pool.js';

/**
 * A clock for benchmarks: like ManualClock but fires due timers synchronously, without
 * settling promises between them, so the figures measure the scheduler and not the clock.
 */
class BenchClock implements Clock {
  private t = Date.UTC(2026, 0, 1);
  private seq = 0;
  private timers = new Map<number, { at: number; fn: () => void }>();
  now(): number {
    return this.t;
  }
  setTimer(fn: () => void, delayMs: number): TimerHandle {
    const id = ++this.seq;
    this.timers.set(id, { at: this.t + Math.max(0, delayMs), fn });
    return { id };
  }
  clearTimer(h: TimerHandle): void {
    this.timers.delete(h.id);
  }
  /** Move to `now + ms`, firing due timers in time order. */
  advance(ms: number): void {
    const target = this.t + ms;
    for (;;) {
      let nextId = -1;
      let nextAt = Infinity;
      for (const [id, timer] of this.timers) {
        if (timer.at <= target && timer.at < nextAt) {
          nextAt = timer.at;
          nextId = id;
        }
      }
      const timer = this.timers.get(nextId);
      if (!timer) break;
      this.timers.delete(nextId);
      this.t = Math.max(this.t, nextAt);
      timer.fn();
    }
    this.t = target;
  }
}

/** One benchmark's figures: name → value, units in the name. */
export type Figures = Record<string, number>;

const silent = pino({ level: 'silent' });

/** The pure uptime state machine: results applied per second. */
export function benchTransition(n = 1_000_000): Figures {
  let state = initialCheckState();
  const ok: RunOutcome = {
    ok: true,
    httpStatusCode: 200,
    error: '',
    responseTimeMs: 12,
    at: 0,
    location: 'a',
    purpose: 'scheduled',
    detail: null,
  };
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) {
    const run = { ...ok, at: i, ok: i % 97 !== 0, location: i % 2 ? 'a' : 'b' };
    state = applyUptimeResult(state, run, { notificationThresholdSeconds: 0 }).state;
  }
  const s = Number(process.hrtime.bigint() - t0) / 1e9;
  return {
    transitions: n,
    transitions_per_s: Math.round(n / s),
    ns_per_transition: Math.round((s * 1e9) / n),
  };
}

/**
 * The scheduler: `checks` checks at one interval, spread by phase; one whole interval of
 * simulated time is stepped through and every due run handed to a fake probe session.
 */
export async function benchScheduler(checks = 100_000, intervalSeconds = 60): Promise<Figures> {
  const clock = new BenchClock();
  const registry = new ProbeRegistry(30_000);
  let sent = 0;
  const scheduler = new Scheduler({ clock, registry, logger: silent, onOutcome: () => undefined });
  const session: ProbeSession = {
    id: 's',
    location: 'a',
    capacity: Number.MAX_SAFE_INTEGER,
    inflight: new Map<number, Run>(),
    lastSeenAt: clock.now(),
    send: (reqs: RunRequestMessage[]) => {
      sent += reqs.length;
      // Answer instantly so the next interval's runs are not skipped as still in flight.
      for (const r of reqs) session.inflight.delete(r.run_id);
    },
    close: () => undefined,
  };
  const t0 = process.hrtime.bigint();
  const cpu0 = process.cpuUsage();
  const spreadMs = intervalSeconds * 1000;
  for (let id = 1; id <= checks; id++) {
    scheduler.add(
      { id, name: 'uptime', url: `http://127.0.0.1/${id}`, intervalSeconds },
      clock.now() + ((id * 7919) % spreadMs),
    );
  }
  scheduler.sessionOpened(session);
  scheduler.start();
  const addedS = Number(process.hrtime.bigint() - t0) / 1e9;
  // Step the interval in 100 ms slices, letting batches flush between slices.
  for (let t = 0; t < spreadMs; t += 100) {
    clock.advance(100);
    await new Promise((r) => setImmediate(r)); // let the registry flush its batches
  }
  await new Promise((r) => setImmediate(r));
  const cpu = process.cpuUsage(cpu0);
  scheduler.stop();
  const cpuMs = (cpu.user + cpu.system) / 1000;
  return {
    checks,
    runs_dispatched: sent,
    add_ms_total: Math.round(addedS * 1000),
    cpu_ms_total: Math.round(cpuMs),
    cpu_us_per_run: Math.round((cpuMs * 1000) / Math.max(1, sent)),
  };
}

/** LevelStore: many concurrent single-record writes (grouped into batches). */
export async function benchStore(writes = 50_000): Promise<Figures> {
  const dir = await mkdtemp(join(tmpdir(), 'vigil-bench-store-'));
  const store = await LevelStore.open(dir);
  try {
    const state = initialCheckState();
    const t0 = process.hrtime.bigint();
    const pending: Array<Promise<void>> = [];
    for (let i = 0; i < writes; i++) {
      pending.push(
        store.write([{ kind: 'state', id: i % 10_000, value: { ...state, lastCheckAt: i } }]),
      );
      if (pending.length >= 2_000) await Promise.all(pending.splice(0));
    }
    await Promise.all(pending);
    const s = Number(process.hrtime.bigint() - t0) / 1e9;
    return {
      writes,
      writes_per_s: Math.round(writes / s),
      us_per_write: Math.round((s * 1e6) / writes),
    };
  } finally {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * A probe's pool: `runs` uptime checks (fresh connection each) against a target in another
 * process, `concurrency` at a time. CPU is this process's (pool threads included).
 */
export async function benchPool(runs = 4_000, concurrency = 200): Promise<Figures> {
  const targetPath = fileURLToPath(new URL('./target.js', import.meta.url));
  const target = spawn(process.execPath, [targetPath], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve, reject) => {
    target.stdout.once('data', (d: Buffer) =>
      resolve((JSON.parse(d.toString()) as { port: number }).port),
    );
    target.once('exit', () => reject(new Error('target exited')));
  });
  const pool = new CheckPool({ localAddress: null });
  try {
    // Warm the threads up.
    await Promise.all(
      Array.from({ length: 20 }, () =>
        pool.run({
          checkName: 'uptime',
          url: `http://127.0.0.1:${port}/warm`,
          timeoutMs: 5000,
          localAddress: null,
        }),
      ),
    );
    const cpu0 = process.cpuUsage();
    const t0 = process.hrtime.bigint();
    let next = 0;
    let failed = 0;
    const worker = async (): Promise<void> => {
      while (next < runs) {
        const i = next++;
        const r = await pool.run({
          checkName: 'uptime',
          url: `http://127.0.0.1:${port}/site/${i}`,
          timeoutMs: 5000,
          localAddress: null,
        });
        if (!r.ok) failed++;
      }
    };
    await Promise.all(Array.from({ length: concurrency }, worker));
    const s = Number(process.hrtime.bigint() - t0) / 1e9;
    const cpu = process.cpuUsage(cpu0);
    const cpuMs = (cpu.user + cpu.system) / 1000;
    return {
      runs,
      failed,
      runs_per_s: Math.round(runs / s),
      probe_cpu_ms_per_run: Math.round((cpuMs / runs) * 1000) / 1000,
    };
  } finally {
    await pool.close();
    target.kill();
  }
}
