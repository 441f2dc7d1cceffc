/**
 * The coordinator's end of the probe protocol (proto/vigil/probe/v1/probe.proto, CONTRACT
 * §7): authenticates each stream by the shared probe token, refuses other protocol majors,
 * turns the stream into a ProbeSession for the scheduler, and drops probes silent for 15 s.
 */
import * as grpc from '@grpc/grpc-js';
import { randomUUID, timingSafeEqual } from 'node:crypto';
import type { Clock, TimerHandle } from '../common/clock.js';
import type { Logger } from '../common/logger.js';
import { loadProbeProto, PROTOCOL_VERSION } from '../common/proto.js';
import type { CoordinatorMessage } from '../generated/vigil/probe/v1/CoordinatorMessage.js';
import type { ProbeMessage__Output } from '../generated/vigil/probe/v1/ProbeMessage.js';
import type { ProbeSession, RunRequestMessage } from './probe-registry.js';
import type { Run } from './probe-registry.js';
import type { Scheduler } from './scheduler.js';

export interface ProbeServerOptions {
  scheduler: Scheduler;
  /** Shared secret every probe must present (`authorization: Bearer <token>`). */
  token: string;
  clock: Clock;
  logger: Logger;
  /** Interface to bind. @default '0.0.0.0' */
  host?: string;
  /** Port; 0 picks a free one. */
  port: number;
  /** TLS for the channel; insecure when omitted. */
  credentials?: grpc.ServerCredentials;
  /** A probe silent this long is dropped, ms. @default 15000 (CONTRACT §7) */
  probeTimeoutMs?: number;
  /** Heartbeat period in both directions, ms. @default 5000 */
  heartbeatMs?: number;
  /** Most runs one probe may hold in flight, whatever it announces. @default 4096 */
  maxCapacity?: number;
}

type Stream = grpc.ServerDuplexStream<ProbeMessage__Output, CoordinatorMessage>;

/** A running probe server; `port` is the bound port. */
export interface ProbeServer {
  port: number;
  close(): Promise<void>;
}

/**
 * Start serving the probe protocol.
 * @throws Error when the port cannot be bound (e.g. in use).
 */
export async function startProbeServer(opts: ProbeServerOptions): Promise<ProbeServer> {
  const proto = loadProbeProto();
  const server = new grpc.Server({
    'grpc.keepalive_time_ms': 10_000,
    'grpc.keepalive_timeout_ms': 5_000,
    'grpc.keepalive_permit_without_calls': 1,
  });
  const probeTimeoutMs = opts.probeTimeoutMs ?? 15_000;
  const heartbeatMs = opts.heartbeatMs ?? 5_000;
  const expected = Buffer.from(`Bearer ${opts.token}`);
  const live = new Map<string, { session: ProbeSession; stream: Stream }>();

  const tokenOk = (call: Stream): boolean => {
    const got = call.metadata.get('authorization')[0];
    const b = Buffer.from(typeof got === 'string' ? got : '');
    return b.length === expected.length && timingSafeEqual(b, expected);
  };

  server.addService(proto.vigil.probe.v1.ProbeControl.service, {
    Connect: (call: Stream) => {
      const peer = call.getPeer();
      if (!tokenOk(call)) {
        opts.logger.warn({ peer }, 'probe refused: wrong or missing probe token');
        call.emit('error', {
          code: grpc.status.UNAUTHENTICATED,
          details:
            'probe token rejected: set the same --token / VIGIL_PROBE_TOKEN as the coordinator',
        });
        return;
      }
      let session: ProbeSession | null = null;
      const closeSession = (reason: string): void => {
        if (!session || !live.has(session.id)) return;
        live.delete(session.id);
        opts.scheduler.sessionClosed(session.id, reason);
      };
      call.on('data', (msg: ProbeMessage__Output) => {
        if (!session) {
          if (msg.body !== 'hello' || !msg.hello) {
            call.emit('error', {
              code: grpc.status.FAILED_PRECONDITION,
              details: 'the first message on the stream must be hello',
            });
            return;
          }
          const hello = msg.hello;
          if (hello.protocol_version !== PROTOCOL_VERSION) {
            opts.logger.warn({ peer, version: hello.protocol_version }, 'probe refused: protocol');
            call.emit('error', {
              code: grpc.status.FAILED_PRECONDITION,
              details: `probe speaks protocol v${hello.protocol_version}, this coordinator speaks v${PROTOCOL_VERSION}; upgrade the older side`,
            });
            return;
          }
          if (!hello.location || hello.location.length > 64) {
            call.emit('error', {
              code: grpc.status.INVALID_ARGUMENT,
              details: 'hello.location must be a name of 1 to 64 characters',
            });
            return;
          }
          const id = randomUUID();
          const capacity = Math.max(1, Math.min(hello.capacity || 1, opts.maxCapacity ?? 4096));
          session = {
            id,
            location: hello.location,
            capacity,
            inflight: new Map<number, Run>(),
            lastSeenAt: opts.clock.now(),
            send: (runs: RunRequestMessage[]) => {
              call.write({ runs: { runs } });
            },
            close: (reason: string) => {
              closeSession(reason);
              call.end();
            },
          };
          live.set(id, { session, stream: call });
          call.write({ welcome: { session_id: id, heartbeat_interval_ms: heartbeatMs } });
          opts.logger.info(
            { peer, node: hello.node_name, location: hello.location, capacity },
            'probe hello',
          );
          opts.scheduler.sessionOpened(session);
          return;
        }
        session.lastSeenAt = opts.clock.now();
        if (msg.body === 'results' && msg.results) {
          for (const r of msg.results.results) opts.scheduler.resultArrived(session.id, r);
        }
      });
      call.on('end', () => {
        closeSession('stream ended (the probe closed it, or keepalive found the connection dead)');
        call.end();
      });
      call.on('error', (err: Error) => closeSession(`stream error: ${err.message}`));
      call.on('cancelled', () => closeSession('stream cancelled'));
    },
  });

  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync(
      `${opts.host ?? '0.0.0.0'}:${opts.port}`,
      opts.credentials ?? grpc.ServerCredentials.createInsecure(),
      (err, bound) => (err ? reject(err) : resolve(bound)),
    );
  });

  let timer: TimerHandle | null = null;
  const tick = (): void => {
    const now = opts.clock.now();
    for (const { session, stream } of [...live.values()]) {
      if (now - session.lastSeenAt > probeTimeoutMs) {
        opts.logger.warn(
          { sessionId: session.id, location: session.location },
          'probe silent, dropped',
        );
        session.close(`no message for ${probeTimeoutMs / 1000} s`);
        continue;
      }
      stream.write({ heartbeat: { sent_at_ms: now } });
    }
    timer = opts.clock.setTimer(tick, heartbeatMs);
  };
  timer = opts.clock.setTimer(tick, heartbeatMs);

  return {
    port,
    close: async () => {
      if (timer) opts.clock.clearTimer(timer);
      for (const { session } of [...live.values()]) session.close('coordinator shutting down');
      await new Promise<void>((resolve) => {
        server.tryShutdown(() => resolve());
        setTimeout(() => {
          server.forceShutdown();
          resolve();
        }, 2_000).unref();
      });
    },
  };
}
