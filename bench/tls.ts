/**
 * The `tls` scenario (issue 7): certificate_health checks at load.
 *
 * Setup: a throw-away PKI made at run time (test/tls-ca.ts, compiled to dist/test/tls-ca.js:
 * a root CA, an intermediate, and one ECDSA P-256 leaf for 127.0.0.1 and localhost); the
 * target fleet (bench/target.ts) with `--tls-ports K` HTTPS servers (default 4) serving that
 * leaf and the intermediate; N monitors on `https://127.0.0.1:<tls port>/site/<i>` created
 * through the bulk path by {@link startLoad} (paced over one interval), which gives each an
 * uptime check and a certificate_health check (interval 3600 by default). Then, paced over
 * one more interval (so the certificate checks' phases are spread evenly, as a new interval
 * reschedules the next run from now): `PUT /webapi/checks/{id} {"interval": S}` on every
 * certificate_health check and — unless `--keep-uptime` — `POST /webapi/checks/{id}/disable`
 * on every uptime check, so that only certificate checks load the probes. One interval to
 * settle, then the window is measured.
 *
 * Trust: by default the probes get `NODE_EXTRA_CA_CERTS` = the test root (as the e2e
 * certificate test does), so every verdict should be valid (`ok`). With `--untrusted` they do
 * not, and every verdict is a failure ("Incomplete certificate chain: … not a trusted root");
 * a check's first failing run is verified from a second location (then it stays invalid and
 * later runs are single), and a "SSL Certificate - Invalid" event per check waits in the
 * outbox (no webhook URL is set).
 *
 * Figures: certificate checks/s achieved vs expected (N / interval) from
 * `vigil_check_runs_total{check="certificate_health"}`, runs by result, CPU ms per certificate
 * check per process (its CPU seconds in the window / all certificate runs in the window) and
 * all Vigil processes together, the target fleet's own CPU (the TLS servers, not Vigil's),
 * schedule lag, and the certificate checks' status and errors from `GET /webapi/monitors` at
 * the end. The bar: ≥ 500 certificate checks/s.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TestPki } from '../test/tls-ca.js';
import {
  api,
  boundCell,
  cpuSeconds,
  forEachLimited,
  measureWindow,
  parseLoadArgs,
  round,
  sleep,
  startLoad,
  type Load,
  type Log,
  type RunRecord,
  type Scenario,
  type WindowFigures,
} from './harness.js';

/** Options of {@link benchTls}. */
export interface TlsOptions {
  monitors: number;
  /** The certificate checks' interval, seconds (business plan: 30 or more). */
  interval: number;
  duration: number;
  locations: number;
  /** Keep the uptime checks running (default: they are disabled). */
  keepUptime: boolean;
  /** The probes trust the test CA (default true). */
  trust: boolean;
  /** HTTPS ports of the fleet. @default 4 */
  tlsPorts: number;
  cpuProfDir?: string;
  log?: Log;
}

/** Figures of a tls run. */
export interface TlsFigures extends WindowFigures {
  setup_s: number;
  /** Seconds the PUT (+ disable) pass took. */
  reconfigure_s: number;
  uptime_checks: 'disabled' | 'kept';
  trust: 'test CA trusted (NODE_EXTRA_CA_CERTS)' | 'untrusted';
  certificate: {
    expected_checks_per_s: number;
    achieved_checks_per_s: number;
    achieved_ratio: number;
    /** certificate_health runs in the window by result (ok, fail, unreachable). */
    runs_by_result: Record<string, number>;
    /** CPU ms per certificate run: per Vigil process (÷ all runs), and all of them. */
    cpu_ms_per_check: Record<string, number>;
    /**
     * Per probe: TLS connections the fleet accepted from its source address in the window (its
     * runs, uptime ones included if kept) and its CPU ms per own connection.
     */
    per_probe: { role: string; connections: number; cpu_ms_per_connection: number | null }[];
    cpu_ms_per_check_total: number | null;
    /** The target fleet's CPU seconds in the window (TLS server side; not Vigil). */
    target_cpu_s_window: number;
    /** From the listing at the end: certificate checks by status, and their errors. */
    status: Record<string, number>;
    errors: Record<string, number>;
    /** Certificate checks whose interval is the asked one (should be all). */
    at_interval: number;
    bar_met: boolean;
  };
  cpu_profile_dir?: string;
}

interface MonitorJson {
  id: number;
  checks: {
    id: number;
    name: string;
    status: string | null;
    interval: number;
    last_error: string | null;
  }[];
}

/** Monitor id → certificate_health check id, from every user's listing. */
async function certificateChecks(load: Load): Promise<Map<number, MonitorJson['checks'][number]>> {
  const out = new Map<number, MonitorJson['checks'][number]>();
  for (const u of load.users) {
    const res = await api(load.coordinator.http, u.apiToken, 'GET', '/webapi/monitors');
    if (res.status !== 200) throw new Error(`GET /webapi/monitors: ${res.status}`);
    for (const m of res.json as MonitorJson[]) {
      const c = m.checks.find((x) => x.name === 'certificate_health');
      if (c) out.set(m.id, c);
    }
  }
  return out;
}

/**
 * Run the tls scenario (see the file comment).
 * @throws Error if a process exits or a setup step fails (everything is stopped first)
 */
export async function benchTls(o: TlsOptions): Promise<TlsFigures> {
  const log = o.log ?? ((l: string) => process.stderr.write(`${l}\n`));
  const dir = await mkdtemp(join(tmpdir(), 'vigil-bench-tls-'));
  let load: Load | null = null;
  try {
    const pki = await TestPki.create();
    const leaf = await pki.leaf({ names: ['127.0.0.1', 'localhost'] });
    const certFile = join(dir, 'chain.pem');
    const keyFile = join(dir, 'key.pem');
    await writeFile(certFile, leaf.chainPem);
    await writeFile(keyFile, leaf.keyPem, { mode: 0o600 });
    const trustFile = await pki.writeTrustFile(dir);
    load = await startLoad({
      monitors: o.monitors,
      interval: o.interval,
      locations: o.locations,
      targets: {
        ports: 1,
        extraArgs: [
          '--tls-ports',
          String(o.tlsPorts),
          '--tls-cert',
          certFile,
          '--tls-key',
          keyFile,
        ],
      },
      url: (i, fleet) => {
        const port = fleet.tlsPorts[i % fleet.tlsPorts.length];
        if (port === undefined) throw new Error('the target fleet has no TLS ports');
        return `https://127.0.0.1:${port}/site/${i}`;
      },
      ...(o.trust ? { probeEnv: { NODE_EXTRA_CA_CERTS: trustFile } } : {}),
      ...(o.cpuProfDir ? { cpuProfDir: o.cpuProfDir } : {}),
      settle: false,
      log,
    });
    const l = load;
    const http = l.coordinator.http;

    // Certificate checks to the asked interval (and uptime checks off), paced over one interval.
    const certs = await certificateChecks(l);
    log(
      `tls: setting ${o.monitors} certificate checks to ${o.interval} s` +
        `${o.keepUptime ? '' : ' and disabling the uptime checks'} over ${o.interval} s`,
    );
    const t0 = Date.now();
    await forEachLimited(o.monitors, 16, async (i) => {
      const notBefore = t0 + (i / o.monitors) * o.interval * 1000;
      if (notBefore > Date.now()) await sleep(notBefore - Date.now());
      const user = l.users[l.monitors.owner[i] as number];
      const cert = certs.get(l.monitors.monitorIds[i] as number);
      if (!user || !cert) throw new Error(`monitor ${i} has no certificate_health check`);
      const put = await api(http, user.apiToken, 'PUT', `/webapi/checks/${cert.id}`, {
        interval: o.interval,
      });
      if (put.status !== 200) throw new Error(`PUT /webapi/checks/${cert.id}: ${put.status}`);
      if (!o.keepUptime) {
        const id = l.monitors.checkIds[i] as number;
        const off = await api(http, user.apiToken, 'POST', `/webapi/checks/${id}/disable`);
        if (off.status !== 200) throw new Error(`POST /webapi/checks/${id}/disable: ${off.status}`);
      }
    });
    const reconfigureS = (Date.now() - t0) / 1000;
    log(`tls: reconfigured in ${reconfigureS.toFixed(1)} s; settling for ${o.interval} s`);
    await sleep(o.interval * 1000);

    log(`tls: measuring for ${o.duration} s`);
    type Peers = { tls_connections: Record<string, number> };
    const peers0 = (await l.fleet.control('GET', '/_bench/peers')) as Peers;
    const target0 = (await cpuSeconds(l.fleet.child.pid)) ?? 0;
    const { window } = await measureWindow(l, o.duration);
    const targetCpu = ((await cpuSeconds(l.fleet.child.pid)) ?? 0) - target0;
    const peers1 = (await l.fleet.control('GET', '/_bench/peers')) as Peers;
    const perProbe = window.processes
      .filter((p) => p.role.startsWith('probe-'))
      .map((p) => {
        // startProbes: probe i has --local-address 127.0.0.(2+i).
        const addr = `127.0.0.${2 + Number(p.role.slice('probe-'.length))}`;
        const n = (peers1.tls_connections[addr] ?? 0) - (peers0.tls_connections[addr] ?? 0);
        return {
          role: p.role,
          connections: n,
          cpu_ms_per_connection: n > 0 ? round((p.cpu_s_window * 1000) / n, 3) : null,
        };
      });

    const runs: Record<string, number> = {};
    let certRuns = 0;
    for (const [k, v] of Object.entries(window.runs_by_result))
      if (k.startsWith('certificate_health:')) {
        runs[k.slice('certificate_health:'.length)] = v;
        certRuns += v;
      }
    const perProcess: Record<string, number> = {};
    for (const p of window.processes)
      if (certRuns > 0) perProcess[p.role] = round((p.cpu_s_window * 1000) / certRuns, 3);
    const expected = o.monitors / o.interval;
    const achieved = certRuns / window.duration_s;

    const status: Record<string, number> = {};
    const errors: Record<string, number> = {};
    let atInterval = 0;
    for (const c of (await certificateChecks(l)).values()) {
      const s = c.status ?? 'null';
      status[s] = (status[s] ?? 0) + 1;
      if (c.last_error) errors[c.last_error] = (errors[c.last_error] ?? 0) + 1;
      if (c.interval === o.interval) atInterval++;
    }
    return {
      ...window,
      setup_s: round(l.setupS, 1),
      reconfigure_s: round(reconfigureS, 1),
      uptime_checks: o.keepUptime ? 'kept' : 'disabled',
      trust: o.trust ? 'test CA trusted (NODE_EXTRA_CA_CERTS)' : 'untrusted',
      certificate: {
        expected_checks_per_s: round(expected, 1),
        achieved_checks_per_s: round(achieved, 1),
        achieved_ratio: round(achieved / expected, 4),
        runs_by_result: runs,
        cpu_ms_per_check: perProcess,
        per_probe: perProbe,
        cpu_ms_per_check_total:
          certRuns > 0 ? round((window.vigil_cpu_s_window * 1000) / certRuns, 3) : null,
        target_cpu_s_window: round(targetCpu, 2),
        status,
        errors,
        at_interval: atInterval,
        bar_met: achieved >= 500,
      },
      ...(o.cpuProfDir ? { cpu_profile_dir: o.cpuProfDir } : {}),
    };
  } finally {
    await load?.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

const HEADER =
  '| date | commit | machine | monitors @ interval, locations | uptime checks, trust | ' +
  'certificate checks/s achieved / expected | runs ok / fail / unreachable | ' +
  'CPU ms per certificate check (coordinator; probes; all) | lag p99 (bucket) | ' +
  'target CPU s | bar (≥ 500/s) |';

/** `npm run bench -- tls [--monitors N] [--interval S] [--duration S] [--locations K] [--keep-uptime] [--untrusted] [--cpu-prof]`. */
export const tls: Scenario<TlsOptions, TlsFigures> = {
  name: 'tls',
  usage:
    '[--monitors N=3000] [--interval S=30] [--duration S=120] [--locations K=2] [--keep-uptime] ' +
    '[--untrusted] [--cpu-prof]',
  parse(args, ctx) {
    const { load, values } = parseLoadArgs(
      args,
      { monitors: 3000, interval: 30, duration: 120, locations: 2 },
      { 'keep-uptime': { type: 'boolean' }, untrusted: { type: 'boolean' } },
    );
    return {
      monitors: load.monitors,
      interval: load.interval,
      duration: load.duration,
      locations: load.locations,
      keepUptime: values['keep-uptime'] === true,
      trust: values.untrusted !== true,
      tlsPorts: 4,
      ...(load.cpuProf ? { cpuProfDir: `${ctx.resultsDir}/prof-tls-${ctx.stamp}` } : {}),
    };
  },
  run: (o, ctx) => benchTls({ ...o, log: ctx.log }),
  header: HEADER,
  row(r: RunRecord<TlsFigures>) {
    const f = r.figures;
    const c = f.certificate;
    const probes = f.processes
      .filter((p) => p.role.startsWith('probe'))
      .map((p) => c.cpu_ms_per_check[p.role] ?? '–')
      .join(', ');
    return (
      `| ${r.date.slice(0, 10)} | ${r.commit} | ${r.machine} | ` +
      `${f.monitors} @ ${f.interval_s} s, ${f.locations}${f.cpu_profile_dir ? ' (coordinator under --cpu-prof)' : ''} | ` +
      `${f.uptime_checks}, ${f.trust === 'untrusted' ? 'untrusted' : 'trusted'} | ` +
      `${c.achieved_checks_per_s} / ${c.expected_checks_per_s} (${f.duration_s} s) | ` +
      `${c.runs_by_result.ok ?? 0} / ${c.runs_by_result.fail ?? 0} / ${c.runs_by_result.unreachable ?? 0} | ` +
      `${c.cpu_ms_per_check.coordinator ?? '–'}; ${probes}; ${c.cpu_ms_per_check_total ?? '–'} | ` +
      `${boundCell(f.schedule_lag_p99_s)} | ${c.target_cpu_s_window} | ${c.bar_met ? 'met' : 'not met'} |`
    );
  },
};
