/**
 * Check routes (spec §4, CONTRACT §3): `GET /webapi/checks/{id}`, `PUT /webapi/checks/{id}`,
 * `POST /webapi/checks/{id}/disable`, `POST /webapi/checks/{id}/enable`. Registered inside
 * the `vigil-auth` context.
 */
import type { FastifyInstance, FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { CheckView } from '../../common/service.js';
import { currentUser } from '../plugins/auth.js';
import { ignoreBodies, objectBody, parseId, type IdParams, type RouteOptions } from './input.js';

type IdRequest = FastifyRequest<{ Params: IdParams }>;

function checkId(request: IdRequest): number {
  return parseId(request.params.id, 'VIGIL_ERR_CHECK_NOT_FOUND');
}

/** `disable` / `enable` take no body (spec §4); whatever is sent is ignored. */
async function bodylessActions(app: FastifyInstance, { service }: RouteOptions): Promise<void> {
  ignoreBodies(app);

  for (const [action, enabled] of [
    ['disable', false],
    ['enable', true],
  ] as const) {
    app.post<{ Params: IdParams }>(`/webapi/checks/:id/${action}`, async (request) => {
      const id = checkId(request);
      await service.setCheckEnabled(currentUser(request).id, id, enabled);
      return [];
    });
  }
}

/** Route plugin for checks; see the file comment for the surface. */
export const checkRoutes: FastifyPluginAsync<RouteOptions> = async (app, opts) => {
  const { service } = opts;

  app.get<{ Params: IdParams }>('/webapi/checks/:id', async (request): Promise<CheckView> => {
    return service.getCheck(currentUser(request).id, checkId(request));
  });

  /** Body: `interval`, `notification_threshold`, `expiry_threshold_days`; 200 `[]`. */
  app.put<{ Params: IdParams }>('/webapi/checks/:id', async (request) => {
    const id = checkId(request);
    const patch = objectBody(request.body);
    await service.updateCheck(currentUser(request).id, id, patch);
    return [];
  });

  await app.register(bodylessActions, opts);
};
