/**
 * TLS for the coordinator↔probe channel (CONTRACT §7, issue 5): `--tls-cert`, `--tls-key`,
 * `--tls-ca` on both sides. The coordinator serves TLS when given a certificate and key, and
 * requires probe client certificates signed by `--tls-ca` when that is given too (mutual
 * TLS). A probe trusts `--tls-ca` (else the system roots) and presents its own certificate
 * when given one.
 */
import * as grpc from '@grpc/grpc-js';
import { readFileSync } from 'node:fs';
import { VigilError } from './errors.js';

/** PEM file paths as given on the command line. */
export interface TlsFiles {
  cert?: string | undefined;
  key?: string | undefined;
  ca?: string | undefined;
}

function read(path: string, flag: string): Buffer {
  try {
    return readFileSync(path);
  } catch (err) {
    throw new VigilError(
      'VIGIL_ERR_CONFIG',
      `cannot read ${flag} ${path}: ${(err as Error).message}`,
    );
  }
}

/**
 * Server credentials for `vigil coordinator`: insecure without files, TLS with cert+key,
 * mutual TLS with cert+key+ca.
 * @throws VigilError VIGIL_ERR_CONFIG for a missing half of a pair or an unreadable file
 */
export function serverCredentials(files: TlsFiles): grpc.ServerCredentials {
  if (!files.cert && !files.key && !files.ca) return grpc.ServerCredentials.createInsecure();
  if (!files.cert || !files.key) {
    throw new VigilError('VIGIL_ERR_CONFIG', 'TLS needs both --tls-cert and --tls-key.');
  }
  const ca = files.ca ? read(files.ca, '--tls-ca') : null;
  return grpc.ServerCredentials.createSsl(
    ca,
    [{ cert_chain: read(files.cert, '--tls-cert'), private_key: read(files.key, '--tls-key') }],
    ca !== null,
  );
}

/**
 * Channel credentials for `vigil probe`: insecure without files; TLS trusting `ca` (else
 * the system roots) when any file is given; a client certificate when cert+key are given.
 * @throws VigilError VIGIL_ERR_CONFIG as above
 */
export function channelCredentials(files: TlsFiles): grpc.ChannelCredentials {
  if (!files.cert && !files.key && !files.ca) return grpc.credentials.createInsecure();
  if (Boolean(files.cert) !== Boolean(files.key)) {
    throw new VigilError(
      'VIGIL_ERR_CONFIG',
      'A client certificate needs both --tls-cert and --tls-key.',
    );
  }
  return grpc.credentials.createSsl(
    files.ca ? read(files.ca, '--tls-ca') : null,
    files.key ? read(files.key, '--tls-key') : null,
    files.cert ? read(files.cert, '--tls-cert') : null,
  );
}
