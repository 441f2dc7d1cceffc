/**
 * Monitor routes (spec §4 listing, CONTRACT §3 extensions): `GET /webapi/monitors`,
 * `POST /webapi/monitors` (201), `GET /webapi/monitors/{id}`, `DELETE /webapi/monitors/{id}`
 * (200 `[]`). Registered inside the `vigil-auth` context.
 */
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { MonitorView } from '../../common/service.js';
import { currentUser } from '../plugins/auth.js';
import { objectBody, parseId, type IdParams, type RouteOptions } from './input.js';

function monitorId(request: FastifyRequest<{ Params: IdParams }>): number {
  return parseId(request.params.id, 'VIGIL_ERR_MONITOR_NOT_FOUND');
}

/** Route plugin for monitors; see the file comment for the surface. */
export const monitorRoutes: FastifyPluginAsync<RouteOptions> = async (app, { service }) => {
  app.get('/webapi/monitors', async (request): Promise<MonitorView[]> => {
    return service.listMonitors(currentUser(request).id);
  });

  /** Body `{"url", "alias"?}`; 201 with the new monitor and its default checks. */
  app.post('/webapi/monitors', async (request, reply): Promise<MonitorView> => {
    const input = objectBody(request.body);
    const monitor = await service.createMonitor(currentUser(request).id, input);
    reply.code(201);
    return monitor;
  });

  app.get<{ Params: IdParams }>('/webapi/monitors/:id', async (request): Promise<MonitorView> => {
    return service.getMonitor(currentUser(request).id, monitorId(request));
  });

  app.delete<{ Params: IdParams }>('/webapi/monitors/:id', async (request) => {
    const id = monitorId(request);
    await service.deleteMonitor(currentUser(request).id, id);
    return [];
  });
};
