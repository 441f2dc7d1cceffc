/**
 * The `certificate_health` check (CONTRACT §5): one TLS handshake with SNI to the URL's host
 * and port (default 443) over a fresh connection, then a verdict on the certificate chain the
 * server sent — expiry, host name, trust, signature hash (precedence and wording in
 * lib/certificate-verdict.ts). Runs inside a piscina worker, many runs at once per thread.
 * Never throws: a bad certificate, like an unreachable site, is a result.
 *
 * Result contract (src/domain/certificate.ts, read by the coordinator):
 * - handshake done, certificate valid: `ok: true`, `error: ''`, `detail: { certificate }`;
 * - handshake done, certificate invalid: `ok: false`, `error` says why, `detail: { certificate }`;
 * - no handshake (refused, DNS, timeout, TLS failure before a certificate was seen):
 *   `ok: false`, `error: 'Cannot connect: <what happened>'`, `detail: { unreachable: true }`,
 *   which leaves the check's certificate status as it was.
 * `httpStatusCode` is always 0: no HTTP request is made.
 *
 * Trust store: Node's root certificates plus `NODE_EXTRA_CA_CERTS`, read when the worker
 * module loads (lib/trust-store.ts).
 */
import { isIP } from 'node:net';
import { performance } from 'node:perf_hooks';
import { connect, type DetailedPeerCertificate, type TLSSocket } from 'node:tls';
import { judgeCertificate } from './lib/certificate-verdict.js';
import { describeFailureReason } from './lib/describe-error.js';
import { normalizeHost } from './lib/hostname.js';
import type { CheckTask, CheckTaskResult } from './lib/task.js';
import { trustStore } from './lib/trust-store.js';
import { parseCertificate, type ParsedCertificate } from './lib/x509.js';

/** Total budget of a run when the task names none, ms (CONTRACT §5). */
export const DEFAULT_TIMEOUT_MS = 30_000;

/** Port of an `https:` URL that names none. */
export const DEFAULT_PORT = 443;

/** How long a closing socket may linger after the verdict before it is destroyed, ms. */
const CLOSE_GRACE_MS = 2_000;

/**
 * The certificate part of a result's detail: the leaf as the coordinator stores it and
 * puts in webhook meta (src/domain/certificate.ts CertificateInfo). Times ms since epoch.
 */
export interface CertificateDetail {
  issuer: string;
  signatureAlgorithm: string;
  validFrom: number;
  validTo: number;
  fingerprint256: string;
}

/** What the handshake produced. */
type Handshake =
  | {
      kind: 'done';
      /** DER of the server's certificates, leaf first (Node's peer chain). */
      chain: Buffer[];
      authorized: boolean;
      authorizationError: string | null;
      /** `performance.now()` when the handshake completed. */
      at: number;
    }
  | { kind: 'failed'; error: unknown; timedOut: boolean };

/** Run one certificate_health check. Resolves with the outcome in every case. */
export default async function runCertificate(task: CheckTask): Promise<CheckTaskResult> {
  const startedAtMs = Date.now();
  const started = performance.now();
  const timeoutMs = task.timeoutMs > 0 ? task.timeoutMs : DEFAULT_TIMEOUT_MS;
  const elapsed = (until = performance.now()): number =>
    Math.round((until - started) * 1000) / 1000;
  const unreachable = (what: string): CheckTaskResult => ({
    ok: false,
    httpStatusCode: 0,
    error: `Cannot connect: ${what}`,
    responseTimeMs: elapsed(),
    startedAtMs,
    detail: { unreachable: true },
  });

  let url: URL;
  try {
    url = new URL(task.url);
  } catch {
    return unreachable('Invalid URL');
  }
  if (url.protocol !== 'https:') {
    return unreachable(`not an https:// URL (${url.protocol})`);
  }
  const host = normalizeHost(url.hostname);
  const port = url.port === '' ? DEFAULT_PORT : Number(url.port);

  const hs = await handshake(host, port, task.localAddress, timeoutMs);
  if (hs.kind === 'failed') {
    return unreachable(describeFailureReason(hs.error, timeoutMs, hs.timedOut));
  }
  const responseTimeMs = elapsed(hs.at);

  let chain: ParsedCertificate[];
  try {
    chain = hs.chain.map((der) => parseCertificate(der));
  } catch (err) {
    // OpenSSL accepted it but a parser did not: no certificate facts to report.
    return {
      ...unreachable(`the server's certificate could not be read (${(err as Error).message})`),
      responseTimeMs,
    };
  }
  const leaf = chain[0];
  if (leaf === undefined)
    return { ...unreachable('the server sent no certificate'), responseTimeMs };

  const error = judgeCertificate(
    {
      host,
      chain,
      authorized: hs.authorized,
      authorizationError: hs.authorizationError,
      now: Date.now(),
    },
    trustStore(),
  );
  const certificate: CertificateDetail = {
    issuer: leaf.issuerOrganization,
    signatureAlgorithm: leaf.signatureAlgorithm,
    validFrom: leaf.notBefore,
    validTo: leaf.notAfter,
    fingerprint256: leaf.fingerprint256,
  };
  return {
    ok: error === null,
    httpStatusCode: 0,
    error: error ?? '',
    responseTimeMs,
    startedAtMs,
    detail: { certificate },
  };
}

/**
 * One TLS handshake on a new socket, within `timeoutMs` from DNS lookup to the end of the
 * handshake. The certificate is not checked here (`rejectUnauthorized: false`, no hostname
 * check): OpenSSL's chain verdict is recorded and the caller judges.
 */
function handshake(
  host: string,
  port: number,
  localAddress: string | null,
  timeoutMs: number,
): Promise<Handshake> {
  return new Promise((resolve) => {
    let settled = false;
    let socket: TLSSocket | null = null;
    const settle = (result: Handshake): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(result);
    };
    const timer = setTimeout(() => {
      settle({ kind: 'failed', error: new Error('timed out'), timedOut: true });
      socket?.destroy();
    }, timeoutMs);
    try {
      socket = connect({
        host,
        port,
        // SNI names the host; RFC 6066 forbids IP literals there.
        ...(isIP(host) === 0 ? { servername: host } : {}),
        ...(localAddress ? { localAddress } : {}),
        secureContext: trustStore().secureContext,
        rejectUnauthorized: false,
        // The host name is judged with the rest (lib/hostname.ts); keep it out of OpenSSL's
        // authorizationError so that one says only whether the chain is trusted.
        checkServerIdentity: () => undefined,
      });
    } catch (err) {
      settle({ kind: 'failed', error: err, timedOut: false });
      return;
    }
    const s = socket;
    s.on('error', (err) => settle({ kind: 'failed', error: err, timedOut: false }));
    s.once('secureConnect', () => {
      const at = performance.now();
      const chain = peerChain(s.getPeerCertificate(true));
      const authorizationError = s.authorizationError as unknown;
      settle({
        kind: 'done',
        chain,
        authorized: s.authorized,
        authorizationError:
          authorizationError instanceof Error
            ? ((authorizationError as NodeJS.ErrnoException).code ?? authorizationError.message)
            : typeof authorizationError === 'string'
              ? authorizationError
              : null,
        at,
      });
      // Close politely (close_notify), but never linger past the grace period.
      const kill = setTimeout(() => s.destroy(), CLOSE_GRACE_MS);
      kill.unref();
      s.once('close', () => clearTimeout(kill));
      s.end();
    });
  });
}

/** The DER certificates of Node's peer chain, leaf first; each certificate once. */
function peerChain(peer: DetailedPeerCertificate): Buffer[] {
  const ders: Buffer[] = [];
  const seen = new Set<string>();
  let cert: DetailedPeerCertificate | undefined = peer;
  // An empty object means no certificate (an anonymous cipher suite).
  while (cert?.raw && !seen.has(cert.fingerprint256)) {
    seen.add(cert.fingerprint256);
    ders.push(cert.raw);
    cert = cert.issuerCertificate;
  }
  return ders;
}
