/**
 * Reading the facts a `certificate_health` run needs out of a DER certificate, with two
 * well-kept parsers: Node's `crypto.X509Certificate` (names, fingerprint, issuer checks and
 * signature verification, all by OpenSSL) and `@peculiar/x509` (validity dates, subject
 * alternative names, and the signature algorithm, which Node 20 does not expose).
 */
// @peculiar/x509 wires its providers with tsyringe, which needs the Reflect metadata API.
import 'reflect-metadata';
import { X509Certificate as NodeX509Certificate } from 'node:crypto';
import * as x509 from '@peculiar/x509';

/**
 * OpenSSL's names for the signature algorithms a server certificate may carry (what
 * `openssl x509 -text` prints as "Signature Algorithm"), keyed by OID, with the hash each
 * one signs with. An OID missing here is reported as the OID itself.
 */
const SIGNATURE_ALGORITHMS: Readonly<Record<string, { name: string; hash: string | null }>> = {
  '1.2.840.113549.1.1.2': { name: 'md2WithRSAEncryption', hash: 'MD2' },
  '1.2.840.113549.1.1.3': { name: 'md4WithRSAEncryption', hash: 'MD4' },
  '1.2.840.113549.1.1.4': { name: 'md5WithRSAEncryption', hash: 'MD5' },
  '1.2.840.113549.1.1.5': { name: 'sha1WithRSAEncryption', hash: 'SHA-1' },
  '1.3.14.3.2.29': { name: 'sha1WithRSA', hash: 'SHA-1' },
  '1.2.840.113549.1.1.14': { name: 'sha224WithRSAEncryption', hash: 'SHA-224' },
  '1.2.840.113549.1.1.11': { name: 'sha256WithRSAEncryption', hash: 'SHA-256' },
  '1.2.840.113549.1.1.12': { name: 'sha384WithRSAEncryption', hash: 'SHA-384' },
  '1.2.840.113549.1.1.13': { name: 'sha512WithRSAEncryption', hash: 'SHA-512' },
  '1.2.840.113549.1.1.15': { name: 'sha512-224WithRSAEncryption', hash: 'SHA-512/224' },
  '1.2.840.113549.1.1.16': { name: 'sha512-256WithRSAEncryption', hash: 'SHA-512/256' },
  // RSASSA-PSS names its hash in the parameters; read from them (see signatureHash).
  '1.2.840.113549.1.1.10': { name: 'rsassaPss', hash: null },
  '1.2.840.10045.4.1': { name: 'ecdsa-with-SHA1', hash: 'SHA-1' },
  '1.2.840.10045.4.3.1': { name: 'ecdsa-with-SHA224', hash: 'SHA-224' },
  '1.2.840.10045.4.3.2': { name: 'ecdsa-with-SHA256', hash: 'SHA-256' },
  '1.2.840.10045.4.3.3': { name: 'ecdsa-with-SHA384', hash: 'SHA-384' },
  '1.2.840.10045.4.3.4': { name: 'ecdsa-with-SHA512', hash: 'SHA-512' },
  '1.2.840.10040.4.3': { name: 'dsaWithSHA1', hash: 'SHA-1' },
  '2.16.840.1.101.3.4.3.1': { name: 'dsa_with_SHA224', hash: 'SHA-224' },
  '2.16.840.1.101.3.4.3.2': { name: 'dsa_with_SHA256', hash: 'SHA-256' },
  '1.3.101.112': { name: 'ED25519', hash: null },
  '1.3.101.113': { name: 'ED448', hash: null },
  '2.16.840.1.101.3.4.3.17': { name: 'ML-DSA-44', hash: null },
  '2.16.840.1.101.3.4.3.18': { name: 'ML-DSA-65', hash: null },
  '2.16.840.1.101.3.4.3.19': { name: 'ML-DSA-87', hash: null },
};

/** Hashes too weak for a certificate signature (CONTRACT §5 "a leaf signed with SHA-1/MD5"). */
export const WEAK_SIGNATURE_HASHES: ReadonlySet<string> = new Set(['MD2', 'MD4', 'MD5', 'SHA-1']);

/** OpenSSL's name of a signature algorithm OID, or the OID itself when it is not known. */
export function signatureAlgorithmName(oid: string): string {
  return SIGNATURE_ALGORITHMS[oid]?.name ?? oid;
}

/** @peculiar/x509's certificate, plus the signature algorithm's OID from its ASN.1 form. */
class PeculiarCertificate extends x509.X509Certificate {
  /** The OID in the certificate's outer `signatureAlgorithm` field. */
  get signatureOid(): string {
    return this.asn.signatureAlgorithm.algorithm;
  }
}

/** One certificate as a certificate_health run reads it. Times are ms since the epoch. */
export interface ParsedCertificate {
  /** Node's (OpenSSL's) view, for fingerprint, checkIssued, verify and checkServerIdentity. */
  readonly node: NodeX509Certificate;
  /** SHA-256 fingerprint as Node writes it, `AA:BB:…`. */
  readonly fingerprint256: string;
  /** The subject's common name, else its organization, else the whole subject. */
  readonly subjectLabel: string;
  /** The issuer's common name, else its organization, else the whole issuer name. */
  readonly issuerLabel: string;
  /** The issuer's organization, else its common name (CONTRACT §5 `issuer`). */
  readonly issuerOrganization: string;
  readonly notBefore: number;
  readonly notAfter: number;
  /** OpenSSL name, e.g. `sha256WithRSAEncryption`, `ecdsa-with-SHA256`. */
  readonly signatureAlgorithm: string;
  /** The hash the signature uses (`SHA-256`, `SHA-1`, `MD5`…), or null when none applies. */
  readonly signatureHash: string | null;
  /** DNS names and IP addresses of the subject alternative names, in certificate order. */
  readonly altNames: readonly string[];
  /** Whether the subject alternative names hold at least one DNS name or IP address. */
  readonly hasAltNames: boolean;
  /** The subject's common names (usually one). */
  readonly commonNames: readonly string[];
}

type NameObject = Record<string, string | string[] | undefined>;

function first(obj: NameObject | undefined, field: string): string | undefined {
  const v = obj?.[field];
  const s = Array.isArray(v) ? v[0] : v;
  return s === undefined || s === '' ? undefined : s;
}

function all(obj: NameObject | undefined, field: string): string[] {
  const v = obj?.[field];
  if (v === undefined) return [];
  return Array.isArray(v) ? v : [v];
}

/** The hash inside an algorithm identifier as @peculiar/x509 reads it, e.g. RSASSA-PSS params. */
function peculiarHash(cert: PeculiarCertificate): string | null {
  try {
    const alg = cert.signatureAlgorithm as { hash?: { name?: unknown } };
    return typeof alg.hash?.name === 'string' ? alg.hash.name.toUpperCase() : null;
  } catch {
    // An algorithm @peculiar/x509 has no provider for (e.g. MD5): the table above decides.
    return null;
  }
}

/** DNS names and IPs of the SAN extension; falls back to Node's text form when needed. */
function subjectAltNames(cert: PeculiarCertificate, node: NodeX509Certificate): string[] {
  try {
    const ext = cert.getExtension(x509.SubjectAlternativeNameExtension);
    if (!ext) return [];
    return ext.names.items.filter((n) => n.type === 'dns' || n.type === 'ip').map((n) => n.value);
  } catch {
    // A general name @peculiar/x509 cannot represent (X.400, EDI): read Node's text form,
    // `DNS:a, IP Address:1.2.3.4` (entries with special characters are JSON-quoted).
    const names: string[] = [];
    for (const part of (node.subjectAltName ?? '').split(', ')) {
      const m = /^(DNS|IP Address):(.*)$/.exec(part);
      if (!m?.[2]) continue;
      const raw = m[2];
      names.push(raw.startsWith('"') ? String(JSON.parse(raw)) : raw);
    }
    return names;
  }
}

/**
 * Parse one DER certificate. Throws when the bytes are not a certificate either parser
 * understands.
 */
export function parseCertificate(der: Uint8Array): ParsedCertificate {
  const key = Buffer.from(der.buffer, der.byteOffset, der.byteLength).toString('base64');
  const hit = parsed.get(key);
  if (hit !== undefined) {
    parsed.delete(key); // most recently used last
    parsed.set(key, hit);
    return hit;
  }
  const fresh = parseUncached(der);
  parsed.set(key, fresh);
  if (parsed.size > PARSED_MAX) parsed.delete(parsed.keys().next().value as string);
  return fresh;
}

/**
 * Certificates parsed on this thread, by DER (base64), least recently used first. A parse
 * took ~8 ms of CPU (mostly @peculiar/x509's ASN.1 schema walk) and was the certificate check's
 * main cost — 256 of the 500 checks/s the tls bench asks for; a site's certificate is the same
 * run after run, and what is parsed out of it does not depend on the time of the run.
 */
const parsed = new Map<string, ParsedCertificate>();
/** Most certificates kept per thread (each a few KB). */
const PARSED_MAX = 4096;

function parseUncached(der: Uint8Array): ParsedCertificate {
  const node = new NodeX509Certificate(der);
  const peculiar = new PeculiarCertificate(der);
  const legacy = node.toLegacyObject();
  const subject = legacy.subject as unknown as NameObject | undefined;
  const issuer = legacy.issuer as unknown as NameObject | undefined;
  const oid = peculiar.signatureOid;
  const known = SIGNATURE_ALGORITHMS[oid];
  const altNames = subjectAltNames(peculiar, node);
  return {
    node,
    fingerprint256: node.fingerprint256,
    subjectLabel: first(subject, 'CN') ?? first(subject, 'O') ?? node.subject.replace(/\n/g, ', '),
    issuerLabel: first(issuer, 'CN') ?? first(issuer, 'O') ?? node.issuer.replace(/\n/g, ', '),
    issuerOrganization:
      first(issuer, 'O') ?? first(issuer, 'CN') ?? node.issuer.replace(/\n/g, ', '),
    notBefore: peculiar.notBefore.getTime(),
    notAfter: peculiar.notAfter.getTime(),
    signatureAlgorithm: known?.name ?? oid,
    signatureHash: known?.hash ?? peculiarHash(peculiar),
    altNames,
    hasAltNames: altNames.length > 0,
    commonNames: all(subject, 'CN'),
  };
}

/**
 * Whether `parent` issued `child`: the names and key identifiers match (OpenSSL's
 * X509_check_issued) and `child`'s signature verifies with `parent`'s key.
 */
export function isIssuedBy(child: NodeX509Certificate, parent: NodeX509Certificate): boolean {
  try {
    return child.checkIssued(parent) && child.verify(parent.publicKey);
  } catch {
    // A key type OpenSSL cannot verify with: not an issuer we can prove.
    return false;
  }
}

/**
 * Whether `cert` is issued by itself (subject = issuer) and signed with its own key. Looser
 * than OpenSSL's "self-signed", which also wants the key usage to allow certificate signing:
 * a person calls a leaf that signed itself self-signed whatever its key usage says.
 */
export function isSelfSigned(cert: NodeX509Certificate): boolean {
  try {
    return cert.subject === cert.issuer && cert.verify(cert.publicKey);
  } catch {
    return false;
  }
}

/** The common name of a Node certificate's subject, else its organization, else the subject. */
export function subjectLabelOf(cert: NodeX509Certificate): string {
  const subject = cert.toLegacyObject().subject as unknown as NameObject | undefined;
  return first(subject, 'CN') ?? first(subject, 'O') ?? cert.subject.replace(/\n/g, ', ');
}
