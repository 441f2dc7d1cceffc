/**
 * Operations endpoints, no token (CONTRACT §4, issue 6): `GET /healthz` (the process
 * answers), `GET /readyz` (store open and at least one probe connected; 503 otherwise),
 * `GET /metrics` (Prometheus text format, names prefixed `vigil_`).
 */
import type { FastifyPluginAsync } from 'fastify';
import { VigilError } from '../../common/errors.js';
import { registry } from '../../common/metrics.js';
import type { RouteOptions } from './input.js';

export const opsRoutes: FastifyPluginAsync<RouteOptions> = async (app, { service }) => {
  app.get('/healthz', async () => ({ status: 'ok' }));

  app.get('/readyz', async () => {
    const { store, probes } = service.readiness();
    if (!store) throw new VigilError('VIGIL_ERR_UNAVAILABLE', 'Not ready: the store is closed.');
    if (probes === 0) {
      throw new VigilError('VIGIL_ERR_UNAVAILABLE', 'Not ready: no probe is connected.');
    }
    return { status: 'ready', probes };
  });

  app.get('/metrics', async (_request, reply) => {
    reply.type(registry.contentType);
    return registry.metrics();
  });
};
