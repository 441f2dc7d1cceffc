/**
 * Micro-benchmarks of Vigil's hot paths (issue 7 item 4): the state machine, the scheduler
 * handing out due runs, check actors handling results, store batch writes, the gRPC run/result
 * round trip between coordinator and probe, and a probe's piscina round trip against a local
 * target. Each returns plain figures; run.ts records them with the machine they came from.
 * Loops are bounded in count and time, and only talk to 127.0.0.1.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { systemClock, type Clock, type TimerHandle } from '../src/common/clock.js';
import { PROTOCOL_VERSION } from '../src/common/proto.js';
import { CheckActor, type ActorContext } from '../src/coordinator/check-actor.js';
import { startProbeServer } from '../src/coordinator/grpc-server.js';
import { RoutineWriter } from '../src/coordinator/routine-writer.js';
import {
  ProbeRegistry,
  type ProbeSession,
  type Run,
  type RunRequestMessage,
} from '../src/coordinator/probe-registry.js';
import { Scheduler } from '../src/coordinator/scheduler.js';
import { LevelStore } from '../src/coordinator/store/level-store.js';
import { INITIAL_SEQUENCES, type Store, type StoreOp } from '../src/coordinator/store/store.js';
import type { Check, Monitor, User } from '../src/domain/check.js';
import { initialCheckState, applyUptimeResult } from '../src/domain/transition.js';
import type { RunOutcome } from '../src/domain/result.js';
import {
  createProbeControlClient,
  openControlStream,
  toRunResult,
  type CoordinatorMessage__Output,
} from '../src/probe/grpc-client.js';
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
 * A probe's pool: uptime checks (fresh connection each) against a target in another process
 * (4 ports, every run its own path), measured two ways. CPU is this process's, pool threads
 * included.
 * - Paced, as a probe sees them: `runs` runs at `ratePerS` per second (one probe's share of
 *   2,000 checks/s over two locations), handed over the way the coordinator's scheduler sends
 *   them: every DISPATCH_AHEAD_MS (src/coordinator/scheduler.ts), the runs due by then.
 *   `probe_cpu_ms_per_run` is this.
 * - Closed loop: `runs` runs, `concurrency` at a time, each finished run starting the next;
 *   `runs_per_s` is the pool's throughput, `closed_loop_cpu_ms_per_run` its CPU per run then.
 * @returns the figures named above, plus `runs`, `paced_rate_per_s` and `failed` (both phases)
 * @throws Error when the target process cannot start
 */
export async function benchPool(
  runs = 4_000,
  concurrency = 200,
  ratePerS = 1_000,
): Promise<Figures> {
  const targetPath = fileURLToPath(new URL('./target.js', import.meta.url));
  const target = spawn(process.execPath, [targetPath, '--ports', '4'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const ports = await new Promise<number[]>((resolve, reject) => {
    target.stdout.once('data', (d: Buffer) =>
      resolve((JSON.parse(d.toString()) as { ports: number[] }).ports),
    );
    target.once('exit', () => reject(new Error('target exited')));
  });
  const url = (i: number): string => `http://127.0.0.1:${ports[i % ports.length]}/site/${i}`;
  const pool = new CheckPool({ localAddress: null });
  let failed = 0;
  const check = async (i: number): Promise<void> => {
    const r = await pool.run({ checkName: 'uptime', url: url(i), timeoutMs: 5000 });
    if (!r.ok) failed++;
  };
  try {
    // Warm the threads up.
    await Promise.all(Array.from({ length: 50 }, (_, i) => check(i)));
    failed = 0;
    const { DISPATCH_AHEAD_MS } = await import('../src/coordinator/scheduler.js');

    let cpu0 = process.cpuUsage();
    let t0 = performance.now();
    await new Promise<void>((resolve) => {
      let issued = 0;
      let done = 0;
      const tick = (): void => {
        const due = Math.min(runs, Math.floor(((performance.now() - t0) / 1000) * ratePerS));
        for (; issued < due; issued++) {
          void check(runs + issued).then(() => {
            done++;
            if (done === runs) resolve();
          });
        }
        if (issued < runs) setTimeout(tick, Math.max(1, DISPATCH_AHEAD_MS));
      };
      tick();
    });
    let cpu = process.cpuUsage(cpu0);
    const pacedCpuMs = (cpu.user + cpu.system) / 1000;

    cpu0 = process.cpuUsage();
    t0 = performance.now();
    let next = 0;
    const loop = async (): Promise<void> => {
      while (next < runs) await check(2 * runs + next++);
    };
    await Promise.all(Array.from({ length: concurrency }, loop));
    const s = (performance.now() - t0) / 1000;
    cpu = process.cpuUsage(cpu0);
    const closedCpuMs = (cpu.user + cpu.system) / 1000;
    const perRun = (ms: number): number => Math.round((ms / runs) * 1000) / 1000;
    return {
      runs,
      failed,
      paced_rate_per_s: ratePerS,
      probe_cpu_ms_per_run: perRun(pacedCpuMs),
      runs_per_s: Math.round(runs / s),
      closed_loop_cpu_ms_per_run: perRun(closedCpuMs),
    };
  } finally {
    await pool.close();
    target.kill();
  }
}

/** `p`, or a rejection naming `what` after `ms` ms. */
async function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms);
  });
  try {
    return await Promise.race([p, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Check actors handling probe results, as the coordinator does it: `messages` ok uptime results
 * told to `actors` real CheckActors sharing a real LevelStore in a temp dir, the routine runs
 * written by a real RoutineWriter. One round = one result per actor (from alternating
 * locations, one minute after the last) and then one bulk write of them all, awaited — with
 * the default 2,000 actors, one second at the bar's 2,000 checks/s. One warm-up round (the
 * first result of a check is a transition, written at once) is not counted. CPU is this
 * process's, LevelDB's threads included.
 * @returns messages/s and CPU µs per message, plus the store writes they caused.
 * @throws Error when a message fails, a store write fails, or a result was not applied.
 */
export async function benchActor(messages = 50_000, actors = 2_000): Promise<Figures> {
  const dir = await mkdtemp(join(tmpdir(), 'vigil-bench-actor-'));
  const store: Store = await LevelStore.open(dir);
  let writes = 0;
  let failedWrites = 0;
  // The real store, counting the writes made through it (the writer only logs a failure).
  const write = store.write.bind(store);
  store.write = (ops: StoreOp[]) => {
    writes++;
    return write(ops).catch((err: unknown) => {
      failedWrites++;
      throw err;
    });
  };
  try {
    const clock = new BenchClock();
    const writer = new RoutineWriter(store, clock, silent);
    const scheduler = new Scheduler({
      clock,
      registry: new ProbeRegistry(30_000),
      logger: silent,
      onOutcome: () => undefined,
    });
    const user: User = {
      id: 1,
      email: 'bench@example.com',
      plan: 'business',
      apiToken: 'b'.repeat(43),
      apiEnabled: true,
      webhookUrl: null,
      createdAt: clock.now(),
    };
    const monitors = new Map<number, Monitor>();
    const ctx: ActorContext = {
      clock,
      store,
      scheduler,
      seq: { ...INITIAL_SEQUENCES },
      monitor: (id) => monitors.get(id),
      user: (id) => (id === user.id ? user : undefined),
      deliver: () => undefined,
      writeLater: (actor) => writer.add(actor),
      logger: silent,
    };
    const list: CheckActor[] = [];
    for (let id = 1; id <= actors; id++) {
      monitors.set(id, {
        id,
        userId: user.id,
        url: `http://127.0.0.1/site/${id}`,
        alias: `site ${id}`,
        createdAt: clock.now(),
      });
      const check: Check = {
        id,
        monitorId: id,
        userId: user.id,
        name: 'uptime',
        enabled: true,
        intervalSeconds: 60,
        notificationThresholdSeconds: 0,
        expiryThresholdDays: null,
      };
      list.push(new CheckActor(check, initialCheckState(), ctx));
    }
    /** When each actor's latest result started, to check they were all applied. */
    const lastAt = new Array<number>(actors).fill(0);
    let round = 0;
    const outcomeNow = (): RunOutcome => ({
      ok: true,
      httpStatusCode: 200,
      error: '',
      responseTimeMs: 12,
      at: clock.now(),
      location: round++ % 2 ? 'a' : 'b',
      purpose: 'scheduled',
      detail: null,
    });
    clock.advance(60_000);
    const first = outcomeNow();
    await Promise.all(list.map((actor) => actor.post({ type: 'result', outcome: first })));
    lastAt.fill(first.at);
    await writer.flush();
    const writes0 = writes;
    const cpu0 = process.cpuUsage();
    const t0 = process.hrtime.bigint();
    for (let left = messages; left > 0; left -= actors) {
      clock.advance(60_000);
      const outcome = outcomeNow();
      const count = Math.min(actors, left);
      for (let i = 0; i < count; i++) {
        (list[i] as CheckActor).tell({ type: 'result', outcome });
        lastAt[i] = outcome.at;
      }
      await writer.flush();
    }
    const s = Number(process.hrtime.bigint() - t0) / 1e9;
    const cpu = process.cpuUsage(cpu0);
    const cpuUs = cpu.user + cpu.system;
    const missed = list.filter((a, i) => a.state.lastCheckAt !== lastAt[i]).length;
    if (missed > 0 || failedWrites > 0) {
      throw new Error(
        `benchActor: ${missed} checks missed a result, ${failedWrites} writes failed`,
      );
    }
    await writer.close();
    return {
      messages,
      actors,
      store_writes: writes - writes0,
      messages_per_s: Math.round(messages / s),
      cpu_us_per_message: Math.round((cpuUs / messages) * 10) / 10,
    };
  } finally {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * The coordinator↔probe gRPC round trip on 127.0.0.1: the coordinator's probe server with a
 * real Scheduler and ProbeRegistry hands out `runs` runs (one per check, all due at once, at
 * most `capacity` in flight) to a probe-side stream client (src/probe/grpc-client.ts) that
 * answers every RunBatch at once with a ResultBatch of ok results, without running any check.
 * Both ends are in this process, so the CPU figure is both sides together (scheduler included;
 * its own share is in benchScheduler).
 * @returns round trips/s and CPU µs per run.
 * @throws Error when the stream fails or the runs do not all come back within 60 s.
 */
export async function benchGrpcRoundTrip(runs = 50_000, capacity = 512): Promise<Figures> {
  const token = 'bench-probe-token';
  let outcomes = 0;
  let allBack: () => void = () => undefined;
  const finished = new Promise<void>((resolve) => (allBack = resolve));
  const scheduler = new Scheduler({
    clock: systemClock,
    registry: new ProbeRegistry(30_000),
    logger: silent,
    onOutcome: () => {
      if (++outcomes === runs) allBack();
    },
  });
  const server = await startProbeServer({
    scheduler,
    token,
    clock: systemClock,
    logger: silent,
    host: '127.0.0.1',
    port: 0,
  });
  const client = createProbeControlClient(`127.0.0.1:${server.port}`);
  const call = openControlStream(client, token);
  try {
    const now = systemClock.now();
    for (let id = 1; id <= runs; id++) {
      scheduler.add(
        { id, name: 'uptime', url: `http://127.0.0.1:9/site/${id}`, intervalSeconds: 86_400 },
        now,
      );
    }
    // What a probe's uptime worker reports (shape of workers/uptime.ts), made up.
    const detail = {
      timings: { dnsMs: null, tcpMs: 0.2, tlsMs: null, firstByteMs: 1.1, totalMs: 1.4 },
      redirects: 0,
    };
    const welcomed = new Promise<void>((resolve, reject) => {
      call.on('data', (msg: CoordinatorMessage__Output) => {
        if (msg.body === 'welcome') resolve();
        else if (msg.body === 'runs' && msg.runs) {
          const startedAtMs = Date.now();
          const result = { ok: true, httpStatusCode: 200, error: '', responseTimeMs: 1.4 };
          call.write({
            results: {
              results: msg.runs.runs.map((r) => toRunResult(r, { ...result, startedAtMs, detail })),
            },
          });
        }
      });
      call.on('error', reject);
    });
    call.write({
      hello: {
        protocol_version: PROTOCOL_VERSION,
        location: 'bench',
        capacity,
        node_name: 'bench',
      },
    });
    await within(welcomed, 10_000, 'welcome from the probe server');
    const cpu0 = process.cpuUsage();
    const t0 = process.hrtime.bigint();
    scheduler.start();
    const failed = new Promise<never>((_, reject) => call.on('error', reject));
    await within(Promise.race([finished, failed]), 60_000, `${runs} runs answered`);
    const s = Number(process.hrtime.bigint() - t0) / 1e9;
    const cpu = process.cpuUsage(cpu0);
    const cpuUs = cpu.user + cpu.system;
    return {
      runs,
      capacity,
      round_trips_per_s: Math.round(runs / s),
      cpu_us_per_run: Math.round((cpuUs / runs) * 10) / 10,
    };
  } finally {
    scheduler.stop();
    call.on('error', () => undefined); // the cancel below ends the stream with CANCELLED
    call.cancel();
    client.close();
    await server.close();
  }
}
