/**
 * The `peer` scenario (issue 7): Vigil and Debian's prometheus-blackbox-exporter on the same
 * target fleet, in the same run, measured the same way (CPU seconds from /proc over a window,
 * divided by the checks or probes done in it), so the ratio is side by side on one box.
 *
 * 1. The steady load at `--monitors` (default 30,000) @ `--interval` (default 60 s) with K
 *    probe locations; after one interval of settling, {@link measureWindow} over `--duration`
 *    seconds gives Vigil's CPU ms per check (coordinator + probes, all runs).
 * 2. Vigil (probes, then coordinator) is stopped; the fleet stays. bench/blackbox.ts
 *    `driveBlackbox` runs the exporter on 127.0.0.1 and drives it at its maximum rate (a fixed
 *    number of `GET /probe` in flight) over the same site URLs for `--duration` seconds.
 * 3. The ratio: blackbox CPU ms/probe ÷ Vigil CPU ms/check (> 1 = Vigil is cheaper per check).
 *
 * Vigil runs at a fixed rate (N / interval checks/s), blackbox at its maximum; the CPU per
 * check is the comparable figure, and both throughputs are in the row.
 */
import { driveBlackbox, type BlackboxFigures } from './blackbox.js';
import {
  intArg,
  measureWindow,
  parseLoadArgs,
  round,
  startLoad,
  type Log,
  type RunRecord,
  type Scenario,
  type WindowFigures,
} from './harness.js';
import { LOAD_HEADER, loadCells } from './steady.js';

/** Options of {@link benchPeer}. */
export interface PeerOptions {
  monitors: number;
  interval: number;
  /** Each of the two windows, seconds. */
  duration: number;
  locations: number;
  /** Probes kept in flight against blackbox_exporter; absent = driveBlackbox's default. */
  concurrency?: number;
  log?: Log;
}

/** Figures of a peer run. */
export interface PeerFigures {
  vigil: WindowFigures & { setup_s: number };
  blackbox: BlackboxFigures;
  /** blackbox CPU ms/probe ÷ Vigil CPU ms/check; null if either is missing. */
  ratio_blackbox_over_vigil: number | null;
}

/**
 * Run the peer scenario (see the file comment).
 * @throws Error if a setup step fails, a process dies, or blackbox_exporter is missing and
 * cannot be installed (everything stopped first)
 */
export async function benchPeer(o: PeerOptions): Promise<PeerFigures> {
  const log = o.log ?? ((l: string) => process.stderr.write(`${l}\n`));
  const load = await startLoad({
    monitors: o.monitors,
    interval: o.interval,
    locations: o.locations,
    log,
  });
  try {
    log(`peer: measuring Vigil for ${o.duration} s`);
    const { window } = await measureWindow(load, o.duration);
    log('peer: stopping Vigil; driving blackbox_exporter on the same fleet');
    for (const c of load.vigil()) await c.stop();
    const targets = Array.from({ length: o.monitors }, (_, i) => load.fleet.siteUrl(i));
    const blackbox = await driveBlackbox({
      targets,
      durationS: o.duration,
      ...(o.concurrency ? { concurrency: o.concurrency } : {}),
      log,
    });
    const vigilMs = window.cpu_ms_per_check;
    return {
      vigil: { ...window, setup_s: round(load.setupS, 1) },
      blackbox,
      ratio_blackbox_over_vigil:
        vigilMs && blackbox.cpu_ms_per_probe > 0
          ? round(blackbox.cpu_ms_per_probe / vigilMs, 2)
          : null,
    };
  } finally {
    await load.stop();
  }
}

const HEADER =
  '| date | commit | machine | blackbox ms/probe ÷ Vigil ms/check | Vigil CPU ms/check | ' +
  'blackbox (version): probes/s, CPU ms/probe, cores, peak RSS, ok | ' +
  `${LOAD_HEADER} |`;

/** `npm run bench -- peer [--monitors N] [--interval S] [--duration S] [--locations K] [--concurrency C]`. */
export const peer: Scenario<PeerOptions, PeerFigures> = {
  name: 'peer',
  usage:
    '[--monitors N=30000] [--interval S=60] [--duration S=120] [--locations K=2] ' +
    '[--concurrency C (blackbox probes in flight)]',
  parse(args) {
    const { load, values } = parseLoadArgs(
      args,
      { monitors: 30_000, interval: 60, duration: 120, locations: 2 },
      { concurrency: { type: 'string' } },
    );
    const c = typeof values.concurrency === 'string' ? values.concurrency : undefined;
    return {
      monitors: load.monitors,
      interval: load.interval,
      duration: load.duration,
      locations: load.locations,
      ...(c ? { concurrency: intArg(c, 'concurrency', 64) } : {}),
    };
  },
  run: (o, ctx) => benchPeer({ ...o, log: ctx.log }),
  header: HEADER,
  row(r: RunRecord<PeerFigures>) {
    const { vigil: v, blackbox: b, ratio_blackbox_over_vigil: ratio } = r.figures;
    return (
      `| ${r.date.slice(0, 10)} | ${r.commit} | ${r.machine} | ${ratio ?? '–'} | ` +
      `${v.cpu_ms_per_check ?? '–'} | ${b.version}: ${b.probes_per_s}/s, ${b.cpu_ms_per_probe} ms, ` +
      `${b.cores_used}, ${b.peak_rss_mib} MiB, ${(b.ok_share * 100).toFixed(1)} % | ${loadCells(v)} |`
    );
  },
};
