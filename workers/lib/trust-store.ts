/**
 * The trust store of the certificate_health check (CONTRACT §5): Node's bundled root
 * certificates (`tls.rootCertificates`) plus the PEM file named by `NODE_EXTRA_CA_CERTS`.
 *
 * The file is read once, when this module loads in a worker thread. Node itself reads
 * `NODE_EXTRA_CA_CERTS` only at process start; reading it here as well means a test may set
 * `process.env.NODE_EXTRA_CA_CERTS` before it creates a CheckPool (worker threads get a copy
 * of the environment as it is when they start) and the pool's threads trust that file. A
 * change of the variable or the file after the pool started is not seen.
 */
import { readFileSync } from 'node:fs';
import { X509Certificate } from 'node:crypto';
import { createSecureContext, rootCertificates, type SecureContext } from 'node:tls';
import { isIssuedBy } from './x509.js';

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

/** What `NODE_EXTRA_CA_CERTS` held when this module loaded. */
interface ExtraCertificates {
  /** The variable's value, or null when unset or empty. */
  path: string | null;
  /** PEM blocks read from the file; empty when unset or unreadable. */
  pems: string[];
  /** Why the file could not be used, or null. */
  problem: string | null;
}

function readExtra(path: string | undefined): ExtraCertificates {
  if (!path) return { path: null, pems: [], problem: null };
  try {
    const pems = readFileSync(path, 'utf8').match(PEM_CERTIFICATE) ?? [];
    return {
      path,
      pems,
      problem: pems.length === 0 ? 'the file holds no PEM certificate' : null,
    };
  } catch (err) {
    return { path, pems: [], problem: (err as Error).message };
  }
}

const EXTRA = readExtra(process.env.NODE_EXTRA_CA_CERTS);
if (EXTRA.problem !== null) {
  // Node warns the same way when it cannot load the file at process start.
  process.emitWarning(
    `certificate_health: ignoring NODE_EXTRA_CA_CERTS ${EXTRA.path ?? ''}: ${EXTRA.problem}`,
  );
}

/** The anchors a chain may end at, indexed for issuer lookups. */
export class TrustStore {
  /** Every trusted certificate: Node's roots, then the extra ones. */
  readonly anchors: readonly X509Certificate[];
  /**
   * The client context every certificate_health handshake uses: these anchors, and OpenSSL
   * security level 0 with TLS 1.0 allowed, so that the handshake completes with any server
   * and the check, not OpenSSL, judges what it sees (a SHA-1 certificate would otherwise
   * abort the handshake before the certificate can be reported). Session resumption is
   * never used: Node resumes only when given a session, and none is ever given.
   */
  readonly secureContext: SecureContext;
  private readonly fingerprints: ReadonlySet<string>;
  /** Anchors by subject name (Node's multi-line form, equal to a child's `issuer`). */
  private readonly bySubject: ReadonlyMap<string, readonly X509Certificate[]>;

  constructor(pems: readonly string[]) {
    const anchors: X509Certificate[] = [];
    for (const pem of pems) {
      try {
        anchors.push(new X509Certificate(pem));
      } catch {
        // A root OpenSSL cannot parse cannot anchor anything either.
      }
    }
    this.anchors = anchors;
    this.fingerprints = new Set(anchors.map((c) => c.fingerprint256));
    const bySubject = new Map<string, X509Certificate[]>();
    for (const c of anchors) bySubject.set(c.subject, [...(bySubject.get(c.subject) ?? []), c]);
    this.bySubject = bySubject;
    this.secureContext = createSecureContext({
      ca: [...pems],
      ciphers: 'DEFAULT@SECLEVEL=0',
      minVersion: 'TLSv1',
    });
  }

  /** Whether `cert` itself is a trusted anchor. */
  has(cert: X509Certificate): boolean {
    return this.fingerprints.has(cert.fingerprint256);
  }

  /** A trusted anchor that issued `cert`, or null. */
  issuerOf(cert: X509Certificate): X509Certificate | null {
    for (const candidate of this.bySubject.get(cert.issuer) ?? []) {
      if (isIssuedBy(cert, candidate)) return candidate;
    }
    return null;
  }
}

let store: TrustStore | null = null;

/** The worker's trust store, built on first use and kept for the thread's life. */
export function trustStore(): TrustStore {
  store ??= new TrustStore([...rootCertificates, ...EXTRA.pems]);
  return store;
}
