#!/usr/bin/env node
/**
 * The `vigil` executable (CONTRACT §1). Flags beat environment variables beat defaults.
 * Bad flags: one line on stderr, exit code 2. A service that cannot start says why on stderr
 * and exits 1.
 */
import { Command, CommanderError, Option } from 'commander';
import { VigilError } from './common/errors.js';
import { allowPrivateFromEnv } from './delivery/address-policy.js';
import {
  parseHostPort,
  parseLocation,
  parseLocations,
  parsePort,
  parsePositiveInt,
} from './cli/options.js';
import { startProbe, startService } from './cli/serve.js';
import type { AdminAction } from './common/admin-ops.js';
import { runAdminOp } from './cli/users.js';

const dataDirOption = (): Option =>
  new Option('--data-dir <dir>', 'data directory').env('VIGIL_DATA_DIR').default('./data');
const httpPortOption = (): Option =>
  new Option('--http-port <port>', 'HTTP port of /webapi (0 = any free port)')
    .env('VIGIL_HTTP_PORT')
    .argParser(parsePort)
    .default(8080);
const grpcPortOption = (): Option =>
  new Option('--grpc-port <port>', 'gRPC port for probe nodes (0 = any free port)')
    .env('VIGIL_GRPC_PORT')
    .argParser(parsePort)
    .default(50051);
const httpHostOption = (): Option =>
  new Option('--http-host <host>', 'interface the HTTP API listens on')
    .env('VIGIL_HTTP_HOST')
    .default('127.0.0.1');
/** `start` binds gRPC to loopback (its probes are local); `coordinator` to every interface. */
const grpcHostOption = (byDefault: string): Option =>
  new Option('--grpc-host <host>', 'interface for gRPC').env('VIGIL_GRPC_HOST').default(byDefault);
const tokenOption = (): Option =>
  new Option(
    '--token <token>',
    'shared probe token (generated into DIR/probe.token if absent)',
  ).env('VIGIL_PROBE_TOKEN');

const tlsOptions = (): Option[] => [
  new Option('--tls-cert <file>', 'PEM certificate for the probe channel').env('VIGIL_TLS_CERT'),
  new Option('--tls-key <file>', 'PEM private key of --tls-cert').env('VIGIL_TLS_KEY'),
  new Option(
    '--tls-ca <file>',
    'PEM CA: coordinator requires probe certificates it signed (mTLS); probe trusts it',
  ).env('VIGIL_TLS_CA'),
];

interface ServeFlags {
  dataDir: string;
  httpPort: number;
  grpcPort: number;
  httpHost: string;
  grpcHost: string;
  token?: string;
  locations?: string[];
  tlsCert?: string;
  tlsKey?: string;
  tlsCa?: string;
  rateLimit: number;
}

const rateLimitOption = (): Option =>
  new Option('--rate-limit <n>', '/webapi requests per minute per token')
    .env('VIGIL_RATE_LIMIT')
    .argParser(parsePositiveInt)
    .default(120);

function fail(message: string, code: number): never {
  process.stderr.write(`vigil: ${message}\n`);
  process.exit(code);
}

function describe(err: unknown): string {
  if (err instanceof VigilError) {
    const fields = err.fields ? Object.values(err.fields).flat() : [];
    return fields.length > 1 ? fields.join(' ') : err.message;
  }
  const e = err as { code?: string; message?: string };
  if (e.code === 'EADDRINUSE') return `cannot listen: ${e.message ?? 'address in use'}`;
  return e.message ?? String(err);
}

async function serve(flags: ServeFlags, locations: string[]): Promise<void> {
  let service;
  try {
    service = await startService({
      dataDir: flags.dataDir,
      httpHost: flags.httpHost,
      httpPort: flags.httpPort,
      grpcHost: flags.grpcHost,
      grpcPort: flags.grpcPort,
      ...(flags.token ? { probeToken: flags.token } : {}),
      locations,
      // `vigil start` is the local/dev mode: receivers on this machine are the common case.
      // `vigil coordinator` refuses internal receivers unless the operator allows them.
      allowPrivateWebhooks:
        process.env.VIGIL_WEBHOOK_ALLOW_PRIVATE !== undefined
          ? allowPrivateFromEnv()
          : locations.length > 0,
      tls: { cert: flags.tlsCert, key: flags.tlsKey, ca: flags.tlsCa },
      rateLimitPerMinute: flags.rateLimit,
    });
  } catch (err) {
    fail(describe(err), 1);
  }
  const { http, grpc } = service.endpoints;
  process.stderr.write(
    `vigil: listening on http://${flags.httpHost}:${http}/webapi/ (gRPC ${grpc}), data in ${flags.dataDir}\n`,
  );
  const stop = (): void => {
    void service.close().then(() => process.exit(0));
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

async function admin(dataDir: string, action: AdminAction): Promise<void> {
  try {
    const result = await runAdminOp(dataDir, action);
    process.stdout.write(`${JSON.stringify(result)}\n`);
  } catch (err) {
    const code = err instanceof VigilError && err.code === 'VIGIL_ERR_VALIDATION' ? 2 : 1;
    fail(describe(err), code);
  }
}

export function buildCli(): Command {
  const program = new Command('vigil')
    .description('Vigil: uptime and TLS certificate monitoring with verified, signed webhooks')
    .version('0.1.0')
    .showSuggestionAfterError(false)
    .exitOverride()
    .configureOutput({
      outputError: (str, write) => write(`vigil: ${str.replace(/^error: /, '').trim()}\n`),
    });

  program
    .command('start')
    .description('all-in-one: coordinator, /webapi, webhooks and one local probe per location')
    .addOption(dataDirOption())
    .addOption(httpPortOption())
    .addOption(grpcPortOption())
    .addOption(httpHostOption())
    .addOption(grpcHostOption('127.0.0.1'))
    .addOption(
      new Option('--locations <names>', 'comma-separated local probe locations')
        .env('VIGIL_LOCATIONS')
        .argParser(parseLocations)
        .default(['local-a', 'local-b'], 'local-a,local-b'),
    )
    .addOption(tokenOption())
    .addOption(rateLimitOption())
    .action((flags: ServeFlags) => serve(flags, flags.locations ?? ['local-a', 'local-b']));

  const coordinatorCmd = program
    .command('coordinator')
    .description('coordinator, /webapi and webhook dispatcher, waiting for remote probes')
    .addOption(dataDirOption())
    .addOption(httpPortOption())
    .addOption(grpcPortOption())
    .addOption(httpHostOption())
    .addOption(grpcHostOption('0.0.0.0'))
    .addOption(tokenOption())
    .addOption(rateLimitOption());
  for (const o of tlsOptions()) coordinatorCmd.addOption(o);
  coordinatorCmd.action((flags: ServeFlags) => serve(flags, []));

  const probeCmd = program
    .command('probe')
    .description('one probe node that runs checks for a coordinator')
    .addOption(
      new Option('--coordinator <host:port>', 'coordinator gRPC address')
        .env('VIGIL_COORDINATOR')
        .argParser(parseHostPort)
        .makeOptionMandatory(),
    )
    .addOption(
      new Option('--location <name>', 'name of this probing location')
        .env('VIGIL_LOCATION')
        .argParser(parseLocation)
        .makeOptionMandatory(),
    )
    .addOption(
      new Option('--local-address <ip>', 'source address of every check connection').env(
        'VIGIL_LOCAL_ADDRESS',
      ),
    )
    .addOption(
      new Option('--token <token>', 'shared probe token')
        .env('VIGIL_PROBE_TOKEN')
        .makeOptionMandatory(),
    )
    .addOption(
      new Option('--capacity <n>', 'most runs in flight at once')
        .env('VIGIL_PROBE_CAPACITY')
        .argParser(parsePositiveInt),
    );
  for (const o of tlsOptions()) probeCmd.addOption(o);
  probeCmd.action(
    (flags: {
      coordinator: string;
      location: string;
      localAddress?: string;
      token: string;
      capacity?: number;
      tlsCert?: string;
      tlsKey?: string;
      tlsCa?: string;
    }) => {
      let node;
      try {
        node = startProbe({
          coordinator: flags.coordinator,
          location: flags.location,
          token: flags.token,
          localAddress: flags.localAddress ?? null,
          tls: { cert: flags.tlsCert, key: flags.tlsKey, ca: flags.tlsCa },
          ...(flags.capacity !== undefined ? { capacity: flags.capacity } : {}),
        });
      } catch (err) {
        fail(describe(err), 2);
      }
      const stop = (): void => {
        void node.stop().then(() => process.exit(0));
      };
      process.once('SIGTERM', stop);
      process.once('SIGINT', stop);
    },
  );

  const users = program
    .command('users')
    .description('manage user accounts (works while the service runs)');
  users
    .command('create')
    .description('create a user and print it as JSON (with its API token)')
    .addOption(dataDirOption())
    .requiredOption('--email <email>', 'email address (unique)')
    .addOption(
      new Option('--plan <plan>', 'plan').choices(['free', 'pro', 'business']).default('free'),
    )
    .option('--webhook-url <url>', 'where webhooks are POSTed')
    .option('--api-enabled', 'activate the API at once', false)
    .action(
      (f: {
        dataDir: string;
        email: string;
        plan: string;
        webhookUrl?: string;
        apiEnabled: boolean;
      }) =>
        admin(f.dataDir, {
          op: 'create',
          args: {
            email: f.email,
            plan: f.plan,
            webhookUrl: f.webhookUrl ?? null,
            apiEnabled: f.apiEnabled,
          },
        }),
    );
  users
    .command('list')
    .description('print all users as a JSON array')
    .addOption(dataDirOption())
    .action((f: { dataDir: string }) => admin(f.dataDir, { op: 'list', args: {} }));
  users
    .command('show')
    .description('print one user as JSON')
    .addOption(dataDirOption())
    .requiredOption('--email <email>', 'email address')
    .action((f: { dataDir: string; email: string }) =>
      admin(f.dataDir, { op: 'show', args: { email: f.email } }),
    );
  users
    .command('set')
    .description("change a user's plan or webhook URL")
    .addOption(dataDirOption())
    .requiredOption('--email <email>', 'email address')
    .addOption(new Option('--plan <plan>', 'plan').choices(['free', 'pro', 'business']))
    .option('--webhook-url <url>', "webhook URL ('' removes it)")
    .action((f: { dataDir: string; email: string; plan?: string; webhookUrl?: string }) => {
      if (f.plan === undefined && f.webhookUrl === undefined)
        fail('give --plan and/or --webhook-url.', 2);
      return admin(f.dataDir, {
        op: 'set',
        args: {
          email: f.email,
          ...(f.plan !== undefined ? { plan: f.plan } : {}),
          ...(f.webhookUrl !== undefined
            ? { webhookUrl: f.webhookUrl === '' ? null : f.webhookUrl }
            : {}),
        },
      });
    });
  users
    .command('api')
    .description("activate or deactivate a user's API access")
    .addOption(dataDirOption())
    .requiredOption('--email <email>', 'email address')
    .option('--enable', 'activate')
    .option('--disable', 'deactivate')
    .action((f: { dataDir: string; email: string; enable?: boolean; disable?: boolean }) => {
      if (Boolean(f.enable) === Boolean(f.disable))
        fail('give exactly one of --enable or --disable.', 2);
      return admin(f.dataDir, { op: 'api', args: { email: f.email, enabled: Boolean(f.enable) } });
    });
  users
    .command('rotate-token')
    .description('issue a new API token; the old one stops working at once')
    .addOption(dataDirOption())
    .requiredOption('--email <email>', 'email address')
    .action((f: { dataDir: string; email: string }) =>
      admin(f.dataDir, { op: 'rotate-token', args: { email: f.email } }),
    );
  return program;
}

try {
  await buildCli().parseAsync(process.argv);
} catch (err) {
  if (err instanceof CommanderError) {
    process.exit(
      err.code === 'commander.helpDisplayed' ||
        err.code === 'commander.version' ||
        err.exitCode === 0
        ? 0
        : 2,
    );
  }
  fail(describe(err), 1);
}
