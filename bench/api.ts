/**
 * The `api` scenario (issue 7): the steady load (same setup as `steady`), and over the
 * measured window an open-loop driver sending `PUT /webapi/checks/{id}` at a fixed rate
 * (default 200/s): request k is due at start + k/rate and is sent then, whether or not earlier
 * ones have answered, and its latency counts from when it was due (so a stalled server shows up
 * in the figures instead of slowing the driver down). Checks are picked pseudo-randomly
 * (fixed seed) over all monitors, each with its owner's token. The body alternates
 * `notification_threshold` between 0 and 60: a real change, validated, handled by the check's
 * actor and persisted. With `--reschedule` it also sets the check's `interval` (to its current
 * value): the coordinator then reschedules the next run from now, the heavier path — but every
 * such PUT pushes that check's next run up to one interval out, so the load is no longer
 * steady (at 200/s on 2,000 monitors the achieved checks/s fell to a third); the default keeps
 * the load as `steady` has it.
 *
 * Figures: latency p50/p99/max (ms), answers by status, plus every steady figure of the window.
 * The bar: p99 < 25 ms at 200 requests/s under the steady load. The coordinator runs with
 * `--rate-limit 1000000` (the harness default) so the per-token limit does not answer 429.
 */
import { Pool } from 'undici';
import {
  intArg,
  measureWindow,
  parseLoadArgs,
  prng,
  quantiles,
  round,
  sleep,
  startLoad,
  type Load,
  type Log,
  type RunRecord,
  type Scenario,
  type WindowFigures,
} from './harness.js';
import { LOAD_HEADER, loadCells } from './steady.js';

/** Options of {@link benchApi}. */
export interface ApiOptions {
  monitors: number;
  interval: number;
  /** Measured window, seconds (the driver runs over it). */
  duration: number;
  locations: number;
  /** PUTs per second. */
  rate: number;
  /** Also PUT the interval (reschedules the check). @default false */
  reschedule?: boolean;
  cpuProfDir?: string;
  log?: Log;
}

/** What the open-loop driver measured. */
export interface DriverFigures {
  rate_per_s: number;
  sent: number;
  /** Answered (any status) or failed; sent − answered were still in flight 15 s after the end. */
  answered: number;
  /** Status code (or "error" for a network error/timeout) → count. */
  by_status: Record<string, number>;
  /** From the moment each request was due to its full answer, ms. */
  latency_p50_ms: number | null;
  latency_p99_ms: number | null;
  latency_max_ms: number | null;
  /** Largest delay of a send behind its due time (the driver's own lateness), ms. */
  send_lag_max_ms: number;
}

/** Figures of an api run: the driver's and the window's. */
export interface ApiFigures extends WindowFigures {
  setup_s: number;
  put: DriverFigures;
  cpu_profile_dir?: string;
}

/**
 * Send PUTs on schedule for `durationS` seconds at `rate`/s (with the interval too when
 * `reschedule`), then wait (at most 15 s) for the ones in flight. Keeps one latency per
 * request in a preallocated Float64Array.
 */
export async function driveApi(
  load: Load,
  rate: number,
  durationS: number,
  reschedule = false,
): Promise<DriverFigures> {
  const total = Math.max(1, Math.floor(rate * durationS));
  const latencies = new Float64Array(total);
  const byStatus: Record<string, number> = {};
  const pool = new Pool(`http://127.0.0.1:${load.coordinator.http}`, {
    connections: 64,
    pipelining: 1,
    headersTimeout: 10_000,
    bodyTimeout: 10_000,
  });
  const random = prng(7);
  const n = load.monitors.checkIds.length;
  let answered = 0;
  let sendLagMax = 0;
  const inFlight = new Set<Promise<void>>();
  const send = (k: number, due: number): void => {
    const i = Math.floor(random() * n);
    const id = load.monitors.checkIds[i] as number;
    const user = load.users[load.monitors.owner[i] as number];
    const body = JSON.stringify({
      ...(reschedule ? { interval: load.options.interval } : {}),
      notification_threshold: k % 2 === 0 ? 60 : 0,
    });
    const p = pool
      .request({
        method: 'PUT',
        path: `/webapi/checks/${id}`,
        headers: {
          authorization: `Bearer ${user?.apiToken ?? ''}`,
          'content-type': 'application/json',
        },
        body,
      })
      .then(async (res) => {
        await res.body.text();
        byStatus[res.statusCode] = (byStatus[res.statusCode] ?? 0) + 1;
      })
      .catch(() => {
        byStatus.error = (byStatus.error ?? 0) + 1;
      })
      .then(() => {
        latencies[k] = performance.now() - due;
        answered++;
        inFlight.delete(p);
      });
    inFlight.add(p);
  };
  const start = performance.now();
  const stepMs = 1000 / rate;
  let k = 0;
  try {
    while (k < total) {
      const now = performance.now();
      // Send everything due by now (catches up after a late timer), then sleep to the next.
      while (k < total && start + k * stepMs <= now) {
        const due = start + k * stepMs;
        sendLagMax = Math.max(sendLagMax, now - due);
        send(k, due);
        k++;
      }
      if (k < total) await sleep(Math.max(0, start + k * stepMs - performance.now()));
    }
    await Promise.race([Promise.all([...inFlight]), sleep(15_000)]);
  } finally {
    await pool.destroy();
  }
  const done = latencies.subarray(0, k).filter((x) => x > 0);
  const [p50, p99] = quantiles(done, [0.5, 0.99]);
  let max = 0;
  for (const x of done) if (x > max) max = x;
  return {
    rate_per_s: rate,
    sent: k,
    answered,
    by_status: byStatus,
    latency_p50_ms: done.length ? round(p50 as number, 2) : null,
    latency_p99_ms: done.length ? round(p99 as number, 2) : null,
    latency_max_ms: done.length ? round(max, 2) : null,
    send_lag_max_ms: round(sendLagMax, 2),
  };
}

/**
 * Run the api scenario: the steady load, settle, drive PUTs over the window, stop everything.
 * @throws Error if a setup step fails or a process dies (all stopped first)
 */
export async function benchApi(o: ApiOptions): Promise<ApiFigures> {
  const log = o.log ?? ((l: string) => process.stderr.write(`${l}\n`));
  const load = await startLoad({
    monitors: o.monitors,
    interval: o.interval,
    locations: o.locations,
    ...(o.cpuProfDir ? { cpuProfDir: o.cpuProfDir } : {}),
    log,
  });
  try {
    log(`api: ${o.rate} PUT/s for ${o.duration} s`);
    const { window, during } = await measureWindow(load, o.duration, () =>
      driveApi(load, o.rate, o.duration, o.reschedule ?? false),
    );
    if (!during) throw new Error('the driver returned nothing');
    return {
      ...window,
      setup_s: round(load.setupS, 1),
      put: during,
      ...(o.cpuProfDir ? { cpu_profile_dir: o.cpuProfDir } : {}),
    };
  } finally {
    await load.stop();
  }
}

const HEADER =
  `| date | commit | machine | PUT/s | PUT p50 / p99 / max (bar p99 < 25 ms) | statuses | ` +
  `${LOAD_HEADER} |`;

/** `npm run bench -- api [--monitors N] [--interval S] [--duration S] [--locations K] [--rate R] [--cpu-prof]`. */
export const apiScenario: Scenario<ApiOptions, ApiFigures> = {
  name: 'api',
  usage:
    '[--monitors N=2000] [--interval S=60] [--duration S=120] [--locations K=2] [--rate R=200] [--reschedule] [--cpu-prof]',
  parse(args, ctx) {
    const { load, values } = parseLoadArgs(
      args,
      { monitors: 2000, interval: 60, duration: 120, locations: 2 },
      { rate: { type: 'string' }, reschedule: { type: 'boolean' } },
    );
    return {
      monitors: load.monitors,
      interval: load.interval,
      duration: load.duration,
      locations: load.locations,
      rate: intArg(typeof values.rate === 'string' ? values.rate : undefined, 'rate', 200),
      reschedule: values.reschedule === true,
      ...(load.cpuProf ? { cpuProfDir: `${ctx.resultsDir}/prof-api-${ctx.stamp}` } : {}),
    };
  },
  run: (o, ctx) => benchApi({ ...o, log: ctx.log }),
  header: HEADER,
  row(r: RunRecord<ApiFigures, ApiOptions>) {
    const f = r.figures;
    const ms = (x: number | null): string => (x === null ? '–' : `${x}`);
    const statuses = Object.entries(f.put.by_status)
      .map(([k, v]) => `${k}: ${v}`)
      .join(', ');
    return (
      `| ${r.date.slice(0, 10)} | ${r.commit} | ${r.machine} | ` +
      `${f.put.rate_per_s}${r.options.reschedule ? ' (with interval)' : ''} | ` +
      `${ms(f.put.latency_p50_ms)} / ${ms(f.put.latency_p99_ms)} / ${ms(f.put.latency_max_ms)} ms | ` +
      `${statuses} | ${loadCells(f, f.cpu_profile_dir ? ' (coordinator under --cpu-prof)' : '')} |`
    );
  },
};
