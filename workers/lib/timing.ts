/**
 * Phase timings of one run (CONTRACT §5: "phase timings are kept"). Measured on the run's
 * first connection, which is the one a new visitor pays for: DNS lookup, TCP connect, TLS
 * handshake; then time to the final response's headers and the total.
 */
import * as dns from 'node:dns';
import type { LookupFunction, Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { buildConnector } from 'undici';

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
  /** Whether a first connection has been claimed; later connections are not measured. */
  private claimed = false;
  private dnsStart: number | null = null;
  private dnsEnd: number | null = null;
  private connectStart: number | null = null;
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
   * An undici connector that opens sockets exactly like undici's own (`buildConnector`) but
   * notes when DNS, TCP and TLS finish on the first socket.
   * @param connectTimeoutMs how long one TCP+TLS connect may take, ms
   */
  connector(connectTimeoutMs: number): buildConnector.connector {
    const lookup: LookupFunction = (hostname, options, callback) => {
      // The run's first lookup belongs to its first connection; later ones (redirects to
      // other hosts) are not measured.
      const measured = this.dnsStart === null;
      if (measured) this.dnsStart = performance.now();
      dns.lookup(hostname, options, (err, address, family) => {
        if (measured) this.dnsEnd = performance.now();
        (callback as (e: NodeJS.ErrnoException | null, a: unknown, f?: number) => void)(
          err,
          address,
          family,
        );
      });
    };
    // maxCachedSessions 0: no TLS session resumption, every run pays a full handshake.
    const base = buildConnector({ timeout: connectTimeoutMs, maxCachedSessions: 0, lookup });
    return (opts, callback) => {
      const first = !this.claimed;
      this.claimed = true;
      if (first) this.connectStart = performance.now();
      // undici's connector returns the socket it opened, though its type says void; the
      // 'connect' event is the only place where TCP ends and TLS begins.
      const socket = (base as unknown as (...a: Parameters<typeof base>) => Socket | undefined)(
        opts,
        callback,
      );
      if (first && socket) {
        socket.once('connect', () => {
          this.tcpEnd = performance.now();
        });
        socket.once('secureConnect', () => {
          this.tlsEnd = performance.now();
        });
      }
    };
  }

  /** The timings so far; call when the run is over. */
  result(totalMs = this.elapsed()): PhaseTimings {
    const dnsMs =
      this.dnsStart !== null && this.dnsEnd !== null ? this.dnsEnd - this.dnsStart : null;
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
