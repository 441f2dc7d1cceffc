/**
 * Phase timings of one run (CONTRACT §5: "phase timings are kept"). Measured on the run's
 * first connection, which is the one a new visitor pays for: DNS lookup, TCP connect, TLS
 * handshake; then time to the final response's headers and the total.
 */
import type { Socket } from 'node:net';
import { performance } from 'node:perf_hooks';

/** Phase durations of one run, ms (fractional); null when the phase did not happen. */
export interface PhaseTimings {
  /** DNS lookup of the first connection; null for an IP literal. */
  dnsMs: number | null;
  /** TCP connect of the first connection, after DNS. */
  tcpMs: number | null;
  /** TLS handshake of the first connection, after TCP; null for `http:`. */
  tlsMs: number | null;
  /** From the start of the run until the final response's headers arrived. */
  firstByteMs: number | null;
  /** From the start of the run until the body was read. */
  totalMs: number;
}

const round = (ms: number | null): number | null =>
  ms === null ? null : Math.round(ms * 1000) / 1000;

/** Collects the phase marks of one run. Valid for one run only. */
export class PhaseRecorder {
  /** `performance.now()` when the run started. */
  readonly startedAt: number;
  /** Whether a first connection is being watched; later connections are not measured. */
  private watching = false;
  private connectStart: number | null = null;
  private dnsEnd: number | null = null;
  private tcpEnd: number | null = null;
  private tlsEnd: number | null = null;
  private headersAt: number | null = null;

  constructor(startedAt = performance.now()) {
    this.startedAt = startedAt;
  }

  /** Milliseconds since the run started. */
  elapsed(): number {
    return performance.now() - this.startedAt;
  }

  /** Mark the arrival of the final response's headers. */
  markHeaders(): void {
    this.headersAt = performance.now();
  }

  /**
   * Watch the run's first connection, right after its TCP socket was created (before its DNS
   * lookup can have finished): Node emits `lookup` when the host name is resolved (not for an
   * IP literal) and `connect` when TCP is up; the TLS socket on top, if any, emits
   * `secureConnect` after the handshake. Every later call of the same run is ignored.
   */
  watch(tcp: Socket, tls: Socket | null): void {
    if (this.watching) return;
    this.watching = true;
    this.connectStart = performance.now();
    tcp.once('lookup', () => {
      this.dnsEnd = performance.now();
    });
    tcp.once('connect', () => {
      this.tcpEnd = performance.now();
    });
    tls?.once('secureConnect', () => {
      this.tlsEnd = performance.now();
    });
  }

  /** The timings so far; call when the run is over. */
  result(totalMs = this.elapsed()): PhaseTimings {
    const dnsMs =
      this.connectStart !== null && this.dnsEnd !== null ? this.dnsEnd - this.connectStart : null;
    const tcpFrom = this.dnsEnd ?? this.connectStart;
    const tcpMs = tcpFrom !== null && this.tcpEnd !== null ? this.tcpEnd - tcpFrom : null;
    const tlsMs = this.tcpEnd !== null && this.tlsEnd !== null ? this.tlsEnd - this.tcpEnd : null;
    const firstByteMs = this.headersAt !== null ? this.headersAt - this.startedAt : null;
    return {
      dnsMs: round(dnsMs),
      tcpMs: round(tcpMs),
      tlsMs: round(tlsMs),
      firstByteMs: round(firstByteMs),
      totalMs: round(totalMs) ?? totalMs,
    };
  }
}
