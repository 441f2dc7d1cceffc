// Original file: proto/vigil/probe/v1/probe.proto

import type { Long } from '@grpc/proto-loader';

export interface Heartbeat {
  /**
   * Sender's wall clock, ms since the Unix epoch.
   */
  sent_at_ms?: number | string | Long;
}

export interface Heartbeat__Output {
  /**
   * Sender's wall clock, ms since the Unix epoch.
   */
  sent_at_ms: number;
}
