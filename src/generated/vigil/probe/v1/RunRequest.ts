// Original file: proto/vigil/probe/v1/probe.proto

import type { Long } from '@grpc/proto-loader';

export interface RunRequest {
  /**
   * Unique per run; results carry it back so that late or duplicate results are ignored.
   */
  run_id?: number | string | Long;
  check_id?: number | string | Long;
  /**
   * "uptime" or "certificate_health".
   */
  check_name?: string;
  url?: string;
  /**
   * Total time budget for the run, ms.
   */
  timeout_ms?: number;
}

export interface RunRequest__Output {
  /**
   * Unique per run; results carry it back so that late or duplicate results are ignored.
   */
  run_id: number;
  check_id: number;
  /**
   * "uptime" or "certificate_health".
   */
  check_name: string;
  url: string;
  /**
   * Total time budget for the run, ms.
   */
  timeout_ms: number;
}
