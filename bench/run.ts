/**
 * `npm run bench -- <scenario>`: runs a benchmark and records its figures with the machine,
 * commit and date — as JSON under bench/results/ and as a row appended to bench/README.md.
 * Scenarios: `micro` (all micro-benchmarks), `smoke` (the same at small N, for CI: it fails
 * only when the harness breaks, never on timing), `steady` (the load scenario of bench/steady.ts:
 * `[--monitors N] [--interval S] [--duration S] [--locations K] [--cpu-prof]`). The other load
 * scenarios of issue 7 (churn, tls, api, webhooks, restart, peer) are not built yet.
 */
import { execFileSync } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { cpus, totalmem } from 'node:os';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { benchPool, benchScheduler, benchStore, benchTransition, type Figures } from './micro.js';
import { benchSteady } from './steady.js';

const BENCH_DIR = fileURLToPath(new URL('../../bench/', import.meta.url));

function machine(): string {
  const cpu = cpus()[0]?.model.trim() ?? 'unknown CPU';
  return `${cpus().length} × ${cpu}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}`;
}

function commit(): string {
  try {
    return execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
  } catch {
    return 'unknown';
  }
}

/**
 * Add `row` to the markdown table of bench/README.md whose header line is `header` (after its
 * last row); if there is no such table, append one (header, separator, row) at the end.
 */
async function addRow(header: string, row: string): Promise<void> {
  const path = `${BENCH_DIR}README.md`;
  const lines = (await readFile(path, 'utf8')).replace(/\n+$/, '').split('\n');
  const at = lines.indexOf(header);
  if (at < 0) {
    const sep = header.replace(/[^|]+/g, (cell) => ` ${'-'.repeat(Math.max(3, cell.length - 2))} `);
    lines.push('', header, sep, row);
  } else {
    let end = at + 1;
    while (end < lines.length && lines[end]?.startsWith('|')) end++;
    lines.splice(end, 0, row);
  }
  await writeFile(path, `${lines.join('\n')}\n`);
}

const MICRO_HEADER =
  '| date | commit | machine | transition | scheduler | store | pool (runs/s, CPU/run) |';
const STEADY_HEADER =
  '| date | commit | machine | monitors @ interval, locations | checks/s achieved / expected | ' +
  'lag p50 / p99 (bucket) | > 1 s late | CPU ms/check | coordinator CPU s, peak RSS | ' +
  'probes CPU s, peak RSS | store B/monitor |';

function int(v: string | undefined, name: string, dflt: number): number {
  if (v === undefined) return dflt;
  const n = Number(v);
  if (!Number.isInteger(n) || n <= 0) {
    process.stderr.write(`bench: --${name} must be a positive integer\n`);
    process.exit(2);
  }
  return n;
}

async function steady(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      monitors: { type: 'string' },
      interval: { type: 'string' },
      duration: { type: 'string' },
      locations: { type: 'string' },
      'cpu-prof': { type: 'boolean', default: false },
    },
  });
  const date = new Date().toISOString();
  const stamp = date.replace(/[:.]/g, '-');
  const figures = await benchSteady({
    monitors: int(values.monitors, 'monitors', 2000),
    interval: int(values.interval, 'interval', 60),
    duration: int(values.duration, 'duration', 120),
    locations: int(values.locations, 'locations', 2),
    ...(values['cpu-prof'] ? { cpuProfDir: `${BENCH_DIR}results/prof-steady-${stamp}` } : {}),
  });
  const record = { scenario: 'steady', date, commit: commit(), machine: machine(), figures };
  process.stdout.write(`${JSON.stringify(record, null, 2)}\n`);
  await mkdir(`${BENCH_DIR}results`, { recursive: true });
  await writeFile(`${BENCH_DIR}results/steady-${stamp}.json`, JSON.stringify(record, null, 2));
  const f = figures;
  const coord = f.processes.find((p) => p.role === 'coordinator');
  const probes = f.processes.filter((p) => p.role.startsWith('probe'));
  const s = (x: number | string | null): string => (x === null ? '–' : `${x} s`);
  await addRow(
    STEADY_HEADER,
    `| ${date.slice(0, 10)} | ${record.commit} | ${record.machine} | ` +
      `${f.monitors} @ ${f.interval_s} s, ${f.locations}${f.cpu_profile_dir ? ' (coordinator under --cpu-prof)' : ''} | ` +
      `${f.achieved_checks_per_s} / ${f.expected_checks_per_s} (${f.duration_s} s) | ` +
      `${s(f.schedule_lag_p50_s)} / ${s(f.schedule_lag_p99_s)} | ` +
      `${f.late_over_1s_share === null ? '–' : `${(f.late_over_1s_share * 100).toFixed(3)} %`} | ` +
      `${f.cpu_ms_per_check ?? '–'} | ${coord?.cpu_s_window} s, ${coord?.peak_rss_mib} MiB | ` +
      `${probes.map((p) => `${p.cpu_s_window} s, ${p.peak_rss_mib} MiB`).join('; ')} | ` +
      `${f.store_bytes_per_monitor} |`,
  );
}

async function main(): Promise<void> {
  const scenario = process.argv[2] ?? 'micro';
  if (scenario === 'steady') return steady(process.argv.slice(3));
  const small = scenario === 'smoke';
  if (scenario !== 'micro' && scenario !== 'smoke') {
    process.stderr.write(`bench: unknown scenario '${scenario}' (have: micro, smoke, steady)\n`);
    process.exit(2);
  }
  const results: Record<string, Figures> = {
    transition: benchTransition(small ? 50_000 : 1_000_000),
    scheduler: await benchScheduler(small ? 5_000 : 100_000, 60),
    store: await benchStore(small ? 5_000 : 50_000),
    pool: await benchPool(small ? 300 : 4_000, small ? 50 : 200),
  };
  const record = {
    scenario,
    date: new Date().toISOString(),
    commit: commit(),
    machine: machine(),
    results,
  };
  process.stdout.write(`${JSON.stringify(record, null, 2)}\n`);
  if (small) return; // smoke runs prove the harness works; their figures are not recorded
  await mkdir(`${BENCH_DIR}results`, { recursive: true });
  await writeFile(
    `${BENCH_DIR}results/${scenario}-${record.date.replace(/[:.]/g, '-')}.json`,
    JSON.stringify(record, null, 2),
  );
  const r = results;
  await addRow(
    MICRO_HEADER,
    `| ${record.date.slice(0, 10)} | ${record.commit} | ${record.machine} | ` +
      `${r.transition?.ns_per_transition} ns | ${r.scheduler?.cpu_us_per_run} µs | ` +
      `${r.store?.writes_per_s}/s | ${r.pool?.runs_per_s}/s, ${r.pool?.probe_cpu_ms_per_run} ms |\n`,
  );
}

await main();
