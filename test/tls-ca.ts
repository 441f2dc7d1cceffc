/**
 * A throw-away PKI for tests, made at run time with @peculiar/x509 and Node's WebCrypto:
 * a trusted root CA (RSA 2048), an intermediate CA under it (ECDSA P-256), an untrusted
 * root (ECDSA P-256), and server leaves with the names, validity, issuer and signature hash
 * a test asks for. Nothing is downloaded and no key is stored in the repository.
 *
 * Keys are made once per TestPki and reused (one shared leaf key), so a leaf costs a
 * signature, not a key generation. Which issuer signs decides the leaf's signature
 * algorithm: the intermediate gives `ecdsa-with-SHA256`, the root `sha256WithRSAEncryption`
 * (or `sha1WithRSAEncryption` with `hash: 'SHA-1'`).
 */
import 'reflect-metadata';
import { X509Certificate as NodeX509Certificate, webcrypto } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { isIP } from 'node:net';
import { join } from 'node:path';
import * as x509 from '@peculiar/x509';

// @peculiar/x509 is typed against the DOM's WebCrypto types, Node's against its own.
x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);
const subtle = webcrypto.subtle;

type CryptoKey = webcrypto.CryptoKey;
type CryptoKeyPair = webcrypto.CryptoKeyPair;
type EcdsaParams = webcrypto.EcdsaParams;

const DAY_MS = 86_400_000;

/** Subject names of the test CAs. The meta `issuer` of a leaf is its issuer's O. */
export const ROOT = { cn: 'Vigil Test Root CA', o: 'Vigil Test Root' } as const;
export const INTERMEDIATE = { cn: 'Vigil Test Intermediate CA', o: 'Vigil Test CA' } as const;
export const UNTRUSTED_ROOT = { cn: 'Untrusted Test Root CA', o: 'Nobody Trusts Me' } as const;

/** Who signs a leaf. */
export type LeafIssuer = 'intermediate' | 'root' | 'untrusted' | 'self';

export interface LeafOptions {
  /**
   * DNS names and IP literals of the subject alternative names.
   * @default ['localhost', '127.0.0.1']
   */
  names?: string[];
  /** Subject CN. @default the first name, or 'localhost' */
  commonName?: string;
  /** @default now − 1 day */
  notBefore?: Date;
  /** @default now + 90 days */
  notAfter?: Date;
  /** @default 'intermediate' */
  issuer?: LeafIssuer;
  /** Hash of the leaf's signature; SHA-1 only with issuer `root` or `self`. @default 'SHA-256' */
  hash?: 'SHA-256' | 'SHA-1';
}

/** A certificate ready to serve. */
export interface TestCertificate {
  /** The certificate alone, PEM. */
  certPem: string;
  /** Its private key, PKCS#8 PEM. */
  keyPem: string;
  /**
   * What a well-configured server sends: the leaf plus the intermediate when the
   * intermediate issued it, the leaf alone otherwise.
   */
  chainPem: string;
  /** Node's SHA-256 fingerprint, `AA:BB:…`. */
  fingerprint256: string;
  /** Validity as stored in the certificate (whole seconds), ms since epoch. */
  notBefore: number;
  notAfter: number;
}

interface Ca {
  cert: x509.X509Certificate;
  keys: CryptoKeyPair;
  pem: string;
}

const RSA: webcrypto.RsaHashedKeyGenParams = {
  name: 'RSASSA-PKCS1-v1_5',
  modulusLength: 2048,
  publicExponent: new Uint8Array([1, 0, 1]),
  hash: 'SHA-256',
};
const EC: webcrypto.EcKeyGenParams = { name: 'ECDSA', namedCurve: 'P-256' };

/** A positive random serial, hex. */
function serial(): string {
  const bytes = webcrypto.getRandomValues(new Uint8Array(16));
  bytes[0] = (bytes[0] ?? 0) & 0x7f;
  return Buffer.from(bytes).toString('hex');
}

function dn(name: { cn: string; o?: string }): string {
  return name.o ? `CN=${name.cn}, O=${name.o}` : `CN=${name.cn}`;
}

async function pkcs8Pem(key: CryptoKey): Promise<string> {
  const der = Buffer.from(await subtle.exportKey('pkcs8', key));
  return x509.PemConverter.encode(der, 'PRIVATE KEY');
}

/** Certificates seconds-truncated, as X.509 stores them. */
const seconds = (d: Date): Date => new Date(Math.floor(d.getTime() / 1000) * 1000);

async function caExtensions(publicKey: CryptoKey, issuer?: Ca): Promise<x509.Extension[]> {
  const ext: x509.Extension[] = [
    new x509.BasicConstraintsExtension(true, undefined, true),
    new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
    await x509.SubjectKeyIdentifierExtension.create(publicKey),
  ];
  if (issuer) ext.push(await x509.AuthorityKeyIdentifierExtension.create(issuer.cert));
  return ext;
}

/** The test PKI. Make one with `TestPki.create()`. */
export class TestPki {
  private constructor(
    /** The trusted root. */
    readonly root: Ca,
    /** The intermediate under the root. */
    readonly intermediate: Ca,
    /** A root nobody trusts. */
    readonly untrusted: Ca,
    /** The key pair every leaf uses. */
    private readonly leafKeys: CryptoKeyPair,
    /** The root's private key again, bound to SHA-1 (WebCrypto binds RSA keys to one hash). */
    private readonly rootSha1Key: CryptoKey,
    /** The leaf key's PKCS#8 PEM. */
    private readonly leafKeyPem: string,
  ) {}

  /** Make the keys and CA certificates (well under a second). */
  static async create(): Promise<TestPki> {
    const [rootKeys, intermediateKeys, untrustedKeys, leafKeys] = await Promise.all([
      subtle.generateKey(RSA, true, ['sign', 'verify']),
      subtle.generateKey(EC, true, ['sign', 'verify']),
      subtle.generateKey(EC, true, ['sign', 'verify']),
      subtle.generateKey(EC, true, ['sign', 'verify']),
    ]);
    const now = Date.now();
    const caValidity = {
      notBefore: new Date(now - 365 * DAY_MS),
      notAfter: new Date(now + 3650 * DAY_MS),
    };
    const rootCert = await x509.X509CertificateGenerator.createSelfSigned({
      serialNumber: serial(),
      name: dn(ROOT),
      keys: rootKeys,
      ...caValidity,
      extensions: await caExtensions(rootKeys.publicKey),
    });
    const root: Ca = { cert: rootCert, keys: rootKeys, pem: rootCert.toString('pem') };
    const intermediateCert = await x509.X509CertificateGenerator.create({
      serialNumber: serial(),
      subject: dn(INTERMEDIATE),
      issuer: rootCert.subject,
      publicKey: intermediateKeys.publicKey,
      signingKey: rootKeys.privateKey,
      ...caValidity,
      extensions: await caExtensions(intermediateKeys.publicKey, root),
    });
    const untrustedCert = await x509.X509CertificateGenerator.createSelfSigned({
      serialNumber: serial(),
      name: dn(UNTRUSTED_ROOT),
      keys: untrustedKeys,
      signingAlgorithm: { name: 'ECDSA', hash: 'SHA-256' } as EcdsaParams,
      ...caValidity,
      extensions: await caExtensions(untrustedKeys.publicKey),
    });
    const rootSha1Key = await subtle.importKey(
      'pkcs8',
      await subtle.exportKey('pkcs8', rootKeys.privateKey),
      { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-1' },
      false,
      ['sign'],
    );
    return new TestPki(
      root,
      {
        cert: intermediateCert,
        keys: intermediateKeys,
        pem: intermediateCert.toString('pem'),
      },
      { cert: untrustedCert, keys: untrustedKeys, pem: untrustedCert.toString('pem') },
      leafKeys,
      rootSha1Key,
      await pkcs8Pem(leafKeys.privateKey),
    );
  }

  /** The trusted root, PEM: what NODE_EXTRA_CA_CERTS must hold. */
  get rootPem(): string {
    return this.root.pem;
  }

  /**
   * Write the trust file (the root, plus `extraPems`) to `dir` and return its path, for
   * `NODE_EXTRA_CA_CERTS`.
   */
  async writeTrustFile(dir: string, extraPems: string[] = []): Promise<string> {
    const path = join(dir, 'vigil-test-ca.pem');
    await writeFile(path, [this.root.pem, ...extraPems].join('\n') + '\n');
    return path;
  }

  /** A server certificate. */
  async leaf(options: LeafOptions = {}): Promise<TestCertificate> {
    const now = Date.now();
    const names = options.names ?? ['localhost', '127.0.0.1'];
    const issuerKind = options.issuer ?? 'intermediate';
    const hash = options.hash ?? 'SHA-256';
    const notBefore = seconds(options.notBefore ?? new Date(now - DAY_MS));
    const notAfter = seconds(options.notAfter ?? new Date(now + 90 * DAY_MS));
    const subject = dn({ cn: options.commonName ?? names[0] ?? 'localhost' });
    const extensions: x509.Extension[] = [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
      await x509.SubjectKeyIdentifierExtension.create(this.leafKeys.publicKey),
    ];
    // No key usage on a self-signed leaf, like `openssl req -x509` makes them: OpenSSL calls
    // a certificate self-signed only when its key usage (if any) allows signing certificates.
    if (issuerKind !== 'self') {
      extensions.push(new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true));
    }
    if (names.length > 0) {
      extensions.push(
        new x509.SubjectAlternativeNameExtension(
          names.map((n) => ({ type: isIP(n) ? ('ip' as const) : ('dns' as const), value: n })),
        ),
      );
    }
    let cert: x509.X509Certificate;
    if (issuerKind === 'self') {
      if (hash !== 'SHA-256') throw new Error('self-signed test leaves use SHA-256');
      cert = await x509.X509CertificateGenerator.createSelfSigned({
        serialNumber: serial(),
        name: subject,
        keys: this.leafKeys,
        notBefore,
        notAfter,
        signingAlgorithm: { name: 'ECDSA', hash } as EcdsaParams,
        extensions,
      });
    } else {
      const ca = { intermediate: this.intermediate, root: this.root, untrusted: this.untrusted }[
        issuerKind
      ];
      if (hash === 'SHA-1' && issuerKind !== 'root') {
        throw new Error('SHA-1 test leaves are issued by the root (RSA)');
      }
      extensions.push(await x509.AuthorityKeyIdentifierExtension.create(ca.cert));
      cert = await x509.X509CertificateGenerator.create({
        serialNumber: serial(),
        subject,
        issuer: ca.cert.subject,
        publicKey: this.leafKeys.publicKey,
        signingKey: hash === 'SHA-1' ? this.rootSha1Key : ca.keys.privateKey,
        signingAlgorithm:
          ca === this.root
            ? { name: 'RSASSA-PKCS1-v1_5' }
            : ({ name: 'ECDSA', hash } as EcdsaParams),
        notBefore,
        notAfter,
        extensions,
      });
    }
    const certPem = cert.toString('pem');
    return {
      certPem,
      keyPem: this.leafKeyPem,
      chainPem: issuerKind === 'intermediate' ? `${certPem}\n${this.intermediate.pem}` : certPem,
      fingerprint256: new NodeX509Certificate(certPem).fingerprint256,
      notBefore: notBefore.getTime(),
      notAfter: notAfter.getTime(),
    };
  }

  /**
   * The intermediate CA again (same name and key, so it issues the same leaves) with other
   * validity dates, PEM: for chains that hold an expired intermediate.
   */
  async intermediateVariant(notBefore: Date, notAfter: Date): Promise<string> {
    const cert = await x509.X509CertificateGenerator.create({
      serialNumber: serial(),
      subject: this.intermediate.cert.subject,
      issuer: this.root.cert.subject,
      publicKey: this.intermediate.keys.publicKey,
      signingKey: this.root.keys.privateKey,
      notBefore: seconds(notBefore),
      notAfter: seconds(notAfter),
      extensions: await caExtensions(this.intermediate.keys.publicKey, this.root),
    });
    return cert.toString('pem');
  }

  /** The untrusted root, PEM (for servers that send their whole chain). */
  get untrustedRootPem(): string {
    return this.untrusted.pem;
  }
}

/** `ms` from now as a Date. */
export const fromNow = (ms: number): Date => new Date(Date.now() + ms);

/** Days as ms. */
export const days = (n: number): number => n * DAY_MS;
