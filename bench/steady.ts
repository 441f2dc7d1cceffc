/**
 * The `steady` load scenario (issue 7): every site up, N monitors at one interval, Vigil run
 * as a user runs it. Through the harness ({@link startLoad}): a target fleet (bench/target.js
 * on several ports, one distinct path per monitor), `vigil coordinator` on a temp data dir and
 * K `vigil probe` processes (each with its own 127.0.0.(2+i) source address and location);
 * one business user (or several) and N monitors created through the public API paced over one
 * interval (so that the checks' phases are spread evenly); one interval to settle; then
 * {@link measureWindow} over `duration` seconds from /metrics and /proc.
 *
 * The bar (issue 7): `--monitors 120000 --interval 60 --duration 600` with ≥ 99.9 % of runs
 * started within 1 s of plan, schedule lag p99 < 1 s, ≤ 0.5 ms CPU per check (all Vigil
 * processes), coordinator RSS ≤ 10 KB per monitor.
 */
import {
  boundCell,
  intArg,
  measureWindow,
  parseLoadArgs,
  percentCell,
  startLoad,
  type Log,
  type RunRecord,
  type Scenario,
  type WindowFigures,
} from './harness.js';

/** Options of {@link benchSteady}. */
export interface SteadyOptions {
  monitors: number;
  /** Seconds; one of the intervals the business plan allows (30, 60, 120, 300, …). */
  interval: number;
  /** Measured window, seconds. */
  duration: number;
  /** Probe processes, one location each. */
  locations: number;
  /** Monitors split over this many users. @default 1 */
  users?: number;
  /** Target fleet ports. @default 4 */
  targetPorts?: number;
  /** Write a V8 CPU profile of the coordinator into this directory. */
  cpuProfDir?: string;
  /** Progress lines go here. */
  log?: Log;
}

/** Figures of a steady run: the window figures plus the setup. */
export interface SteadyFigures extends WindowFigures {
  /** Seconds from the start to the last monitor created. */
  setup_s: number;
  /** How the monitors were created: `bulk` or `single` (POST + PUT each). */
  created_with: 'bulk' | 'single';
  cpu_profile_dir?: string;
}

/**
 * Run the steady scenario: start the load, settle one interval, measure `duration` seconds,
 * stop everything.
 * @throws Error if a process exits or a setup step fails (everything is stopped first)
 */
export async function benchSteady(o: SteadyOptions): Promise<SteadyFigures> {
  const load = await startLoad({
    monitors: o.monitors,
    interval: o.interval,
    locations: o.locations,
    ...(o.users ? { users: o.users } : {}),
    targets: { ports: o.targetPorts ?? 4 },
    ...(o.cpuProfDir ? { cpuProfDir: o.cpuProfDir } : {}),
    ...(o.log ? { log: o.log } : {}),
  });
  try {
    (o.log ?? ((l: string) => process.stderr.write(`${l}\n`)))(
      `steady: measuring for ${o.duration} s`,
    );
    const { window } = await measureWindow(load, o.duration);
    return {
      ...window,
      setup_s: Math.round(load.setupS * 10) / 10,
      created_with: load.monitors.bulk ? 'bulk' : 'single',
      ...(o.cpuProfDir ? { cpu_profile_dir: o.cpuProfDir } : {}),
    };
  } finally {
    await load.stop();
  }
}

/** Markdown cells shared by every load scenario's row: the columns of {@link LOAD_HEADER}. */
export function loadCells(f: WindowFigures, note = ''): string {
  const coord = f.processes.find((p) => p.role === 'coordinator');
  const probes = f.processes.filter((p) => p.role.startsWith('probe'));
  return (
    `${f.monitors} @ ${f.interval_s} s, ${f.locations}${note} | ` +
    `${f.achieved_checks_per_s} / ${f.expected_checks_per_s} (${f.duration_s} s) | ` +
    `${boundCell(f.schedule_lag_p50_s)} / ${boundCell(f.schedule_lag_p99_s)} / ` +
    `${boundCell(f.schedule_lag_max_bucket_s)} | ${percentCell(f.late_over_1s_share)} | ` +
    `${f.cpu_ms_per_check ?? '–'} | ${coord?.cpu_s_window} s, ${coord?.peak_rss_mib} MiB | ` +
    `${probes.map((p) => `${p.cpu_s_window} s, ${p.peak_rss_mib} MiB`).join('; ')}`
  );
}

/** Header of the columns of {@link loadCells}. */
export const LOAD_HEADER =
  'monitors @ interval, locations | checks/s achieved / expected | ' +
  'lag p50 / p99 / max (bucket) | > 1 s late | CPU ms/check | coordinator CPU s, peak RSS | ' +
  'probes CPU s, peak RSS';

const HEADER =
  `| date | commit | machine | ${LOAD_HEADER} | coordinator KiB/monitor | ` +
  'verification p50 / p99 | store B/monitor, growth B/monitor/day |';

/** `npm run bench -- steady [--monitors N] [--interval S] [--duration S] [--locations K] [--users U] [--cpu-prof]`. */
export const steady: Scenario<SteadyOptions, SteadyFigures> = {
  name: 'steady',
  usage:
    '[--monitors N=2000] [--interval S=60] [--duration S=120] [--locations K=2] [--users U=1] [--cpu-prof]',
  parse(args, ctx) {
    const { load, values } = parseLoadArgs(
      args,
      { monitors: 2000, interval: 60, duration: 120, locations: 2 },
      { users: { type: 'string' } },
    );
    return {
      monitors: load.monitors,
      interval: load.interval,
      duration: load.duration,
      locations: load.locations,
      users: intArg(typeof values.users === 'string' ? values.users : undefined, 'users', 1),
      ...(load.cpuProf ? { cpuProfDir: `${ctx.resultsDir}/prof-steady-${ctx.stamp}` } : {}),
    };
  },
  run: (o, ctx) => benchSteady({ ...o, log: ctx.log }),
  header: HEADER,
  row(r: RunRecord<SteadyFigures>) {
    const f = r.figures;
    return (
      `| ${r.date.slice(0, 10)} | ${r.commit} | ${r.machine} | ` +
      `${loadCells(f, f.cpu_profile_dir ? ' (coordinator under --cpu-prof)' : '')} | ` +
      `${f.coordinator_rss_kib_per_monitor} | ` +
      `${boundCell(f.verification_latency_p50_s)} / ${boundCell(f.verification_latency_p99_s)} | ` +
      `${f.store_bytes_per_monitor}, ${f.store_growth_bytes_per_monitor_per_day} |`
    );
  },
};
