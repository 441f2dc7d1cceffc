/**
 * `npm run bench -- <scenario> [args]`: runs a benchmark and records its figures with the
 * machine, commit and date — as JSON under bench/results/ and as a row appended to its table in
 * bench/README.md (see bench/harness.ts `runnable`).
 *
 * Scenarios are registered in {@link SCENARIOS}: a module exports a `Scenario` (name, usage,
 * parse, run, README header and row) and gets one entry here. `micro` runs all
 * micro-benchmarks, `smoke` the same at small N for CI (it fails only when the harness breaks,
 * never on timing; not recorded); the load scenarios take `[--monitors N] [--interval S]
 * [--duration S] [--locations K] [--cpu-prof]` plus their own options.
 */
import {
  runnable,
  UsageError,
  type RegistryEntry,
  type RunRecord,
  type Scenario,
} from './harness.js';
import { apiScenario } from './api.js';
import { churn } from './churn.js';
import {
  benchActor,
  benchGrpcRoundTrip,
  benchPool,
  benchScheduler,
  benchStore,
  benchTransition,
  type Figures,
} from './micro.js';
import { peer } from './peer.js';
import { restart } from './restart.js';
import { steady } from './steady.js';
import { tls } from './tls.js';
import { webhooks } from './webhooks.js';

type MicroFigures = Record<string, Figures>;

async function micro(small: boolean): Promise<MicroFigures> {
  return {
    transition: benchTransition(small ? 50_000 : 1_000_000),
    scheduler: await benchScheduler(small ? 5_000 : 100_000, 60),
    store: await benchStore(small ? 5_000 : 50_000),
    pool: await benchPool(small ? 300 : 4_000, small ? 50 : 200),
    actor: await benchActor(small ? 5_000 : 50_000, small ? 200 : 1_000),
    grpc: await benchGrpcRoundTrip(small ? 5_000 : 50_000),
  };
}

const noArgs =
  (name: string) =>
  (args: string[]): Record<string, never> => {
    if (args.length > 0) throw new UsageError(`${name} takes no arguments`);
    return {};
  };

const microScenario: Scenario<Record<string, never>, MicroFigures> = {
  name: 'micro',
  usage: '(no arguments)',
  parse: noArgs('micro'),
  run: () => micro(false),
  header:
    '| date | commit | machine | transition | scheduler | store | pool (runs/s, CPU/run) | ' +
    'actor (messages/s, CPU/message) | gRPC round trip (runs/s, CPU/run) |',
  row(r: RunRecord<MicroFigures>) {
    const f = r.figures;
    return (
      `| ${r.date.slice(0, 10)} | ${r.commit} | ${r.machine} | ` +
      `${f.transition?.ns_per_transition} ns | ${f.scheduler?.cpu_us_per_run} µs | ` +
      `${f.store?.writes_per_s}/s | ${f.pool?.runs_per_s}/s, ${f.pool?.probe_cpu_ms_per_run} ms | ` +
      `${f.actor?.messages_per_s}/s, ${f.actor?.cpu_us_per_message} µs | ` +
      `${f.grpc?.round_trips_per_s}/s, ${f.grpc?.cpu_us_per_run} µs |`
    );
  },
};

const smokeScenario: Scenario<Record<string, never>, MicroFigures> = {
  name: 'smoke',
  usage: '(no arguments; CI, not recorded)',
  parse: noArgs('smoke'),
  run: () => micro(true),
  header: null,
  row: () => '',
};

/** Every scenario by name. To add one: import it and add `runnable(it)`. */
const SCENARIOS: RegistryEntry[] = [
  runnable(microScenario),
  runnable(smokeScenario),
  runnable(steady),
  runnable(apiScenario),
  runnable(restart),
  runnable(peer),
  runnable(churn),
  runnable(webhooks),
  runnable(tls),
];

async function main(): Promise<void> {
  const name = process.argv[2] ?? 'micro';
  const entry = SCENARIOS.find((s) => s.name === name);
  if (!entry) {
    process.stderr.write(
      `bench: unknown scenario '${name}'; have:\n` +
        SCENARIOS.map((s) => `  ${s.name} ${s.usage}\n`).join(''),
    );
    process.exit(2);
  }
  try {
    await entry.main(process.argv.slice(3));
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(`bench ${name}: ${err.message}\nusage: ${name} ${entry.usage}\n`);
      process.exit(2);
    }
    throw err;
  }
}

await main();
