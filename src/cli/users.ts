/**
 * `vigil users …` (CONTRACT §1). Works with the service stopped (opens the store directly)
 * and while it runs on that data dir (the store is then locked, so the command goes through
 * the running service's operator route `POST /_admin/users`, authorised by `admin.token`).
 */
import { request } from 'undici';
import { VigilError, type ErrorCode } from '../common/errors.js';
import type { UserAdmin } from '../common/service.js';
import { Coordinator } from '../coordinator/coordinator.js';
import { readAdminToken, readEndpoints } from './data-dir.js';

/** One operator action, as sent to the admin route. */
export type AdminOp =
  | {
      op: 'create';
      args: { email: string; plan?: string; webhookUrl?: string | null; apiEnabled?: boolean };
    }
  | { op: 'list'; args: Record<string, never> }
  | { op: 'show'; args: { email: string } }
  | { op: 'set'; args: { email: string; plan?: string; webhookUrl?: string | null } }
  | { op: 'api'; args: { email: string; enabled: boolean } }
  | { op: 'rotate-token'; args: { email: string } };

/** Carry out `action` on `admin`. */
export function applyAdminOp(admin: UserAdmin, action: AdminOp): Promise<unknown> {
  switch (action.op) {
    case 'create':
      return admin.createUser(action.args);
    case 'list':
      return admin.listUsers();
    case 'show':
      return admin.showUser(action.args.email);
    case 'set':
      return admin.setUser(action.args.email, action.args);
    case 'api':
      return admin.setApiEnabled(action.args.email, action.args.enabled);
    case 'rotate-token':
      return admin.rotateToken(action.args.email);
  }
}

/**
 * Run `action` against the data dir, directly or through the running service.
 * @throws VigilError with the code the service answered (e.g. VIGIL_ERR_USER_NOT_FOUND)
 */
export async function runAdminOp(dataDir: string, action: AdminOp): Promise<unknown> {
  let coordinator: Coordinator;
  try {
    coordinator = await Coordinator.open({ dataDir });
  } catch (err) {
    if (err instanceof VigilError && err.code === 'VIGIL_ERR_DATA_DIR_LOCKED') {
      return viaService(dataDir, action, err);
    }
    throw err;
  }
  try {
    return await applyAdminOp(coordinator, action);
  } finally {
    await coordinator.close();
  }
}

async function viaService(dataDir: string, action: AdminOp, locked: VigilError): Promise<unknown> {
  const endpoints = await readEndpoints(dataDir);
  const token = await readAdminToken(dataDir);
  if (!endpoints || !token) {
    throw new VigilError(
      'VIGIL_ERR_DATA_DIR_LOCKED',
      `${locked.message} It has not finished starting; try again in a moment.`,
    );
  }
  const res = await request(`http://127.0.0.1:${endpoints.http}/_admin/users`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-vigil-admin-token': token },
    body: JSON.stringify(action),
    headersTimeout: 10_000,
    bodyTimeout: 10_000,
  });
  const body = (await res.body.json()) as {
    code?: ErrorCode;
    message?: string;
    errors?: Record<string, string[]>;
  };
  if (res.statusCode === 200) return body;
  throw new VigilError(
    body.code ?? 'VIGIL_ERR_INTERNAL',
    body.message ?? `HTTP ${res.statusCode}`,
    {
      ...(body.errors ? { fields: body.errors } : {}),
    },
  );
}
