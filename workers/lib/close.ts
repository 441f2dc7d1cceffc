/**
 * How the uptime check closes a connection whose response it has read: a TCP reset (an
 * abortive close, as load balancers close their health checks), not a FIN.
 *
 * The side that sends the first FIN keeps the connection in TIME_WAIT for 60 s, and with
 * `--local-address` every new connection first binds a port of that address: the kernel's
 * search for a free port slows down as TIME_WAIT ports of that address pile up, and at 1,000
 * connections/s (60,000 a minute for 28,000 ephemeral ports) the ports would run out. Measured
 * on the probe pool paced at 1,000 runs/s from one address: CPU per run 0.36 → 1.3 → 4.5 ms as
 * TIME_WAIT grew 6,000 → 8,000 → 16,000 within 16 s. A reset leaves no TIME_WAIT on either side.
 *
 * Only after a complete answer: a reset makes the peer drop what it has not read yet, so the
 * certificate check (workers/certificate.ts), which stops right after its handshake, still
 * closes politely; a reset there would lose the client's last handshake message and the server
 * would log a failed handshake for every check.
 */
import type { Socket } from 'node:net';

/**
 * Close `tcp` with a reset, from a clean stack: in the next turn (setImmediate), and only if
 * nothing closed it in the meantime. `tcp` must be the TCP socket itself (for TLS, the socket it
 * runs over); where Node cannot reset (no TCP handle) it is destroyed plainly. Never throws.
 *
 * Never reset synchronously: resetting the TCP socket under a TLS socket from inside that TLS
 * socket's `secureConnect` handler (or a tick or microtask run on the way out of it) and then
 * destroying the TLS socket crashed Node 20 with a segmentation fault. The uptime check calls
 * this from other callbacks of the TLS socket (the read that completes a response), where no
 * crash was seen in 21,000 runs, but nothing makes those safer in principle. From a
 * setImmediate it is safe, also when the TLS socket is destroyed right after. A plain TCP
 * socket (`underTls` false) is also reset when anything destroys it before that turn.
 */
export function closeWithReset(tcp: Socket, underTls: boolean): void {
  if (!underTls) resetOnDestroy(tcp);
  setImmediate(resetNow, tcp);
}

/**
 * Make whoever destroys `tcp` next — undici closing its Client in this very turn, or the
 * setImmediate of closeWithReset — close it with a reset. Without this, undici's own close
 * usually won the race and sent a FIN: in a 120,000-monitor run a third of the connections
 * still ended in TIME_WAIT (20,000 per source address) and binding ports cost most of the
 * probes' CPU. Plain TCP only: under TLS, a reset from inside the TLS socket's callbacks is
 * what crashed Node 20 (see closeWithReset).
 */
function resetOnDestroy(tcp: Socket): void {
  if (tcp.destroyed) return;
  const destroy = tcp.destroy;
  tcp.destroy = function resetInstead(this: Socket, err?: Error): Socket {
    tcp.destroy = destroy; // resetAndDestroy calls destroy() again: the original this time
    try {
      return tcp.resetAndDestroy();
    } catch {
      return destroy.call(tcp, err);
    }
  };
}

function resetNow(tcp: Socket): void {
  if (tcp.destroyed) return;
  try {
    tcp.resetAndDestroy();
  } catch {
    tcp.destroy();
  }
}
