/**
 * Does a certificate name the host a user monitors? RFC 6125 as Node implements it in
 * `tls.checkServerIdentity`: DNS names of the subject alternative names, a wildcard only as
 * the whole (or part of the) leftmost label and never for a public suffix-like `*.tld`, IP
 * addresses only against IP SANs, the subject CN only when the certificate has no DNS SAN.
 */
import { isIP } from 'node:net';
import { checkServerIdentity, type PeerCertificate } from 'node:tls';
import type { ParsedCertificate } from './x509.js';

/** Most names listed in a mismatch message before "and N more". */
const NAMES_LISTED = 10;

/**
 * `host` as a name to check and to send as SNI: without IPv6 brackets (URL keeps them) and
 * without a trailing dot.
 */
export function normalizeHost(hostname: string): string {
  const bare =
    hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
  return bare.endsWith('.') && !isIP(bare) ? bare.slice(0, -1) : bare;
}

/** The names a certificate is for, as a person reads them: SANs, else its common names. */
export function certificateNames(cert: ParsedCertificate): string {
  const names = cert.hasAltNames ? cert.altNames : cert.commonNames;
  if (names.length === 0) return '(no names)';
  const listed = names.slice(0, NAMES_LISTED).join(', ');
  const more = names.length - NAMES_LISTED;
  return more > 0 ? `${listed} and ${more} more` : listed;
}

/**
 * Null when `cert` is valid for `host`; otherwise the error text,
 * `Hostname mismatch: certificate is for *.example.org, example.org; not shop.example.com`.
 * @param host the URL's host (brackets and a trailing dot are ignored)
 */
export function hostnameMismatch(host: string, cert: ParsedCertificate): string | null {
  const name = normalizeHost(host);
  const legacy = cert.node.toLegacyObject();
  // checkServerIdentity reads only `subject` and `subjectaltname` of the legacy object.
  const peer = {
    subject: legacy.subject,
    subjectaltname: legacy.subjectaltname,
  } as PeerCertificate;
  const err = checkServerIdentity(name, peer);
  if (err === undefined) return null;
  return `Hostname mismatch: certificate is for ${certificateNames(cert)}; not ${name}`;
}
