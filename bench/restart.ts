/**
 * The `restart` scenario (issue 7): N monitors (default 100,000) at one interval, spread over
 * several users; once the load has settled, the coordinator is SIGKILLed (the probes stay up
 * and reconnect by themselves), and a new coordinator is started on the same data dir and
 * ports. Measured from the new process's spawn:
 * - **API**: the first 200 of an authenticated `GET /webapi/monitors/{id}` (polled every
 *   20 ms) — "serving the API"; also when it listened (endpoints.json), the first 200 of
 *   `GET /readyz` (store open and a probe connected), all probes connected again, and how long
 *   one user's full `GET /webapi/monitors` listing then took.
 * - **every check run again**: the target fleet times the first request to each site after a
 *   mark set just before the spawn (bench/target.ts `/_bench/mark`, polled once a second); the
 *   figure is the latest of those first requests. At the end, one listing of every user
 *   confirms it from Vigil's side: every uptime check's `last_check_at` (1 s resolution) is at
 *   or after the spawn second.
 *
 * The bar: serving the API within 5 s, every check run again within one interval + 10 s.
 */
import {
  api,
  cpuSeconds,
  intArg,
  parseLoadArgs,
  peakRssKib,
  round,
  sleep,
  startLoad,
  sum,
  scrapeMetrics,
  type Load,
  type Log,
  type RunRecord,
  type Scenario,
} from './harness.js';

/** Options of {@link benchRestart}. */
export interface RestartOptions {
  monitors: number;
  /** Seconds. */
  interval: number;
  locations: number;
  /** Monitors per user (they are split over ceil(monitors / this) users). */
  perUser: number;
  /** Longest wait for every check to run again, seconds. */
  waitS: number;
  log?: Log;
}

/** Figures of a restart run; times in seconds from the new coordinator's spawn. */
export interface RestartFigures {
  monitors: number;
  interval_s: number;
  locations: number;
  users: number;
  setup_s: number;
  /** Coordinator peak RSS before the kill, MiB. */
  coordinator_peak_rss_mib_before: number;
  /** It wrote endpoints.json: both ports listen. */
  listening_s: number;
  /** First 200 of `GET /webapi/monitors/{id}` (the bar: ≤ 5 s). */
  api_serving_s: number | null;
  /** First 200 of `GET /readyz` (needs a probe reconnected). */
  readyz_s: number | null;
  /** All `locations` probes connected again (vigil_probes_connected). */
  probes_reconnected_s: number | null;
  /** One user's `GET /webapi/monitors` (perUser monitors) right after api_serving_s: its duration. */
  first_listing_ms: number | null;
  /** Latest first request to a site after the spawn (the bar: ≤ interval + 10 s); null if not all. */
  all_run_again_s: number | null;
  /** Sites requested again (of `monitors`) when the wait ended. */
  sites_run_again: number;
  /** Share of sites requested again by interval + 10 s after the spawn. */
  run_again_share_at_bar: number | null;
  /** From the listing at the end: uptime checks whose last_check_at is before the spawn second. */
  checks_not_run_again_per_api: number;
  /** The new coordinator: CPU seconds until all ran again (or the wait ended), peak RSS MiB. */
  coordinator_cpu_s_after_restart: number;
  coordinator_peak_rss_mib_after: number;
}

/** `YYYY-MM-DD HH:MM:SS` UTC of epoch ms `t` (the API's `last_check_at` format). */
function apiSecond(t: number): string {
  return new Date(t).toISOString().slice(0, 19).replace('T', ' ');
}

/** Poll `fn` every `everyMs` until true; resolves to the seconds since `from`, or null at `until`. */
async function firstTrue(
  fn: () => Promise<boolean>,
  from: number,
  until: number,
  everyMs: number,
): Promise<number | null> {
  while (Date.now() < until) {
    if (await fn().catch(() => false)) return (Date.now() - from) / 1000;
    await sleep(everyMs);
  }
  return null;
}

/**
 * Run the restart scenario (see the file comment).
 * @throws Error if a setup step fails or the new coordinator does not start (all stopped first)
 */
export async function benchRestart(o: RestartOptions): Promise<RestartFigures> {
  const log = o.log ?? ((l: string) => process.stderr.write(`${l}\n`));
  const users = Math.max(1, Math.ceil(o.monitors / o.perUser));
  const load: Load = await startLoad({
    monitors: o.monitors,
    interval: o.interval,
    locations: o.locations,
    users,
    log,
  });
  try {
    const old = load.coordinator;
    const rssBefore = (await peakRssKib(old.child.pid)) ?? 0;
    const http = old.http;
    log(`restart: SIGKILL coordinator (pid ${old.child.pid})`);
    await old.child.kill('SIGKILL');
    // Runs the probes had in flight finish within milliseconds (the fleet answers at once);
    // wait a second so that none of them counts as a run after the restart.
    await sleep(1000);
    await load.fleet.control('POST', '/_bench/mark');
    const spawnAt = Date.now();
    const until = spawnAt + o.waitS * 1000;
    const user0 = load.users[0];
    const monitor0 = load.monitors.monitorIds[0];
    if (!user0 || monitor0 === undefined) throw new Error('no user or monitor');
    const restarted = load.restartCoordinator();
    const apiServing = firstTrue(
      async () =>
        (await api(http, user0.apiToken, 'GET', `/webapi/monitors/${monitor0}`)).status === 200,
      spawnAt,
      until,
      20,
    );
    const readyz = firstTrue(
      async () =>
        (await fetch(`http://127.0.0.1:${http}/readyz`, { signal: AbortSignal.timeout(5000) }))
          .status === 200,
      spawnAt,
      until,
      20,
    );
    const probesBack = firstTrue(
      async () => sum(await scrapeMetrics(http), 'vigil_probes_connected') >= o.locations,
      spawnAt,
      until,
      100,
    );
    const coordinator = await restarted;
    const listeningS = (coordinator.listeningAt - spawnAt) / 1000;
    const apiS = await apiServing;
    log(`restart: listening after ${listeningS} s, API serving after ${apiS} s`);
    let firstListingMs: number | null = null;
    if (apiS !== null) {
      const t = Date.now();
      const res = await api(http, user0.apiToken, 'GET', '/webapi/monitors');
      if (res.status === 200) firstListingMs = Date.now() - t;
    }
    const [readyzS, probesS] = await Promise.all([readyz, probesBack]);

    // Every site requested again: poll the fleet once a second.
    let hits = { hit: 0, first_hit_max_ms: null as number | null };
    let shareAtBar: number | null = null;
    const barAt = spawnAt + (o.interval + 10) * 1000;
    while (Date.now() < until) {
      coordinator.child.assertAlive();
      hits = (await load.fleet.control('GET', `/_bench/hits?n=${o.monitors}`)) as typeof hits;
      if (shareAtBar === null && Date.now() >= barAt) shareAtBar = hits.hit / o.monitors;
      if (hits.hit >= o.monitors) break;
      await sleep(1000);
    }
    const allS =
      hits.hit >= o.monitors && hits.first_hit_max_ms !== null
        ? (hits.first_hit_max_ms - spawnAt) / 1000
        : null;
    if (shareAtBar === null && allS !== null)
      shareAtBar = allS <= o.interval + 10 ? 1 : hits.hit / o.monitors;
    const cpuAfter = (await cpuSeconds(coordinator.child.pid)) ?? 0;
    log(`restart: ${hits.hit} of ${o.monitors} sites requested again; last after ${allS} s`);

    // Vigil's side: every uptime check's last_check_at at or after the spawn second.
    const since = apiSecond(Math.floor(spawnAt / 1000) * 1000);
    const wanted = new Set(load.monitors.checkIds);
    let notRun = 0;
    for (const u of load.users) {
      const res = await api(http, u.apiToken, 'GET', '/webapi/monitors');
      if (res.status !== 200) throw new Error(`GET /webapi/monitors: ${res.status}`);
      for (const m of res.json as { checks: { id: number; last_check_at: string | null }[] }[])
        for (const c of m.checks)
          if (wanted.has(c.id) && (c.last_check_at === null || c.last_check_at < since)) notRun++;
    }
    return {
      monitors: o.monitors,
      interval_s: o.interval,
      locations: o.locations,
      users,
      setup_s: round(load.setupS, 1),
      coordinator_peak_rss_mib_before: round(rssBefore / 1024, 1),
      listening_s: round(listeningS, 3),
      api_serving_s: apiS === null ? null : round(apiS, 3),
      readyz_s: readyzS === null ? null : round(readyzS, 3),
      probes_reconnected_s: probesS === null ? null : round(probesS, 2),
      first_listing_ms: firstListingMs,
      all_run_again_s: allS === null ? null : round(allS, 2),
      sites_run_again: hits.hit,
      run_again_share_at_bar: shareAtBar === null ? null : round(shareAtBar, 5),
      checks_not_run_again_per_api: notRun,
      coordinator_cpu_s_after_restart: round(cpuAfter, 2),
      coordinator_peak_rss_mib_after: round(
        ((await peakRssKib(coordinator.child.pid)) ?? 0) / 1024,
        1,
      ),
    };
  } finally {
    await load.stop();
  }
}

const HEADER =
  '| date | commit | machine | monitors @ interval, locations (users) | listening | ' +
  'API serving (bar 5 s) | /readyz | probes back | every check run again (bar interval + 10 s) | ' +
  'not run again per API | coordinator RSS before / after, CPU s after |';

/** `npm run bench -- restart [--monitors N] [--interval S] [--locations K] [--per-user M] [--duration S]`. */
export const restart: Scenario<RestartOptions, RestartFigures> = {
  name: 'restart',
  usage:
    '[--monitors N=100000] [--interval S=60] [--locations K=2] [--per-user M=10000] ' +
    '[--duration S=3×interval, the longest wait for every check to run again]',
  parse(args) {
    const { load, values } = parseLoadArgs(
      args,
      { monitors: 100_000, interval: 60, duration: 0, locations: 2 },
      { 'per-user': { type: 'string' } },
    );
    const perUser = typeof values['per-user'] === 'string' ? values['per-user'] : undefined;
    return {
      monitors: load.monitors,
      interval: load.interval,
      locations: load.locations,
      perUser: intArg(perUser, 'per-user', 10_000),
      waitS: load.duration > 0 ? load.duration : 3 * load.interval,
    };
  },
  run: (o, ctx) => benchRestart({ ...o, log: ctx.log }),
  header: HEADER,
  row(r: RunRecord<RestartFigures>) {
    const f = r.figures;
    const s = (x: number | null): string => (x === null ? '–' : `${x} s`);
    return (
      `| ${r.date.slice(0, 10)} | ${r.commit} | ${r.machine} | ` +
      `${f.monitors} @ ${f.interval_s} s, ${f.locations} (${f.users}) | ${s(f.listening_s)} | ` +
      `${s(f.api_serving_s)} | ${s(f.readyz_s)} | ${s(f.probes_reconnected_s)} | ` +
      `${f.all_run_again_s === null ? `not all (${f.sites_run_again})` : `${f.all_run_again_s} s`} | ` +
      `${f.checks_not_run_again_per_api} | ${f.coordinator_peak_rss_mib_before} / ` +
      `${f.coordinator_peak_rss_mib_after} MiB, ${f.coordinator_cpu_s_after_restart} s |`
    );
  },
};
