// Original file: proto/vigil/probe/v1/probe.proto

export interface Welcome {
  /**
   * Session id the coordinator gave this connection.
   */
  session_id?: string;
  heartbeat_interval_ms?: number;
}

export interface Welcome__Output {
  /**
   * Session id the coordinator gave this connection.
   */
  session_id: string;
  heartbeat_interval_ms: number;
}
