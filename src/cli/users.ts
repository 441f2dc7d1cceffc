/**
 * `vigil users …` (CONTRACT §1). Works with the service stopped (opens the store directly)
 * and while it runs on that data dir (the store is then locked, so the command goes through
 * the running service's operator route `POST /_admin/users`, authorised by `admin.token`).
 */
import { request } from 'undici';
import { VigilError, type ErrorCode } from '../common/errors.js';
import { applyAdminAction, type AdminAction } from '../common/admin-ops.js';
import { Coordinator } from '../coordinator/coordinator.js';
import { readAdminToken, readEndpoints } from './data-dir.js';

/**
 * Run `action` against the data dir, directly or through the running service.
 * @throws VigilError with the code the service answered (e.g. VIGIL_ERR_USER_NOT_FOUND)
 */
export async function runAdminOp(dataDir: string, action: AdminAction): Promise<unknown> {
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
    return await applyAdminAction(coordinator, action);
  } finally {
    await coordinator.close();
  }
}

async function viaService(
  dataDir: string,
  action: AdminAction,
  locked: VigilError,
): Promise<unknown> {
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
