// Original file: proto/vigil/probe/v1/probe.proto

import type { Long } from '@grpc/proto-loader';

export interface RunResult {
  run_id?: number | string | Long;
  check_id?: number | string | Long;
  /**
   * true when the check passed (uptime: final status 200-399).
   */
  ok?: boolean;
  /**
   * Final HTTP status; 0 when no HTTP answer came.
   */
  http_status_code?: number;
  /**
   * Human-readable failure, e.g. "503 - Service Unavailable" or "0 - Connection refused".
   */
  error?: string;
  /**
   * Wall time of the whole run, ms.
   */
  response_time_ms?: number | string;
  /**
   * When the run started on the probe, ms since the Unix epoch.
   */
  started_at_ms?: number | string | Long;
  /**
   * Check-specific details as JSON (e.g. certificate meta), empty when none.
   */
  detail_json?: string;
}

export interface RunResult__Output {
  run_id: number;
  check_id: number;
  /**
   * true when the check passed (uptime: final status 200-399).
   */
  ok: boolean;
  /**
   * Final HTTP status; 0 when no HTTP answer came.
   */
  http_status_code: number;
  /**
   * Human-readable failure, e.g. "503 - Service Unavailable" or "0 - Connection refused".
   */
  error: string;
  /**
   * Wall time of the whole run, ms.
   */
  response_time_ms: number;
  /**
   * When the run started on the probe, ms since the Unix epoch.
   */
  started_at_ms: number;
  /**
   * Check-specific details as JSON (e.g. certificate meta), empty when none.
   */
  detail_json: string;
}
