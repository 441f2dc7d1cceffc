// Original file: proto/vigil/probe/v1/probe.proto

export interface Hello {
  /**
   * Major version of this protocol the probe speaks; the coordinator refuses another major.
   */
  protocol_version?: number;
  /**
   * Name of the probing location, e.g. "amsterdam"; several probes may share one.
   */
  location?: string;
  /**
   * Most runs this probe accepts in flight at once (backpressure).
   */
  capacity?: number;
  /**
   * Free-form identity of the node for logs (hostname, pid).
   */
  node_name?: string;
}

export interface Hello__Output {
  /**
   * Major version of this protocol the probe speaks; the coordinator refuses another major.
   */
  protocol_version: number;
  /**
   * Name of the probing location, e.g. "amsterdam"; several probes may share one.
   */
  location: string;
  /**
   * Most runs this probe accepts in flight at once (backpressure).
   */
  capacity: number;
  /**
   * Free-form identity of the node for logs (hostname, pid).
   */
  node_name: string;
}
