/**
 * The `webhooks` scenario (issue 7): a burst of webhook events — by default 10,000 — with one
 * receiver dead and the others healthy.
 *
 * Setup: the bench receiver (bench/receiver.ts) on `--receivers R` ports (default 4), one per
 * healthy user; R + 1 users (one more for the dead receiver, unless `--dead none`) sharing
 * N = `--monitors` monitors at `--interval` (the harness deals chunks of monitors to users in
 * turn), set up by {@link startLoad}; each user's webhook URL is `/hook/<user>` on its own
 * receiver port; the dead user's points at a port of 127.0.0.1 where nothing listens
 * (`--dead refuse`, the default: every try is refused at once) or at a port that accepts and
 * never answers (`--dead hang`: every try waits for the 10 s timeout).
 *
 * The dispatcher (src/delivery/dispatcher.ts, CONTRACT §6) has at most 64 attempts in flight,
 * and at most 8 per receiver host, keyed by the URL's `host` — host *and port* — so every
 * receiver port is its own host here, as distinct receivers would be; 127.0.0.1 for all is
 * therefore no limit of the bench.
 *
 * Events: every site is forced down at once (bench/target.ts), which makes one Down per
 * monitor as each check's next run fails and is verified from another location; once all
 * healthy Downs have arrived and at least two intervals have passed (so the dead user's
 * outages are verified too), every site is forced up: one Recovered per monitor. 2 N events
 * in all. Each phase waits at most `--duration` seconds (default 4 × interval + 60).
 *
 * Figures: for the healthy receivers, events delivered of expected, the time from each flip to
 * the last delivery, delivery rate, and latency from the run that saw the change (the fleet
 * times the first request to each site after it; for a Down this includes verification) to the
 * receiver's 200, p50/p99, also per receiver; signatures verified; duplicates. For the dead
 * receiver, from `GET /webapi/webhooks?status=pending` as that user: pending events, how many
 * have had tries and have the next one scheduled, how many have not been tried yet (behind an
 * earlier event of the same monitor — CONTRACT §6 order — or, with `hang`, waiting for one of
 * the host's 8 slots), the most tries so far, and that none was delivered.
 * Whether the dead receiver slows the others: compare with a run with `--dead none`.
 */
import {
  api,
  cpuSeconds,
  intArg,
  parseLoadArgs,
  round,
  scrapeMetrics,
  sleep,
  startLoad,
  sum,
  sumBy,
  UsageError,
  type BenchUser,
  type Load,
  type Log,
  type RunRecord,
  type Scenario,
} from './harness.js';
import { siteChanges, wireWebhooks } from './churn.js';
import {
  closedPort,
  DOWN,
  latencyCell,
  latencyFigures,
  RECOVERED,
  startReceiver,
  type LatencyFigures,
  type ReceiverProcess,
} from './receiver.js';

/** How the dead receiver is dead. */
export type DeadMode = 'refuse' | 'hang' | 'none';

/** Options of {@link benchWebhooks}. */
export interface WebhooksOptions {
  /** Monitors; the run makes 2 × this many events. */
  monitors: number;
  /** Seconds, on the business plan. */
  interval: number;
  locations: number;
  /** Healthy receivers (one user each). */
  receivers: number;
  dead: DeadMode;
  /** Longest wait of each phase (all down, all up), seconds. */
  waitS: number;
  log?: Log;
}

/** One phase (all down, or all up) as the healthy receivers saw it. */
export interface PhaseFigures {
  expected: number;
  delivered: number;
  /** From the flip to the last delivery of the phase, seconds (null if none). */
  last_delivery_s: number | null;
  /** Deliveries per second from the first to the last of the phase. */
  deliveries_per_s: number | null;
  /** The run that saw the change → the receiver's 200. */
  run_to_200: LatencyFigures;
  /** The flip → the receiver's 200. */
  flip_to_200: LatencyFigures;
}

/** Figures of a webhooks run. */
export interface WebhooksFigures {
  monitors: number;
  interval_s: number;
  locations: number;
  receivers: number;
  dead: DeadMode;
  events_expected: number;
  setup_s: number;
  healthy: {
    monitors: number;
    down: PhaseFigures;
    recovered: PhaseFigures;
    /** Both phases together. */
    run_to_200: LatencyFigures;
    /** Per receiver (user index): delivered, run → 200. */
    per_receiver: { user: number; delivered: number; run_to_200: LatencyFigures }[];
    bad_signatures: number;
    /** POSTs beyond the first of an event. */
    redeliveries: number;
    /** Events of healthy users still pending at the end (should be 0). */
    pending_at_end: number;
    /** Alerts that match no flip (wrong kind, twice, unknown monitor). */
    unexpected: number;
  };
  dead_receiver: {
    monitors: number;
    /** `GET /webapi/webhooks?status=pending` total as the dead user. */
    pending: number;
    /** Pending with at least one try and `next_attempt_at` set. */
    pending_with_retry_scheduled: number;
    /**
     * Pending with no try yet: behind an earlier event of its monitor (delivery order), or
     * waiting for one of the host's 8 slots (`hang`).
     */
    pending_not_tried: number;
    max_tries: number;
    /** Must be 0. */
    delivered: number;
    /** Connections the hang port accepted (`--dead hang`). */
    hang_connections: number;
  } | null;
  /** vigil_webhook_attempts_total over the run, by outcome. */
  webhook_attempts: Record<string, number>;
  /** vigil_outbox_depth at the end. */
  outbox_depth_at_end: number;
  /** From the first flip to the end of the last phase. */
  coordinator_cpu_s: number;
  probes_cpu_s: number;
  receiver_cpu_s: number;
}

interface WebhookJson {
  status: string;
  next_attempt_at: string | null;
  attempts: unknown[];
}

/** Every page of `GET /webapi/webhooks?status=…` as `user`. */
async function listWebhooks(
  http: number,
  user: BenchUser,
  status: string,
): Promise<{ total: number; data: WebhookJson[] }> {
  const data: WebhookJson[] = [];
  let total = 0;
  for (let page = 1; page <= 10_000; page++) {
    const res = await api(
      http,
      user.apiToken,
      'GET',
      `/webapi/webhooks?status=${status}&per_page=100&page=${page}`,
    );
    if (res.status !== 200) throw new Error(`GET /webapi/webhooks: ${res.status}`);
    const p = res.json as { data: WebhookJson[]; total: number };
    total = p.total;
    data.push(...p.data);
    if (p.data.length === 0 || data.length >= total) break;
  }
  return { total, data };
}

/**
 * Run the webhooks scenario (see the file comment).
 * @throws Error if a process exits or a setup step fails (everything is stopped first)
 */
export async function benchWebhooks(o: WebhooksOptions): Promise<WebhooksFigures> {
  const log = o.log ?? ((l: string) => process.stderr.write(`${l}\n`));
  const receiver = await startReceiver({
    ports: o.receivers,
    hangPorts: o.dead === 'hang' ? 1 : 0,
  });
  let load: Load | null = null;
  try {
    const deadUrl =
      o.dead === 'refuse'
        ? `http://127.0.0.1:${await closedPort()}/hook/dead`
        : o.dead === 'hang'
          ? `http://127.0.0.1:${receiver.hangPorts[0]}/hook/dead`
          : null;
    const users = o.receivers + (deadUrl ? 1 : 0);
    load = await startLoad({
      monitors: o.monitors,
      interval: o.interval,
      locations: o.locations,
      users,
      log,
    });
    const l = load;
    const http = l.coordinator.http;
    await wireWebhooks(l, receiver, (u) =>
      u < o.receivers ? receiver.url(u, String(u)) : (deadUrl as string),
    );
    const all = Array.from({ length: o.monitors }, (_, i) => i);
    const healthySites = all.filter((i) => (l.monitors.owner[i] as number) < o.receivers);
    const deadMonitors = o.monitors - healthySites.length;

    const vigil = l.vigil();
    const cpu = async (): Promise<number[]> =>
      Promise.all(
        [...vigil.map((c) => c.pid), receiver.child.pid].map(
          async (pid) => (await cpuSeconds(pid)) ?? 0,
        ),
      );
    const m0 = await scrapeMetrics(http);
    const cpu0 = await cpu();

    const flip = async (body: { down?: number[]; up?: number[] }): Promise<number> =>
      ((await l.fleet.control('POST', '/_bench/sites', body)) as { at: number }).at;
    const waitCount = async (
      type: string,
      n: number,
      from: number,
      atLeastS: number,
    ): Promise<void> => {
      while (Date.now() - from < o.waitS * 1000) {
        l.coordinator.child.assertAlive();
        const s = await receiver.stats();
        if ((s.by_type[type] ?? 0) >= n && Date.now() - from >= atLeastS * 1000) return;
        await sleep(500);
      }
      log(`webhooks: gave up waiting for ${type} after ${o.waitS} s`);
    };

    log(`webhooks: all ${o.monitors} sites down (${2 * o.monitors} events in all)`);
    const downAt = await flip({ down: all });
    await waitCount('uptime.down', healthySites.length, downAt, deadUrl ? 2 * o.interval : 0);
    log('webhooks: all sites up');
    const upAt = await flip({ up: all });
    await waitCount('uptime.recovered', healthySites.length, upAt, 0);
    // Dead receiver: let its first tries happen for the Recovered phase too.
    const cpu1 = await cpu();
    const m1 = await scrapeMetrics(http);

    const figures = await analyse(l, receiver, o, healthySites, downAt, upAt);
    let dead: WebhooksFigures['dead_receiver'] = null;
    if (deadUrl) {
      const deadUser = l.users[o.receivers] as BenchUser;
      const pending = await listWebhooks(http, deadUser, 'pending');
      const delivered = await listWebhooks(http, deadUser, 'delivered');
      let withRetry = 0;
      let waiting = 0;
      let maxTries = 0;
      for (const w of pending.data) {
        if (w.attempts.length > 0 && w.next_attempt_at !== null) withRetry++;
        if (w.attempts.length === 0) waiting++;
        maxTries = Math.max(maxTries, w.attempts.length);
      }
      dead = {
        monitors: deadMonitors,
        pending: pending.total,
        pending_with_retry_scheduled: withRetry,
        pending_not_tried: waiting,
        max_tries: maxTries,
        delivered: delivered.total,
        hang_connections: (await receiver.stats()).hang_connections,
      };
    }
    let pendingHealthy = 0;
    for (const u of l.users.slice(0, o.receivers)) {
      const res = await api(http, u.apiToken, 'GET', '/webapi/webhooks?status=pending&per_page=1');
      pendingHealthy += (res.json as { total: number }).total;
    }
    figures.pending_at_end = pendingHealthy;
    const a0 = sumBy(m0, 'vigil_webhook_attempts_total', 'outcome');
    const attempts: Record<string, number> = {};
    for (const [k, v] of Object.entries(sumBy(m1, 'vigil_webhook_attempts_total', 'outcome')))
      attempts[k] = v - (a0[k] ?? 0);
    const d = cpu1.map((x, i) => x - (cpu0[i] ?? 0));
    return {
      monitors: o.monitors,
      interval_s: o.interval,
      locations: o.locations,
      receivers: o.receivers,
      dead: o.dead,
      events_expected: 2 * o.monitors,
      setup_s: round(l.setupS, 1),
      healthy: figures,
      dead_receiver: dead,
      webhook_attempts: attempts,
      outbox_depth_at_end: sum(await scrapeMetrics(http), 'vigil_outbox_depth'),
      coordinator_cpu_s: round(d[0] ?? 0, 2),
      probes_cpu_s: round(
        d.slice(1, -1).reduce((a, b) => a + b, 0),
        2,
      ),
      receiver_cpu_s: round(d[d.length - 1] ?? 0, 2),
    };
  } finally {
    await load?.stop();
    await receiver.stop();
  }
}

/** The healthy receivers' figures from the recorded deliveries. */
async function analyse(
  load: Load,
  receiver: ReceiverProcess,
  o: WebhooksOptions,
  healthySites: number[],
  downAt: number,
  upAt: number,
): Promise<WebhooksFigures['healthy']> {
  const rec = await receiver.records();
  const changes = await siteChanges(load, healthySites);
  const runDown = new Map<number, number | null>();
  const runUp = new Map<number, number | null>();
  healthySites.forEach((site, j) => {
    runDown.set(site, changes.first_request_after_down[j] ?? null);
    runUp.set(site, changes.first_request_after_up[j] ?? null);
  });
  const siteOf = new Map<number, number>();
  load.monitors.monitorIds.forEach((id, i) => siteOf.set(id, i));

  const seen = new Set<number>();
  const got = [new Set<number>(), new Set<number>()];
  const arrivals: number[][] = [[], []];
  const run: number[][] = [[], []];
  const flipLat: number[][] = [[], []];
  const perUser = new Map<number, { delivered: number; run: number[] }>();
  let bad = 0;
  let redeliveries = 0;
  let unexpected = 0;
  for (let k = 0; k < rec.at.length; k++) {
    if (rec.sig[k] !== 1) bad++;
    const parent = rec.parent[k] as number;
    if (seen.has(parent) || (rec.try[k] ?? 1) > 1) redeliveries++;
    if (seen.has(parent)) continue;
    seen.add(parent);
    const site = siteOf.get(rec.monitor[k] as number);
    const phase = rec.type[k] === DOWN ? 0 : rec.type[k] === RECOVERED ? 1 : -1;
    const t = rec.at[k] as number;
    const sitesGot = got[phase];
    if (
      site === undefined ||
      phase < 0 ||
      !sitesGot ||
      sitesGot.has(site) ||
      t < (phase === 0 ? downAt : upAt)
    ) {
      unexpected++;
      continue;
    }
    sitesGot.add(site);
    arrivals[phase]?.push(t);
    flipLat[phase]?.push(t - (phase === 0 ? downAt : upAt));
    const r = (phase === 0 ? runDown : runUp).get(site);
    const user = load.monitors.owner[site] as number;
    const u = perUser.get(user) ?? { delivered: 0, run: [] };
    perUser.set(user, u);
    u.delivered++;
    if (r !== null && r !== undefined) {
      run[phase]?.push(t - r);
      u.run.push(t - r);
    }
  }
  const phase = (p: 0 | 1): PhaseFigures => {
    const a = arrivals[p] as number[];
    const first = a.length ? Math.min(...a) : null;
    const last = a.length ? Math.max(...a) : null;
    return {
      expected: healthySites.length,
      delivered: a.length,
      last_delivery_s: last === null ? null : round((last - (p === 0 ? downAt : upAt)) / 1000, 2),
      deliveries_per_s:
        first !== null && last !== null && last > first
          ? round((a.length * 1000) / (last - first), 1)
          : null,
      run_to_200: latencyFigures(run[p] as number[]),
      flip_to_200: latencyFigures(flipLat[p] as number[]),
    };
  };
  return {
    monitors: healthySites.length,
    down: phase(0),
    recovered: phase(1),
    run_to_200: latencyFigures([...(run[0] as number[]), ...(run[1] as number[])]),
    per_receiver: Array.from({ length: o.receivers }, (_, user) => ({
      user,
      delivered: perUser.get(user)?.delivered ?? 0,
      run_to_200: latencyFigures(perUser.get(user)?.run ?? []),
    })),
    bad_signatures: bad,
    redeliveries,
    pending_at_end: 0,
    unexpected,
  };
}

const HEADER =
  '| date | commit | machine | monitors @ interval, locations | receivers (dead) | ' +
  'healthy delivered of expected (Down + Recovered) | last Down / Recovered after flip | ' +
  'run → 200 p50 / p99 (max) | dead: pending (retry scheduled / not tried yet), max tries, delivered | ' +
  'coordinator CPU s | bad signatures |';

/** `npm run bench -- webhooks [--monitors N] [--interval S] [--duration S] [--locations K] [--receivers R] [--dead refuse|hang|none]`. */
export const webhooks: Scenario<WebhooksOptions, WebhooksFigures> = {
  name: 'webhooks',
  usage:
    '[--monitors N=5000 (2N events)] [--interval S=30] [--locations K=2] [--receivers R=4] ' +
    '[--dead refuse|hang|none =refuse] [--duration S=4×interval+60, longest wait per phase]',
  parse(args) {
    const { load, values } = parseLoadArgs(
      args,
      { monitors: 5000, interval: 30, duration: 0, locations: 2 },
      { receivers: { type: 'string' }, dead: { type: 'string' } },
    );
    const dead = (typeof values.dead === 'string' ? values.dead : 'refuse') as DeadMode;
    if (!['refuse', 'hang', 'none'].includes(dead))
      throw new UsageError('--dead must be refuse, hang or none');
    const receivers = intArg(
      typeof values.receivers === 'string' ? values.receivers : undefined,
      'receivers',
      4,
    );
    if (receivers > 60) throw new UsageError('--receivers must be at most 60');
    if (load.locations < 2) throw new UsageError('--locations must be at least 2 (verification)');
    return {
      monitors: load.monitors,
      interval: load.interval,
      locations: load.locations,
      receivers,
      dead,
      waitS: load.duration > 0 ? load.duration : 4 * load.interval + 60,
    };
  },
  run: (o, ctx) => benchWebhooks({ ...o, log: ctx.log }),
  header: HEADER,
  row(r: RunRecord<WebhooksFigures>) {
    const f = r.figures;
    const h = f.healthy;
    const d = f.dead_receiver;
    const s = (x: number | null): string => (x === null ? '–' : `${x} s`);
    return (
      `| ${r.date.slice(0, 10)} | ${r.commit} | ${r.machine} | ` +
      `${f.monitors} @ ${f.interval_s} s, ${f.locations} | ${f.receivers} (${f.dead}) | ` +
      `${h.down.delivered + h.recovered.delivered} of ${h.down.expected + h.recovered.expected} | ` +
      `${s(h.down.last_delivery_s)} / ${s(h.recovered.last_delivery_s)} | ` +
      `${latencyCell(h.run_to_200)}${h.run_to_200.count ? ` (${h.run_to_200.max_ms} ms)` : ''} | ` +
      `${d ? `${d.pending} (${d.pending_with_retry_scheduled} / ${d.pending_not_tried}), ${d.max_tries}, ${d.delivered}` : '–'} | ` +
      `${f.coordinator_cpu_s} | ${h.bad_signatures} |`
    );
  },
};
