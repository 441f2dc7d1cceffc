/**
 * `npm run bench -- <scenario>`: runs a benchmark and records its figures with the machine,
 * commit and date — as JSON under bench/results/ and as a row appended to bench/README.md.
 * Scenarios: `micro` (all micro-benchmarks), `smoke` (the same at small N, for CI: it fails
 * only when the harness breaks, never on timing). The load scenarios of issue 7 (steady,
 * churn, tls, api, webhooks, restart, peer) are not built yet.
 */
import { execFileSync } from 'node:child_process';
import { appendFile, mkdir, writeFile } from 'node:fs/promises';
import { cpus, totalmem } from 'node:os';
import { fileURLToPath } from 'node:url';
import { benchPool, benchScheduler, benchStore, benchTransition, type Figures } from './micro.js';

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

async function main(): Promise<void> {
  const scenario = process.argv[2] ?? 'micro';
  const small = scenario === 'smoke';
  if (scenario !== 'micro' && scenario !== 'smoke') {
    process.stderr.write(`bench: unknown scenario '${scenario}' (have: micro, smoke)\n`);
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
  await appendFile(
    `${BENCH_DIR}README.md`,
    `| ${record.date.slice(0, 10)} | ${record.commit} | ${record.machine} | ` +
      `${r.transition?.ns_per_transition} ns | ${r.scheduler?.cpu_us_per_run} µs | ` +
      `${r.store?.writes_per_s}/s | ${r.pool?.runs_per_s}/s, ${r.pool?.probe_cpu_ms_per_run} ms |\n`,
  );
}

await main();
