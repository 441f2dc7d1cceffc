/**
 * What a `certificate_health` run learns about a site's leaf certificate, and how the probe's
 * result detail carries it (CONTRACT §5). Times are ms since the Unix epoch.
 */

/** The leaf certificate as the probe saw it. */
export interface CertificateInfo {
  /** Issuer organization name, else its common name (CONTRACT §5 `issuer`). */
  issuer: string;
  /** OpenSSL name, e.g. `sha256WithRSAEncryption`, `ecdsa-with-SHA256`. */
  signatureAlgorithm: string;
  validFrom: number;
  validTo: number;
  /** SHA-256 fingerprint, `AA:BB:…`; identifies the certificate for "Expires soon". */
  fingerprint256: string;
}

/**
 * The `detail` of a certificate run result:
 * - `{ certificate }` when a handshake completed (valid or not; `ok` says which);
 * - `{ unreachable: true }` when no handshake completed (refused, DNS, timeout) — such a run
 *   leaves the certificate status as it was.
 */
export type CertificateDetail = { certificate: CertificateInfo } | { unreachable: true };

const DAY_MS = 86_400_000;

/** Whole days left until `validTo` at `at`, rounded down (CONTRACT §5 `expires_in_days`). */
export function expiresInDays(validTo: number, at: number): number {
  return Math.floor((validTo - at) / DAY_MS);
}

/** The certificate in a run's detail, or null when the detail carries none. */
export function certificateFromDetail(
  detail: Record<string, unknown> | null,
): CertificateInfo | null {
  const c = detail?.certificate as Partial<CertificateInfo> | undefined;
  if (
    !c ||
    typeof c.issuer !== 'string' ||
    typeof c.signatureAlgorithm !== 'string' ||
    typeof c.validFrom !== 'number' ||
    typeof c.validTo !== 'number' ||
    typeof c.fingerprint256 !== 'string'
  ) {
    return null;
  }
  return c as CertificateInfo;
}

/** True when the run could not complete a handshake at all. */
export function isUnreachable(detail: Record<string, unknown> | null): boolean {
  return detail?.unreachable === true;
}
