/**
 * The long-running roles (CONTRACT §1): `vigil coordinator` (coordinator + /webapi facade +
 * dispatcher) and `vigil start` (the same plus one local probe node per location, connected
 * over real gRPC on loopback, the same code path as a remote probe). Starts everything or
 * nothing: on any failure what was started is stopped again and the error is thrown.
 */
import type { Clock } from '../common/clock.js';
import { logger } from '../common/logger.js';
import { Coordinator } from '../coordinator/coordinator.js';
import { startProbeServer, type ProbeServer } from '../coordinator/grpc-server.js';
import { buildApp } from '../facade/app.js';
import { ProbeNode } from '../probe/probe-node.js';
import { systemClock } from '../common/clock.js';
import { channelCredentials, serverCredentials, type TlsFiles } from '../common/tls.js';
import {
  clearRuntimeFiles,
  resolveProbeToken,
  writeAdminToken,
  writeEndpoints,
  type Endpoints,
} from './data-dir.js';

export interface ServiceOptions {
  dataDir: string;
  /** @default '127.0.0.1' */
  httpHost: string;
  /** 0 = pick a free port. */
  httpPort: number;
  grpcHost: string;
  grpcPort: number;
  /** Probe token; generated and saved in the data dir when absent. */
  probeToken?: string;
  /** One local probe node per name; empty for `vigil coordinator`. */
  locations: string[];
  /** Allow loopback/private webhook receivers (issue 4). */
  allowPrivateWebhooks: boolean;
  /** /webapi requests per minute per token (CONTRACT §4 `VIGIL_RATE_LIMIT`). */
  rateLimitPerMinute: number;
  /** TLS for the probe channel (`vigil coordinator` only; local probes use loopback). */
  tls?: TlsFiles;
  clock?: Clock;
}

/** A running service. */
export interface RunningService {
  endpoints: Endpoints;
  coordinator: Coordinator;
  probes: ProbeNode[];
  /** Graceful stop: probes, HTTP (finishing requests), gRPC, dispatcher, store. */
  close(): Promise<void>;
}

/**
 * Start the service.
 * @throws VigilError VIGIL_ERR_DATA_DIR_LOCKED, or the listen error (port in use).
 */
export async function startService(opts: ServiceOptions): Promise<RunningService> {
  const log = logger('service');
  const clock = opts.clock ?? systemClock;
  const undo: Array<() => Promise<void>> = [];
  const unwind = async (): Promise<void> => {
    for (const step of undo.reverse()) await step().catch(() => undefined);
  };
  try {
    const coordinator = await Coordinator.open({
      dataDir: opts.dataDir,
      clock,
      allowPrivateWebhooks: opts.allowPrivateWebhooks,
    });
    undo.push(() => coordinator.close());
    const token = await resolveProbeToken(opts.dataDir, opts.probeToken);

    let grpcServer: ProbeServer | null = null;
    grpcServer = await startProbeServer({
      scheduler: coordinator.scheduler,
      token,
      clock,
      logger: logger('grpc-server'),
      host: opts.grpcHost,
      port: opts.grpcPort,
      credentials: serverCredentials(opts.tls ?? {}),
    });
    const probeServer = grpcServer;
    undo.push(() => probeServer.close());

    const adminToken = await writeAdminToken(opts.dataDir);
    const app = buildApp({
      service: coordinator,
      admin: coordinator,
      adminToken,
      rateLimitPerMinute: opts.rateLimitPerMinute,
    });
    await app.listen({ host: opts.httpHost, port: opts.httpPort });
    undo.push(() => app.close());
    const address = app.server.address();
    const httpPort = typeof address === 'object' && address ? address.port : opts.httpPort;
    const endpoints: Endpoints = { http: httpPort, grpc: probeServer.port };
    await writeEndpoints(opts.dataDir, endpoints);
    undo.push(() => clearRuntimeFiles(opts.dataDir));

    coordinator.start();
    const probes: ProbeNode[] = [];
    for (const location of opts.locations) {
      const node = new ProbeNode({
        coordinator: `127.0.0.1:${probeServer.port}`,
        location,
        token,
        localAddress: null,
      });
      node.start();
      probes.push(node);
      undo.push(() => node.stop());
    }
    await Promise.all(probes.map((p) => p.ready()));
    log.info(
      {
        http: `http://${opts.httpHost}:${httpPort}/webapi/`,
        grpc: probeServer.port,
        locations: opts.locations,
      },
      'vigil is running',
    );
    let closing: Promise<void> | null = null;
    return {
      endpoints,
      coordinator,
      probes,
      close: () => (closing ??= unwind()),
    };
  } catch (err) {
    await unwind();
    throw err;
  }
}

/** Standalone probe node (`vigil probe`). */
export interface ProbeOptions {
  coordinator: string;
  location: string;
  token: string;
  localAddress: string | null;
  capacity?: number;
  tls?: TlsFiles;
}

/**
 * Start a standalone probe node; it connects and reconnects by itself.
 * @throws VigilError VIGIL_ERR_CONFIG for unreadable TLS files
 */
export function startProbe(opts: ProbeOptions): ProbeNode {
  const node = new ProbeNode({
    coordinator: opts.coordinator,
    location: opts.location,
    token: opts.token,
    localAddress: opts.localAddress,
    credentials: channelCredentials(opts.tls ?? {}),
    ...(opts.capacity !== undefined ? { capacity: opts.capacity } : {}),
  });
  node.start();
  return node;
}
