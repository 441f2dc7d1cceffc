/**
 * The certificate_health check (CONTRACT §5, issue 3) through a real CheckPool (worker
 * threads) against real TLS servers on 127.0.0.1 port 0, with certificates made at run time
 * by test/tls-ca.ts. The test CA reaches the workers the way it reaches a deployed probe:
 * `NODE_EXTRA_CA_CERTS`, set before the pool starts its threads.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import * as net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as tls from 'node:tls';
import { after, before, describe, test } from 'node:test';
import {
  certificateFromDetail,
  isUnreachable,
  type CertificateInfo,
} from '../../src/domain/certificate.js';
import { CheckPool } from '../../src/probe/pool.js';
import { canBind, deadPort } from '../helpers.js';
import type { CheckTaskResult } from '../../src/probe/task.js';
import type { CertificateDetail } from '../../workers/certificate.js';
import {
  days,
  fromNow,
  INTERMEDIATE,
  ROOT,
  TestPki,
  UNTRUSTED_ROOT,
  type TestCertificate,
} from '../tls-ca.js';

interface TlsSite {
  port: number;
  /** SNI of every completed handshake (false: none sent). */
  servernames: (string | false | null)[];
  /** Whether each completed handshake resumed an earlier session. */
  resumed: boolean[];
  /** Remote addresses of accepted connections. */
  remotes: string[];
}

interface CertificateMeta {
  issuer: string;
  signatureAlgorithm: string;
  validFrom: number;
  validTo: number;
  fingerprint256: string;
}

const servers: net.Server[] = [];

async function listen(server: net.Server): Promise<number> {
  servers.push(server);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  return (server.address() as net.AddressInfo).port;
}

/** A TLS server presenting `cert.chainPem` (or `chainPem`), closing each connection at once. */
async function serve(cert: TestCertificate, chainPem = cert.chainPem): Promise<TlsSite> {
  const site: TlsSite = { port: 0, servernames: [], resumed: [], remotes: [] };
  // Security level 0 so that the server can load a SHA-1 certificate at all.
  const server = tls.createServer(
    { key: cert.keyPem, cert: chainPem, ciphers: 'DEFAULT@SECLEVEL=0' },
    (socket) => {
      site.servernames.push(socket.servername);
      site.resumed.push(socket.isSessionReused());
      socket.on('error', () => undefined);
      socket.end();
    },
  );
  server.on('connection', (socket: net.Socket) => site.remotes.push(socket.remoteAddress ?? ''));
  server.on('tlsClientError', () => undefined);
  site.port = await listen(server);
  return site;
}

function meta(r: CheckTaskResult): CertificateMeta {
  const c = (r.detail as { certificate?: CertificateMeta } | null)?.certificate;
  assert.ok(c, `no certificate in ${JSON.stringify(r.detail)}`);
  return c;
}

/** The result carries exactly the certificate meta of `cert`. */
function assertMeta(
  r: CheckTaskResult,
  cert: TestCertificate,
  issuer: string,
  signatureAlgorithm: string,
): void {
  assert.deepEqual(r.detail, {
    certificate: {
      issuer,
      signatureAlgorithm,
      validFrom: cert.notBefore,
      validTo: cert.notAfter,
      fingerprint256: cert.fingerprint256,
    },
  });
}

// Compile-time: the worker's certificate detail is the coordinator's CertificateInfo.
const _sameShape: [CertificateInfo, CertificateDetail] = [
  {} as CertificateDetail,
  {} as CertificateInfo,
];
void _sameShape;

const DATE = '\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d';

describe('certificate_health through CheckPool', () => {
  let dir: string;
  let pki: TestPki;
  let pool: CheckPool;
  /** A self-signed certificate that the trust file names: trusted as it is. */
  let pinned: TestCertificate;
  const previousExtra = process.env.NODE_EXTRA_CA_CERTS;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'vigil-cert-'));
    pki = await TestPki.create();
    pinned = await pki.leaf({ issuer: 'self', commonName: 'Vigil Pinned Self-Signed' });
    // Read by each worker thread when it loads the check (workers/lib/trust-store.ts).
    process.env.NODE_EXTRA_CA_CERTS = await pki.writeTrustFile(dir, [pinned.certPem]);
    pool = new CheckPool({ threads: 1, localAddress: null });
  });

  after(async () => {
    await pool?.close();
    for (const s of servers) s.close();
    if (previousExtra === undefined) delete process.env.NODE_EXTRA_CA_CERTS;
    else process.env.NODE_EXTRA_CA_CERTS = previousExtra;
    await rm(dir, { recursive: true, force: true });
  });

  const check = (url: string, timeoutMs = 10_000): Promise<CheckTaskResult> =>
    pool.run({ checkName: 'certificate_health', url, timeoutMs });

  test(
    'a valid leaf for localhost and 127.0.0.1, with its chain',
    { timeout: 20_000 },
    async () => {
      const cert = await pki.leaf();
      const site = await serve(cert);
      const before = Date.now();
      const r = await check(`https://localhost:${site.port}/`);
      assert.equal(r.ok, true, r.error);
      assert.equal(r.httpStatusCode, 0);
      assert.equal(r.error, '');
      assertMeta(r, cert, INTERMEDIATE.o, 'ecdsa-with-SHA256');
      assert.deepEqual(certificateFromDetail(r.detail), meta(r), 'the coordinator reads it');
      assert.equal(isUnreachable(r.detail), false);
      assert.ok(r.startedAtMs >= before && r.startedAtMs <= Date.now());
      assert.ok(r.responseTimeMs > 0 && r.responseTimeMs < 10_000, `took ${r.responseTimeMs}`);
      assert.deepEqual(site.servernames, ['localhost'], 'SNI names the host');

      const byIp = await check(`https://127.0.0.1:${site.port}/`);
      assert.equal(byIp.ok, true, byIp.error);
      assertMeta(byIp, cert, INTERMEDIATE.o, 'ecdsa-with-SHA256');
      assert.equal(site.servernames[1], false, 'no SNI for an IP address');
    },
  );

  test('a leaf from the root names the root and RSA', { timeout: 20_000 }, async () => {
    const cert = await pki.leaf({ issuer: 'root' });
    const site = await serve(cert);
    const r = await check(`https://localhost:${site.port}/`);
    assert.equal(r.ok, true, r.error);
    assertMeta(r, cert, ROOT.o, 'sha256WithRSAEncryption');
  });

  test('a leaf expiring in 5 days is still valid', { timeout: 20_000 }, async () => {
    const cert = await pki.leaf({ notAfter: fromNow(days(5)) });
    const site = await serve(cert);
    const r = await check(`https://localhost:${site.port}/`);
    assert.equal(r.ok, true, r.error);
    assertMeta(r, cert, INTERMEDIATE.o, 'ecdsa-with-SHA256');
    assert.equal(Math.floor((meta(r).validTo - r.startedAtMs) / days(1)), 4);
  });

  test('expired', { timeout: 20_000 }, async () => {
    const cert = await pki.leaf({
      notBefore: fromNow(-days(100)),
      notAfter: fromNow(-days(10) - 3_600_000),
    });
    const site = await serve(cert);
    const r = await check(`https://localhost:${site.port}/`);
    assert.equal(r.ok, false);
    assert.equal(r.httpStatusCode, 0);
    assert.equal(
      r.error,
      `Certificate expired on ${new Date(cert.notAfter).toISOString().slice(0, 19).replace('T', ' ')} (10 days ago)`,
    );
    assertMeta(r, cert, INTERMEDIATE.o, 'ecdsa-with-SHA256');
  });

  test('not yet valid', { timeout: 20_000 }, async () => {
    const cert = await pki.leaf({ notBefore: fromNow(days(3) + 3_600_000) });
    const site = await serve(cert);
    const r = await check(`https://localhost:${site.port}/`);
    assert.equal(r.ok, false);
    assert.equal(
      r.error,
      `Certificate is not valid before ${new Date(cert.notBefore).toISOString().slice(0, 19).replace('T', ' ')} (in 3 days)`,
    );
    assertMeta(r, cert, INTERMEDIATE.o, 'ecdsa-with-SHA256');
  });

  test('a certificate for another host', { timeout: 20_000 }, async () => {
    const cert = await pki.leaf({ names: ['shop.example.com', 'www.example.com'] });
    const site = await serve(cert);
    const r = await check(`https://localhost:${site.port}/`);
    assert.equal(r.ok, false);
    assert.equal(
      r.error,
      'Hostname mismatch: certificate is for shop.example.com, www.example.com; not localhost',
    );
    assertMeta(r, cert, INTERMEDIATE.o, 'ecdsa-with-SHA256');
  });

  test('a wildcard certificate that does not cover the host', { timeout: 20_000 }, async () => {
    // `*.localhost` would never match: a wildcard does not cover a bare TLD's child (and no
    // name of three labels resolves to 127.0.0.1 here). Matching wildcards are covered at the
    // unit level in certificate-verdict.test.ts.
    const cert = await pki.leaf({ names: ['*.example.org', 'example.org'] });
    const site = await serve(cert);
    const r = await check(`https://localhost:${site.port}/`);
    assert.equal(r.ok, false);
    assert.equal(
      r.error,
      'Hostname mismatch: certificate is for *.example.org, example.org; not localhost',
    );
    assert.deepEqual(site.servernames, ['localhost']);
  });

  test('an IP URL needs an IP SAN', { timeout: 20_000 }, async () => {
    const cert = await pki.leaf({ names: ['localhost'] });
    const site = await serve(cert);
    const r = await check(`https://127.0.0.1:${site.port}/`);
    assert.equal(r.ok, false);
    assert.equal(r.error, 'Hostname mismatch: certificate is for localhost; not 127.0.0.1');
  });

  test('self-signed', { timeout: 20_000 }, async () => {
    const cert = await pki.leaf({ issuer: 'self' });
    const site = await serve(cert);
    const r = await check(`https://localhost:${site.port}/`);
    assert.equal(r.ok, false);
    assert.equal(
      r.error,
      'Self-signed certificate: "localhost" is signed by itself, not by a trusted certificate authority',
    );
    assertMeta(r, cert, 'localhost', 'ecdsa-with-SHA256');
  });

  test(
    'a self-signed certificate the trust store names is trusted',
    { timeout: 20_000 },
    async () => {
      const site = await serve(pinned);
      const r = await check(`https://localhost:${site.port}/`);
      assert.equal(r.ok, true, r.error);
      assertMeta(r, pinned, 'Vigil Pinned Self-Signed', 'ecdsa-with-SHA256');
    },
  );

  test('a leaf from an untrusted CA that sends its root', { timeout: 20_000 }, async () => {
    const cert = await pki.leaf({ issuer: 'untrusted' });
    const site = await serve(cert, `${cert.certPem}\n${pki.untrustedRootPem}`);
    const r = await check(`https://localhost:${site.port}/`);
    assert.equal(r.ok, false);
    assert.equal(
      r.error,
      `Untrusted certificate authority: the chain ends at "${UNTRUSTED_ROOT.cn}", which is not a trusted root`,
    );
    assertMeta(r, cert, UNTRUSTED_ROOT.o, 'ecdsa-with-SHA256');
  });

  test('a leaf from an untrusted CA, sent alone', { timeout: 20_000 }, async () => {
    const cert = await pki.leaf({ issuer: 'untrusted' });
    const site = await serve(cert);
    const r = await check(`https://localhost:${site.port}/`);
    assert.equal(r.ok, false);
    assert.equal(
      r.error,
      `Incomplete certificate chain: the server did not send the certificate of "${UNTRUSTED_ROOT.cn}" (issuer of "localhost"), and it is not a trusted root`,
    );
  });

  test('a chain missing its intermediate', { timeout: 20_000 }, async () => {
    const cert = await pki.leaf();
    const site = await serve(cert, cert.certPem);
    const r = await check(`https://localhost:${site.port}/`);
    assert.equal(r.ok, false);
    assert.equal(
      r.error,
      `Incomplete certificate chain: the server did not send the certificate of "${INTERMEDIATE.cn}" (issuer of "localhost"), and it is not a trusted root`,
    );
    assertMeta(r, cert, INTERMEDIATE.o, 'ecdsa-with-SHA256');
  });

  test('a chain with an expired intermediate', { timeout: 20_000 }, async () => {
    const cert = await pki.leaf();
    const old = await pki.intermediateVariant(fromNow(-days(400)), fromNow(-days(2) - 60_000));
    const site = await serve(cert, `${cert.certPem}\n${old}`);
    const r = await check(`https://localhost:${site.port}/`);
    assert.equal(r.ok, false);
    assert.match(
      r.error,
      new RegExp(
        `^Certificate chain contains an expired certificate: "${INTERMEDIATE.cn}" expired on ${DATE} \\(2 days ago\\)$`,
      ),
    );
  });

  test('a SHA-1 signed leaf', { timeout: 20_000 }, async () => {
    const cert = await pki.leaf({ issuer: 'root', hash: 'SHA-1' });
    const site = await serve(cert);
    const r = await check(`https://localhost:${site.port}/`);
    assert.equal(r.ok, false);
    assert.equal(
      r.error,
      'Weak signature: the certificate is signed with SHA-1 (sha1WithRSAEncryption), which browsers no longer accept',
    );
    assertMeta(r, cert, ROOT.o, 'sha1WithRSAEncryption');
  });

  test('several faults: the first by precedence is reported', { timeout: 20_000 }, async () => {
    const expiredElsewhere = await pki.leaf({
      issuer: 'self',
      names: ['example.org'],
      notBefore: fromNow(-days(30)),
      notAfter: fromNow(-days(1) - 60_000),
    });
    const a = await check(`https://localhost:${(await serve(expiredElsewhere)).port}/`);
    assert.match(a.error, new RegExp(`^Certificate expired on ${DATE} \\(1 day ago\\)$`));
    const untrustedElsewhere = await pki.leaf({ issuer: 'untrusted', names: ['example.org'] });
    const b = await check(`https://localhost:${(await serve(untrustedElsewhere)).port}/`);
    assert.equal(b.error, 'Hostname mismatch: certificate is for example.org; not localhost');
  });

  test('every run is a fresh connection and a full handshake', { timeout: 20_000 }, async () => {
    const site = await serve(await pki.leaf());
    for (let i = 0; i < 3; i++) {
      const r = await check(`https://localhost:${site.port}/`);
      assert.equal(r.ok, true, r.error);
    }
    assert.equal(site.resumed.length, 3);
    assert.deepEqual(site.resumed, [false, false, false], 'no TLS session is resumed');
  });

  test('refused: unreachable, status left alone', { timeout: 20_000 }, async () => {
    const r = await check(`https://127.0.0.1:${await deadPort()}/`);
    assert.equal(r.ok, false);
    assert.equal(r.httpStatusCode, 0);
    assert.equal(r.error, 'Cannot connect: Connection refused');
    assert.deepEqual(r.detail, { unreachable: true });
    assert.equal(isUnreachable(r.detail), true, 'the coordinator leaves the status alone');
  });

  test('a server that never answers the handshake times out', { timeout: 20_000 }, async () => {
    const silent = net.createServer(() => undefined);
    const port = await listen(silent);
    const r = await check(`https://127.0.0.1:${port}/`, 500);
    assert.equal(r.error, 'Cannot connect: Timed out after 0.5 s');
    assert.deepEqual(r.detail, { unreachable: true });
    assert.ok(r.responseTimeMs >= 450 && r.responseTimeMs < 5000, `took ${r.responseTimeMs}`);
  });

  test(
    'a plain-text server: a TLS failure before any certificate',
    { timeout: 20_000 },
    async () => {
      const plain = net.createServer((socket) => {
        socket.on('error', () => undefined);
        socket.end('HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n');
      });
      const port = await listen(plain);
      const r = await check(`https://127.0.0.1:${port}/`);
      assert.match(r.error, /^Cannot connect: (TLS error: .+|Connection (reset|closed))$/);
      assert.deepEqual(r.detail, { unreachable: true });
    },
  );

  test('a name that does not resolve', { timeout: 20_000 }, async () => {
    const r = await check('https://vigil-test.invalid/', 5000);
    assert.match(r.error, /^Cannot connect: (DNS lookup failed \(\w+\)|Timed out after 5 s)$/);
    assert.deepEqual(r.detail, { unreachable: true });
  });

  test('a URL that is not https', { timeout: 20_000 }, async () => {
    const r = await check('http://localhost/');
    assert.equal(r.error, 'Cannot connect: not an https:// URL (http:)');
    assert.deepEqual(r.detail, { unreachable: true });
  });

  test('the local address is honored', { timeout: 20_000 }, async (t) => {
    const site = await serve(await pki.leaf());
    const bound = new CheckPool({ threads: 1, localAddress: '127.0.0.1' });
    try {
      const r = await bound.run({
        checkName: 'certificate_health',
        url: `https://127.0.0.1:${site.port}/`,
        timeoutMs: 10_000,
      });
      assert.equal(r.ok, true, r.error);
      assert.equal(site.remotes.at(-1), '127.0.0.1');
      if (!(await canBind('127.0.0.2'))) {
        t.diagnostic('127.0.0.2 cannot be bound here; skipped that half');
        return;
      }
      const other = await bound.run({
        checkName: 'certificate_health',
        url: `https://127.0.0.1:${site.port}/`,
        timeoutMs: 10_000,
        localAddress: '127.0.0.2',
      });
      assert.equal(other.ok, true, other.error);
      assert.equal(site.remotes.at(-1), '127.0.0.2');
    } finally {
      await bound.close();
    }
  });
});
