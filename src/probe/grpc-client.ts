/**
 * The probe's end of the coordinator↔probe protocol (proto/vigil/probe/v1/probe.proto,
 * CONTRACT §7): building the client, opening the authenticated stream, and translating
 * between proto messages and the probe's own shapes.
 */
import * as grpc from '@grpc/grpc-js';
import { loadProbeProto } from '../common/proto.js';
import type { CoordinatorMessage__Output } from '../generated/vigil/probe/v1/CoordinatorMessage.js';
import type { ProbeControlClient } from '../generated/vigil/probe/v1/ProbeControl.js';
import type { ProbeMessage } from '../generated/vigil/probe/v1/ProbeMessage.js';
import type { RunRequest__Output } from '../generated/vigil/probe/v1/RunRequest.js';
import type { RunResult } from '../generated/vigil/probe/v1/RunResult.js';
import type { CheckTaskResult } from './task.js';

export type { ProbeControlClient, CoordinatorMessage__Output, ProbeMessage, RunRequest__Output };

/** The bidi `Connect` stream as the probe sees it. */
export type ControlStream = grpc.ClientDuplexStream<ProbeMessage, CoordinatorMessage__Output>;

/**
 * Channel options. The channel's own reconnect backoff is kept as short as the probe's
 * (0.5 s → 10 s) so that a stream opened after the coordinator came back is not failed by a
 * channel still waiting out gRPC's default backoff of up to 120 s.
 */
const CHANNEL_OPTIONS: grpc.ChannelOptions = {
  'grpc.initial_reconnect_backoff_ms': 500,
  'grpc.max_reconnect_backoff_ms': 10_000,
};

/**
 * A ProbeControl client for `address` (`host:port`).
 * @param credentials channel credentials; insecure when omitted
 */
export function createProbeControlClient(
  address: string,
  credentials: grpc.ChannelCredentials = grpc.credentials.createInsecure(),
): ProbeControlClient {
  const { ProbeControl } = loadProbeProto().vigil.probe.v1;
  return new ProbeControl(address, credentials, CHANNEL_OPTIONS);
}

/** Open the `Connect` stream with `authorization: Bearer <token>` metadata (CONTRACT §7). */
export function openControlStream(client: ProbeControlClient, token: string): ControlStream {
  const metadata = new grpc.Metadata();
  metadata.set('authorization', `Bearer ${token}`);
  return client.Connect(metadata);
}

/** One RunResult message for a finished run. */
export function toRunResult(
  run: Pick<RunRequest__Output, 'run_id' | 'check_id'>,
  result: CheckTaskResult,
): RunResult {
  return {
    run_id: run.run_id,
    check_id: run.check_id,
    ok: result.ok,
    http_status_code: result.httpStatusCode,
    error: result.error,
    response_time_ms: result.responseTimeMs,
    started_at_ms: result.startedAtMs,
    detail_json: result.detail === null ? '' : JSON.stringify(result.detail),
  };
}

/** How a closed stream is reported in the log. */
export interface StreamEndReport {
  level: 'error' | 'warn' | 'info';
  message: string;
}

/** Explain why the coordinator stream ended, in the words an operator needs. */
export function describeStreamEnd(
  status: Pick<grpc.StatusObject, 'code' | 'details'>,
  secure = false,
): StreamEndReport {
  switch (status.code) {
    case grpc.status.UNAUTHENTICATED:
      return { level: 'error', message: 'probe token rejected by coordinator' };
    case grpc.status.FAILED_PRECONDITION:
      return { level: 'error', message: status.details || 'coordinator refused this probe' };
    case grpc.status.UNAVAILABLE:
      // A coordinator that rejects the client certificate (another CA) closes the connection
      // right after the TLS 1.3 handshake without an alert (Node checks it after OpenSSL did):
      // grpc-js then says only "Failed to connect" or "read ECONNRESET".
      if (
        /certificate|ssl|tls|handshake/i.test(status.details) ||
        (secure &&
          /^No connection established/.test(status.details) &&
          /Failed to connect|ECONNRESET|Connection closed before/.test(status.details))
      ) {
        return {
          level: 'error',
          message: `TLS with the coordinator failed (check --tls-ca and the certificates): ${status.details}`,
        };
      }
      return { level: 'warn', message: `coordinator unavailable: ${status.details}` };
    case grpc.status.OK:
      return { level: 'info', message: 'coordinator closed the stream' };
    default:
      return {
        level: 'warn',
        message: `coordinator stream ended: ${grpc.status[status.code] ?? status.code} ${status.details}`,
      };
  }
}
