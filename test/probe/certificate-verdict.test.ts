/**
 * The certificate_health verdict below the thread boundary: host name matching (RFC 6125
 * wildcards, IP SANs, CN fallback), the precedence of faults at a fixed clock, the error
 * wording, OpenSSL names of signature algorithms, and the UTC formatter. Certificates are
 * made at run time by test/tls-ca.ts (and the openssl CLI for one MD5 certificate).
 * Real handshakes through a CheckPool are in certificate.test.ts.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, test } from 'node:test';
import { judgeCertificate, type HandshakeFacts } from '../../workers/lib/certificate-verdict.js';
import { daysAgo, daysAhead, formatUtc } from '../../workers/lib/format-time.js';
import { hostnameMismatch, normalizeHost } from '../../workers/lib/hostname.js';
import { TrustStore } from '../../workers/lib/trust-store.js';
import {
  parseCertificate,
  signatureAlgorithmName,
  type ParsedCertificate,
} from '../../workers/lib/x509.js';
import { days, fromNow, INTERMEDIATE, TestPki, UNTRUSTED_ROOT } from '../tls-ca.js';

const parse = (pem: string): ParsedCertificate => parseCertificate(new X509Certificate(pem).raw);
const parseChain = (chainPem: string): ParsedCertificate[] =>
  (chainPem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? []).map(
    parse,
  );

let pki: TestPki;
let trust: TrustStore;

before(async () => {
  pki = await TestPki.create();
  trust = new TrustStore([pki.rootPem]);
});

describe('host name matching', () => {
  const names = async (list: string[], commonName?: string): Promise<ParsedCertificate> =>
    parse(
      (await pki.leaf({ names: list, ...(commonName !== undefined ? { commonName } : {}) }))
        .certPem,
    );

  test('a wildcard covers one label, the bare domain only by its own SAN', async () => {
    const cert = await names(['*.example.org', 'example.org']);
    assert.equal(hostnameMismatch('shop.example.org', cert), null);
    assert.equal(hostnameMismatch('example.org', cert), null);
    assert.equal(hostnameMismatch('SHOP.Example.org', cert), null, 'case does not matter');
    assert.equal(hostnameMismatch('shop.example.org.', cert), null, 'a trailing dot is ignored');
    assert.equal(
      hostnameMismatch('a.b.example.org', cert),
      'Hostname mismatch: certificate is for *.example.org, example.org; not a.b.example.org',
    );
    assert.equal(
      hostnameMismatch('shop.example.com', cert),
      'Hostname mismatch: certificate is for *.example.org, example.org; not shop.example.com',
    );
  });

  test('no wildcard for a whole top-level domain, none but in the leftmost label', async () => {
    const tld = await names(['*.org']);
    assert.match(hostnameMismatch('example.org', tld) ?? '', /^Hostname mismatch/);
    const inner = await names(['www.*.example.org']);
    assert.match(hostnameMismatch('www.shop.example.org', inner) ?? '', /^Hostname mismatch/);
    const double = await names(['*.*.example.org']);
    assert.match(hostnameMismatch('a.b.example.org', double) ?? '', /^Hostname mismatch/);
  });

  test('a partial wildcard in the leftmost label (RFC 6125 §6.4.3)', async () => {
    const cert = await names(['api*.example.org']);
    assert.equal(hostnameMismatch('api1.example.org', cert), null);
    assert.match(hostnameMismatch('web1.example.org', cert) ?? '', /^Hostname mismatch/);
  });

  test('an internationalized host is matched in its A-label (punycode) form', async () => {
    const cert = await names(['*.example.org', 'xn--mnchen-3ya.example.com']);
    // The URL parser turns münchen into its A-label; a wildcard covers it like any label.
    assert.equal(hostnameMismatch(new URL('https://münchen.example.org/').hostname, cert), null);
    assert.equal(hostnameMismatch(new URL('https://münchen.example.com/').hostname, cert), null);
  });

  test('IP addresses match IP SANs only, IPv6 in any spelling', async () => {
    const cert = await names(['localhost', '127.0.0.1', '::1']);
    assert.equal(hostnameMismatch('127.0.0.1', cert), null);
    assert.equal(hostnameMismatch('[::1]', cert), null);
    assert.equal(hostnameMismatch('0:0:0:0:0:0:0:1', cert), null);
    assert.equal(
      hostnameMismatch('127.0.0.2', cert),
      'Hostname mismatch: certificate is for localhost, 127.0.0.1, ::1; not 127.0.0.2',
    );
    const dnsOnly = await names(['localhost']);
    assert.equal(
      hostnameMismatch('127.0.0.1', dnsOnly),
      'Hostname mismatch: certificate is for localhost; not 127.0.0.1',
    );
  });

  test('the subject CN counts only when there are no SAN names', async () => {
    const legacy = await names([], 'legacy.example.org');
    assert.equal(hostnameMismatch('legacy.example.org', legacy), null);
    assert.equal(
      hostnameMismatch('other.example.org', legacy),
      'Hostname mismatch: certificate is for legacy.example.org; not other.example.org',
    );
    const withSan = await names(['www.example.org'], 'legacy.example.org');
    assert.match(hostnameMismatch('legacy.example.org', withSan) ?? '', /^Hostname mismatch/);
  });

  test('a long name list is cut after ten names', async () => {
    const many = Array.from({ length: 13 }, (_, i) => `n${i}.example.org`);
    const cert = await names(many);
    assert.equal(
      hostnameMismatch('other.example.com', cert),
      `Hostname mismatch: certificate is for ${many.slice(0, 10).join(', ')} and 3 more; not other.example.com`,
    );
  });

  test('normalizeHost drops IPv6 brackets and a trailing dot', () => {
    assert.equal(normalizeHost('[::1]'), '::1');
    assert.equal(normalizeHost('example.org.'), 'example.org');
    assert.equal(normalizeHost('example.org'), 'example.org');
  });
});

describe('verdict precedence at a fixed clock', () => {
  const facts = (
    chain: ParsedCertificate[],
    over: Partial<HandshakeFacts> = {},
  ): HandshakeFacts => ({
    host: 'localhost',
    chain,
    authorized: false,
    authorizationError: null,
    now: Date.now(),
    ...over,
  });

  test('the issue example: expired 51 days ago, at noon', async () => {
    const notAfter = new Date(Date.UTC(2026, 9, 1, 12, 0, 0));
    const leaf = await pki.leaf({ notBefore: new Date(Date.UTC(2026, 0, 1)), notAfter });
    const now = notAfter.getTime() + days(51) + 3_600_000;
    assert.equal(
      judgeCertificate(facts(parseChain(leaf.chainPem), { now }), trust),
      'Certificate expired on 2026-10-01 12:00:00 (51 days ago)',
    );
    assert.equal(
      judgeCertificate(facts(parseChain(leaf.chainPem), { now: notAfter.getTime() + 1 }), trust),
      'Certificate expired on 2026-10-01 12:00:00 (less than a day ago)',
    );
    assert.equal(
      judgeCertificate(
        facts(parseChain(leaf.chainPem), { now: notAfter.getTime(), authorized: true }),
        trust,
      ),
      null,
      'valid up to and including notAfter',
    );
  });

  test('expired beats a wrong host and self-signing', async () => {
    const leaf = await pki.leaf({
      issuer: 'self',
      names: ['example.org'],
      notBefore: fromNow(-days(30)),
      notAfter: fromNow(-days(2) - 60_000),
    });
    assert.match(
      judgeCertificate(facts(parseChain(leaf.chainPem)), trust) ?? '',
      /^Certificate expired on \d{4}-\d\d-\d\d \d\d:\d\d:\d\d \(2 days ago\)$/,
    );
  });

  test('not yet valid beats a wrong host', async () => {
    const leaf = await pki.leaf({ names: ['example.org'], notBefore: fromNow(days(1) + 60_000) });
    assert.match(
      judgeCertificate(facts(parseChain(leaf.chainPem)), trust) ?? '',
      /^Certificate is not valid before \d{4}-\d\d-\d\d \d\d:\d\d:\d\d \(in 1 day\)$/,
    );
  });

  test('a wrong host beats self-signing and an untrusted CA', async () => {
    const self = await pki.leaf({ issuer: 'self', names: ['example.org'] });
    assert.equal(
      judgeCertificate(facts(parseChain(self.chainPem)), trust),
      'Hostname mismatch: certificate is for example.org; not localhost',
    );
    const untrusted = await pki.leaf({ issuer: 'untrusted', names: ['example.org'] });
    assert.equal(
      judgeCertificate(facts(parseChain(untrusted.chainPem)), trust),
      'Hostname mismatch: certificate is for example.org; not localhost',
    );
  });

  test('untrusted chains, each said in its own words', async () => {
    const self = await pki.leaf({ issuer: 'self' });
    assert.equal(
      judgeCertificate(facts(parseChain(self.chainPem)), trust),
      'Self-signed certificate: "localhost" is signed by itself, not by a trusted certificate authority',
    );
    const untrusted = await pki.leaf({ issuer: 'untrusted' });
    assert.equal(
      judgeCertificate(facts(parseChain(`${untrusted.certPem}\n${pki.untrustedRootPem}`)), trust),
      `Untrusted certificate authority: the chain ends at "${UNTRUSTED_ROOT.cn}", which is not a trusted root`,
    );
    const valid = await pki.leaf();
    assert.equal(
      judgeCertificate(facts(parseChain(valid.certPem)), trust),
      `Incomplete certificate chain: the server did not send the certificate of "${INTERMEDIATE.cn}" (issuer of "localhost"), and it is not a trusted root`,
    );
  });

  test('OpenSSL trusting the chain settles trust; its other refusals are passed on', async () => {
    const valid = await pki.leaf();
    // Here the walk finds no path (the intermediate is missing) but OpenSSL did.
    assert.equal(
      judgeCertificate(facts(parseChain(valid.certPem), { authorized: true }), trust),
      null,
    );
    assert.equal(
      judgeCertificate(
        facts(parseChain(valid.chainPem), { authorizationError: 'CERT_SIGNATURE_FAILURE' }),
        trust,
      ),
      'Untrusted certificate chain: certificate signature failure',
    );
  });

  test('a trusted SHA-1 leaf is still reported, as the last resort', async () => {
    const sha1 = await pki.leaf({ issuer: 'root', hash: 'SHA-1' });
    assert.equal(
      judgeCertificate(facts(parseChain(sha1.chainPem), { authorized: true }), trust),
      'Weak signature: the certificate is signed with SHA-1 (sha1WithRSAEncryption), which browsers no longer accept',
    );
    // A trust anchor's own signature is never checked by anyone: not a fault.
    const pinned = new TrustStore([pki.rootPem, sha1.certPem]);
    assert.equal(
      judgeCertificate(facts(parseChain(sha1.chainPem), { authorized: true }), pinned),
      null,
    );
  });
});

describe('an MD5-signed certificate (made with the openssl CLI)', () => {
  const openssl = '/usr/bin/openssl';
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'vigil-md5-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  test('is named md5WithRSAEncryption and judged weak', { timeout: 30_000 }, async (t) => {
    if (!existsSync(openssl)) {
      t.skip('no openssl CLI');
      return;
    }
    const cert = join(dir, 'md5.pem');
    await promisify(execFile)(openssl, [
      'req',
      '-x509',
      '-newkey',
      'rsa:1024',
      '-nodes',
      '-md5',
      '-days',
      '2',
      '-keyout',
      join(dir, 'md5.key'),
      '-out',
      cert,
      '-subj',
      '/CN=localhost',
      '-addext',
      'subjectAltName=DNS:localhost',
    ]);
    const parsed = parse(await readFile(cert, 'utf8'));
    assert.equal(parsed.signatureAlgorithm, 'md5WithRSAEncryption');
    assert.equal(parsed.signatureHash, 'MD5');
    assert.equal(
      judgeCertificate(
        {
          host: 'localhost',
          chain: [parsed],
          authorized: true,
          authorizationError: null,
          now: Date.now(),
        },
        trust,
      ),
      'Weak signature: the certificate is signed with MD5 (md5WithRSAEncryption), which browsers no longer accept',
    );
  });
});

describe('signature algorithm names and dates', () => {
  test('OpenSSL names by OID, and the OID when unknown', () => {
    assert.equal(signatureAlgorithmName('1.2.840.113549.1.1.11'), 'sha256WithRSAEncryption');
    assert.equal(signatureAlgorithmName('1.2.840.113549.1.1.5'), 'sha1WithRSAEncryption');
    assert.equal(signatureAlgorithmName('1.2.840.113549.1.1.4'), 'md5WithRSAEncryption');
    assert.equal(signatureAlgorithmName('1.2.840.10045.4.3.2'), 'ecdsa-with-SHA256');
    assert.equal(signatureAlgorithmName('1.2.840.10045.4.1'), 'ecdsa-with-SHA1');
    assert.equal(signatureAlgorithmName('1.3.101.112'), 'ED25519');
    assert.equal(signatureAlgorithmName('1.2.3.4'), '1.2.3.4');
  });

  test('leaves name their issuer by organization, else common name', async () => {
    assert.equal(parse((await pki.leaf()).certPem).issuerOrganization, INTERMEDIATE.o);
    assert.equal(
      parse((await pki.leaf({ issuer: 'self' })).certPem).issuerOrganization,
      'localhost',
    );
  });

  test('UTC timestamps and day counts', () => {
    assert.equal(formatUtc(Date.UTC(2026, 9, 1, 12, 0, 0)), '2026-10-01 12:00:00');
    assert.equal(formatUtc(Date.UTC(999, 0, 2, 3, 4, 5)), '0999-01-02 03:04:05');
    assert.equal(formatUtc(Number.NaN), 'an unknown date');
    const t = Date.UTC(2026, 0, 1);
    assert.equal(daysAgo(t, t + days(51) + 1000), '51 days ago');
    assert.equal(daysAgo(t, t + days(1)), '1 day ago');
    assert.equal(daysAgo(t, t + 1000), 'less than a day ago');
    assert.equal(daysAhead(t + days(3) + 5000, t), 'in 3 days');
    assert.equal(daysAhead(t + days(1), t), 'in 1 day');
    assert.equal(daysAhead(t + 5000, t), 'in less than a day');
  });
});

describe('parsing', () => {
  test('a certificate seen again is parsed once; another one is parsed anew', async () => {
    const a = await pki.leaf({ names: ['a.example.test'] });
    const b = await pki.leaf({ names: ['b.example.test'] });
    const derOf = (pem: string): Uint8Array => new X509Certificate(pem).raw;
    const first = parseCertificate(derOf(a.certPem));
    assert.equal(parseCertificate(derOf(a.certPem)), first, 'the same object for the same DER');
    const other = parseCertificate(derOf(b.certPem));
    assert.notEqual(other, first);
    assert.equal(other.fingerprint256, new X509Certificate(b.certPem).fingerprint256);
  });
});
