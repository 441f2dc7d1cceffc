/**
 * Turns what went wrong on the wire into the `"0 - <what happened>"` wording of CONTRACT §5.
 * The messages are what a person reading a webhook wants to see, not Node's internals.
 */

/** `30000` → `"30 s"`, `500` → `"0.5 s"`, `1250` → `"1.25 s"`. */
export function formatSeconds(ms: number): string {
  return `${Number((ms / 1000).toFixed(3))} s`;
}

/** The error text for a run that ran out of its total budget (CONTRACT §5). */
export function timeoutError(timeoutMs: number): string {
  return `0 - ${timeoutReason(timeoutMs)}`;
}

/** `"Timed out after 30 s"`: a run that ran out of its total budget, without a prefix. */
export function timeoutReason(timeoutMs: number): string {
  return `Timed out after ${formatSeconds(timeoutMs)}`;
}

/** The error text when the redirect chain is longer than the limit (CONTRACT §5). */
export function tooManyRedirectsError(maxRedirects: number): string {
  return `0 - ${tooManyRedirectsReason(maxRedirects)}`;
}

function tooManyRedirectsReason(maxRedirects: number): string {
  return `Too many redirects (more than ${maxRedirects})`;
}

/** OpenSSL certificate-verification codes, as Node puts them on `err.code`. */
const CERT_REASONS: Readonly<Record<string, string>> = {
  CERT_HAS_EXPIRED: 'certificate has expired',
  CERT_NOT_YET_VALID: 'certificate is not yet valid',
  DEPTH_ZERO_SELF_SIGNED_CERT: 'self-signed certificate',
  SELF_SIGNED_CERT_IN_CHAIN: 'self-signed certificate in the chain',
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: 'unable to verify the first certificate',
  UNABLE_TO_GET_ISSUER_CERT: 'unable to get the issuer certificate',
  UNABLE_TO_GET_ISSUER_CERT_LOCALLY: 'unable to get the local issuer certificate',
  CERT_SIGNATURE_FAILURE: 'certificate signature failure',
  CERT_UNTRUSTED: 'certificate not trusted',
  CERT_REVOKED: 'certificate revoked',
  CERT_REJECTED: 'certificate rejected',
  INVALID_CA: 'invalid CA certificate',
  CERT_CHAIN_TOO_LONG: 'certificate chain too long',
  ERR_TLS_CERT_ALTNAME_INVALID: "hostname does not match the certificate's names",
  HOSTNAME_MISMATCH: "hostname does not match the certificate's names",
};

const DNS_CODES = new Set(['ENOTFOUND', 'EAI_AGAIN', 'EAI_FAIL', 'EAI_NODATA', 'ENODATA']);

const TIMEOUT_CODES = new Set([
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
]);

interface ErrorFacts {
  code: string | undefined;
  message: string;
  name: string | undefined;
  /** OpenSSL's short reason (`"wrong version number"`), when the error came from OpenSSL. */
  reason: string | undefined;
}

function facts(err: unknown): ErrorFacts {
  if (typeof err !== 'object' || err === null) {
    return { code: undefined, message: String(err), name: undefined, reason: undefined };
  }
  const o = err as { code?: unknown; message?: unknown; name?: unknown; reason?: unknown };
  return {
    code: typeof o.code === 'string' ? o.code : undefined,
    message: typeof o.message === 'string' ? o.message : String(err),
    name: typeof o.name === 'string' ? o.name : undefined,
    reason: typeof o.reason === 'string' ? o.reason : undefined,
  };
}

/**
 * The most telling error in a chain: the first one with a `code`, looking through `cause` and
 * the members of an AggregateError (Node's happy-eyeballs connect reports every address it
 * tried that way).
 */
function rootFacts(err: unknown): ErrorFacts {
  const seen = new Set<unknown>();
  const queue: unknown[] = [err];
  while (queue.length > 0 && seen.size < 10) {
    const e = queue.shift();
    if (seen.has(e)) continue;
    seen.add(e);
    const f = facts(e);
    if (f.code !== undefined) return f;
    if (typeof e === 'object' && e !== null) {
      const { cause, errors } = e as { cause?: unknown; errors?: unknown };
      if (Array.isArray(errors)) queue.push(...(errors as unknown[]));
      if (cause !== undefined) queue.push(cause);
    }
  }
  return facts(err);
}

function oneLine(text: string, max = 200): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

function tlsReason(f: ErrorFacts): string | null {
  const code = f.code ?? '';
  const known = CERT_REASONS[code];
  if (known !== undefined) return known;
  if (code.startsWith('ERR_SSL_') || code.startsWith('ERR_TLS_') || /CERT/.test(code)) {
    return f.reason ?? oneLine(f.message.replace(/^.*SSL routines:[^:]*:/, ''));
  }
  if (code === 'EPROTO' && /SSL|TLS/i.test(f.message)) {
    return f.reason ?? oneLine(f.message.replace(/^.*SSL routines:[^:]*:/, ''));
  }
  return null;
}

/**
 * `"0 - <what happened>"` for a run that got no HTTP answer (CONTRACT §5).
 * @param err what the request rejected with
 * @param timeoutMs the run's total budget, ms; named in the timeout message
 * @param timedOut whether the run's own deadline had passed when `err` arrived
 */
export function describeFailure(err: unknown, timeoutMs: number, timedOut: boolean): string {
  return `0 - ${describeFailureReason(err, timeoutMs, timedOut)}`;
}

/**
 * What happened to a connection, without the uptime check's `"0 - "` prefix:
 * `"Connection refused"`, `"Timed out after 30 s"`, `"TLS error: wrong version number"`.
 * The certificate check words its "Cannot connect: …" errors with it.
 * @param err what the connection attempt failed with
 * @param timeoutMs the run's total budget, ms; named in the timeout message
 * @param timedOut whether the run's own deadline had passed when `err` arrived
 */
export function describeFailureReason(err: unknown, timeoutMs: number, timedOut: boolean): string {
  const f = rootFacts(err);
  if (timedOut || f.name === 'TimeoutError' || (f.code && TIMEOUT_CODES.has(f.code))) {
    return timeoutReason(timeoutMs);
  }
  const code = f.code ?? '';
  if (code === 'ECONNREFUSED') return 'Connection refused';
  if (code === 'ECONNRESET') return 'Connection reset';
  if (DNS_CODES.has(code)) return `DNS lookup failed (${code})`;
  if (code === 'UND_ERR_SOCKET' || code === 'EPIPE') return 'Connection closed';
  if (code === 'ETIMEDOUT') return 'Connection timed out';
  if (code === 'EHOSTUNREACH') return 'Host unreachable';
  if (code === 'ENETUNREACH') return 'Network unreachable';
  if (code === 'EADDRNOTAVAIL') return 'Cannot bind the local address (EADDRNOTAVAIL)';
  if (code === 'ERR_INVALID_URL') return 'Invalid URL';
  const tls = tlsReason(f);
  if (tls !== null) return `TLS error: ${tls}`;
  if (code.startsWith('HPE_')) return `Invalid HTTP response (${oneLine(f.message, 120)})`;
  if (f.message === 'max redirects') return tooManyRedirectsReason(5);
  if (f.message.startsWith('Redirect loop detected')) return 'Redirect loop';
  return oneLine(f.message) || code || 'Unknown error';
}

/**
 * An OpenSSL certificate-verification code (`socket.authorizationError`, e.g.
 * `"CERT_SIGNATURE_FAILURE"`) in words; an unknown code is returned as it is.
 */
export function certificateErrorReason(code: string): string {
  return CERT_REASONS[code] ?? code;
}
