/**
 * Operations endpoints, no token (CONTRACT §4, issue 6): `GET /healthz` (the process
 * answers), `GET /readyz` (store open and at least one probe connected; 503 otherwise),
 * `GET /metrics` (Prometheus text format, names prefixed `vigil_`).
 */
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsync } from 'fastify';
import { VigilError } from '../../common/errors.js';
import { registry } from '../../common/metrics.js';
import { StringEnum, responses } from '../schemas.js';
import type { RouteOptions } from './input.js';

const common = { tags: ['operations'], security: [] };

/** Route plugin for the operations endpoints; see the file comment. */
export const opsRoutes: FastifyPluginAsync<RouteOptions> = async (app, { service }) => {
  app.get(
    '/healthz',
    {
      schema: {
        ...common,
        operationId: 'getHealth',
        summary: 'Liveness',
        description: 'Answers 200 while the process serves requests.',
        response: responses({ 200: Type.Object({ status: StringEnum(['ok']) }) }, [500], {
          rateLimited: false,
        }),
      },
    },
    async () => ({ status: 'ok' }),
  );

  app.get(
    '/readyz',
    {
      schema: {
        ...common,
        operationId: 'getReadiness',
        summary: 'Readiness',
        description: 'Ready when the store is open and at least one probe is connected.',
        response: responses(
          {
            200: Type.Object({
              status: StringEnum(['ready']),
              probes: Type.Integer({ minimum: 1, description: 'Probe nodes connected.' }),
            }),
          },
          [500, 503],
          {
            rateLimited: false,
            overrides: { 503: 'Not ready: the store is closed, or no probe is connected.' },
          },
        ),
      },
    },
    async () => {
      const { store, probes } = service.readiness();
      if (!store) throw new VigilError('VIGIL_ERR_UNAVAILABLE', 'Not ready: the store is closed.');
      if (probes === 0) {
        throw new VigilError('VIGIL_ERR_UNAVAILABLE', 'Not ready: no probe is connected.');
      }
      return { status: 'ready', probes };
    },
  );

  app.get(
    '/metrics',
    {
      schema: {
        ...common,
        operationId: 'getMetrics',
        summary: 'Prometheus metrics',
        description: 'Prometheus text exposition format; every metric name starts with `vigil_`.',
        response: {
          200: {
            description: 'The metrics.',
            content: { 'text/plain': { schema: Type.String() } },
          },
          ...responses({}, [500], { rateLimited: false }),
        },
      },
    },
    async (_request, reply) => {
      reply.type(registry.contentType);
      return registry.metrics();
    },
  );
};
