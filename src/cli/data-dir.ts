/**
 * Files a running service leaves in its data dir for operators and the CLI (CONTRACT §1):
 * `endpoints.json` (`{"http": N, "grpc": N}`, written once listening), `admin.token` (mode
 * 0600, lets `vigil users …` reach the running service) and `probe.token` (the generated probe
 * token when none was configured).
 */
import { randomBytes } from 'node:crypto';
import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

export interface Endpoints {
  http: number;
  grpc: number;
}

/** Path of `DIR/endpoints.json`. */
export const endpointsPath = (dir: string): string => join(dir, 'endpoints.json');
const adminTokenPath = (dir: string): string => join(dir, 'admin.token');
const probeTokenPath = (dir: string): string => join(dir, 'probe.token');

/** Write the bound ports once listening (CONTRACT §1). */
export async function writeEndpoints(dir: string, e: Endpoints): Promise<void> {
  await writeFile(endpointsPath(dir), `${JSON.stringify(e)}\n`);
}

/** The ports a running service wrote, or null when there is no (readable) file. */
export async function readEndpoints(dir: string): Promise<Endpoints | null> {
  try {
    return JSON.parse(await readFile(endpointsPath(dir), 'utf8')) as Endpoints;
  } catch {
    return null;
  }
}

/** A fresh admin token for this run of the service, written 0600. */
export async function writeAdminToken(dir: string): Promise<string> {
  const token = randomBytes(32).toString('base64url');
  await writeFile(adminTokenPath(dir), token, { mode: 0o600 });
  return token;
}

/** The running service's admin token, or null when it is not running (or not yet). */
export async function readAdminToken(dir: string): Promise<string | null> {
  try {
    return (await readFile(adminTokenPath(dir), 'utf8')).trim();
  } catch {
    return null;
  }
}

/** The configured probe token, else the one saved in the data dir, else a new saved one. */
export async function resolveProbeToken(
  dir: string,
  configured: string | undefined,
): Promise<string> {
  if (configured) return configured;
  try {
    const saved = (await readFile(probeTokenPath(dir), 'utf8')).trim();
    if (saved) return saved;
  } catch {
    // none saved yet
  }
  const token = randomBytes(24).toString('base64url');
  await writeFile(probeTokenPath(dir), token, { mode: 0o600 });
  return token;
}

/** Remove the files that only make sense while the service runs. */
export async function clearRuntimeFiles(dir: string): Promise<void> {
  await rm(endpointsPath(dir), { force: true });
  await rm(adminTokenPath(dir), { force: true });
}
