/**
 * The verdict of a certificate_health run on what the handshake showed (CONTRACT §5): valid,
 * or the one fault a person should hear about first, in words they understand.
 *
 * Precedence when several faults apply (the first one found is reported):
 * 1. the leaf has expired — `Certificate expired on 2026-10-01 12:00:00 (51 days ago)`;
 * 2. the leaf is not valid yet — `Certificate is not valid before … (in 3 days)`;
 * 3. the leaf does not name the host — `Hostname mismatch: certificate is for …; not …`;
 * 4. the leaf is self-signed and not itself trusted — `Self-signed certificate: …`;
 * 5. the chain does not lead to a trusted root: it ends at an untrusted root (unknown CA),
 *    an issuer is neither sent nor trusted (incomplete chain: missing intermediate), a
 *    certificate in the chain is out of its validity, or OpenSSL refused it for another
 *    reason;
 * 6. the leaf is signed with MD5 (or MD2/MD4) or SHA-1.
 * Dates come first because they are the common way a certificate that worked yesterday
 * fails today, and they are plain facts whatever the client trusts; then the name, since a
 * certificate for another site is wrong wherever it chains to; then trust; the signature
 * hash last, as it matters only for a certificate that is otherwise fine.
 */
import type { X509Certificate } from 'node:crypto';
import { certificateErrorReason } from './describe-error.js';
import { daysAgo, daysAhead, formatUtc } from './format-time.js';
import { hostnameMismatch } from './hostname.js';
import type { TrustStore } from './trust-store.js';
import {
  isIssuedBy,
  isSelfSigned,
  subjectLabelOf,
  WEAK_SIGNATURE_HASHES,
  type ParsedCertificate,
} from './x509.js';

/** What one handshake showed. Times are ms since the epoch. */
export interface HandshakeFacts {
  /** The URL's host, as the user wrote it (IPv6 brackets allowed). */
  host: string;
  /** The server's certificates, leaf first, in issuing order (Node's peer chain). */
  chain: readonly ParsedCertificate[];
  /** OpenSSL's verdict on the chain against the trust store (hostname not included). */
  authorized: boolean;
  /** OpenSSL's verification code when not authorized, e.g. `UNABLE_TO_GET_ISSUER_CERT_LOCALLY`. */
  authorizationError: string | null;
  /** When the handshake completed. */
  now: number;
}

/** Most certificates followed up a chain; real chains have 2 to 4. */
const MAX_CHAIN = 10;

/** Where following issuers from the leaf ended. */
type ChainWalk =
  /** At a trusted anchor; `path` is every certificate from the leaf up to it. */
  | { kind: 'trusted'; path: X509Certificate[] }
  /** The leaf is issued by itself and is not an anchor. */
  | { kind: 'self-signed' }
  /** At a root (self-signed, not the leaf) that is not trusted. */
  | { kind: 'unknown-root'; root: X509Certificate }
  /** At `child`, whose issuer is neither among the sent certificates nor trusted. */
  | { kind: 'missing-issuer'; child: X509Certificate }
  | { kind: 'too-long' };

/**
 * Follow issuers from the leaf: a trusted anchor ends the walk, else a sent certificate
 * that issued the current one continues it.
 */
function walkChain(chain: readonly ParsedCertificate[], trust: TrustStore): ChainWalk {
  const sent = chain.map((c) => c.node);
  const leaf = sent[0];
  if (leaf === undefined) return { kind: 'too-long' };
  const path: X509Certificate[] = [leaf];
  const used = new Set<string>([leaf.fingerprint256]);
  let current = leaf;
  for (let depth = 0; depth < MAX_CHAIN; depth++) {
    if (trust.has(current)) return { kind: 'trusted', path };
    if (isSelfSigned(current)) {
      return depth === 0 ? { kind: 'self-signed' } : { kind: 'unknown-root', root: current };
    }
    const anchor = trust.issuerOf(current);
    if (anchor) return { kind: 'trusted', path: [...path, anchor] };
    const next = sent.find((c) => !used.has(c.fingerprint256) && isIssuedBy(current, c));
    if (!next) return { kind: 'missing-issuer', child: current };
    path.push(next);
    used.add(next.fingerprint256);
    current = next;
  }
  return { kind: 'too-long' };
}

/** The fault of a certificate in the chain above the leaf that is out of its dates. */
function chainDatesFault(path: readonly X509Certificate[], now: number): string | null {
  for (const cert of path.slice(1)) {
    const notAfter = Date.parse(cert.validTo);
    const notBefore = Date.parse(cert.validFrom);
    const name = subjectLabelOf(cert);
    if (now > notAfter) {
      return `Certificate chain contains an expired certificate: "${name}" expired on ${formatUtc(notAfter)} (${daysAgo(notAfter, now)})`;
    }
    if (now < notBefore) {
      return `Certificate chain contains a certificate that is not valid yet: "${name}" is not valid before ${formatUtc(notBefore)} (${daysAhead(notBefore, now)})`;
    }
  }
  return null;
}

/** Step 4 and 5 of the precedence: whether the chain leads to a trusted root. */
function trustFault(facts: HandshakeFacts, trust: TrustStore): string | null {
  // OpenSSL found a trusted path (perhaps one this walk would not, e.g. a cross-signed
  // root): trust it.
  if (facts.authorized) return null;
  const leaf = facts.chain[0] as ParsedCertificate;
  const walk = walkChain(facts.chain, trust);
  switch (walk.kind) {
    case 'self-signed':
      return `Self-signed certificate: "${leaf.subjectLabel}" is signed by itself, not by a trusted certificate authority`;
    case 'unknown-root':
      return `Untrusted certificate authority: the chain ends at "${subjectLabelOf(walk.root)}", which is not a trusted root`;
    case 'missing-issuer': {
      const child = facts.chain.find((c) => c.node === walk.child);
      const issuer = child?.issuerLabel ?? walk.child.issuer.replace(/\n/g, ', ');
      const of = child?.subjectLabel ?? subjectLabelOf(walk.child);
      return `Incomplete certificate chain: the server did not send the certificate of "${issuer}" (issuer of "${of}"), and it is not a trusted root`;
    }
    case 'too-long':
      return `Untrusted certificate chain: more than ${MAX_CHAIN} certificates`;
    case 'trusted':
      return (
        chainDatesFault(walk.path, facts.now) ??
        `Untrusted certificate chain: ${certificateErrorReason(facts.authorizationError ?? 'CERT_UNTRUSTED')}`
      );
  }
}

/**
 * The verdict on one handshake: null when the certificate is valid, else the error text
 * of the first fault in the precedence above. `facts.chain` must hold at least the leaf.
 */
export function judgeCertificate(facts: HandshakeFacts, trust: TrustStore): string | null {
  const leaf = facts.chain[0];
  if (leaf === undefined) return 'The server sent no certificate';
  const now = facts.now;
  if (now > leaf.notAfter) {
    return `Certificate expired on ${formatUtc(leaf.notAfter)} (${daysAgo(leaf.notAfter, now)})`;
  }
  if (now < leaf.notBefore) {
    return `Certificate is not valid before ${formatUtc(leaf.notBefore)} (${daysAhead(leaf.notBefore, now)})`;
  }
  const mismatch = hostnameMismatch(facts.host, leaf);
  if (mismatch !== null) return mismatch;
  const untrusted = trustFault(facts, trust);
  if (untrusted !== null) return untrusted;
  // A leaf that is itself a trust anchor is trusted as it is; its signature is never used.
  if (
    leaf.signatureHash !== null &&
    WEAK_SIGNATURE_HASHES.has(leaf.signatureHash) &&
    !trust.has(leaf.node)
  ) {
    return `Weak signature: the certificate is signed with ${leaf.signatureHash} (${leaf.signatureAlgorithm}), which browsers no longer accept`;
  }
  return null;
}
