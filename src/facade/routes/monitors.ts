/**
 * Monitor routes (spec §4 listing, CONTRACT §3 extensions): `GET /webapi/monitors`,
 * `POST /webapi/monitors` (201), `GET /webapi/monitors/{id}`, `DELETE /webapi/monitors/{id}`
 * (200 `[]`). Registered inside the `vigil-auth` context.
 */
import { Type, type Static } from '@sinclair/typebox';
import type { FastifyInstance, FastifyPluginAsync } from 'fastify';
import type { MonitorView } from '../../common/service.js';
import { currentUser } from '../plugins/auth.js';
import {
  AUTH_ERRORS,
  BODYLESS_ERRORS,
  BODYLESS_TEXT,
  BODY_ERRORS,
  EmptyArray,
  IdParams,
  Monitor,
  Nullable,
  responses,
} from '../schemas.js';
import { objectBody } from '../plugins/validation.js';
import { ignoreBodies, type RouteOptions } from './input.js';

const NOT_FOUND = { notFound: 'VIGIL_ERR_MONITOR_NOT_FOUND' } as const;
const NOT_FOUND_TEXT = {
  404: '`{"message":"Monitor not found."}`: no such monitor for this token (unknown id, not a positive integer, or another account’s).',
};

/** Body of `POST /webapi/monitors` (CONTRACT §3). */
export const MonitorInputBody = Type.Object(
  {
    url: Type.String({
      description:
        'An http:// or https:// URL with a host and no credentials, at most 2048 characters.',
      examples: ['https://example.com/'],
    }),
    alias: Type.Optional(
      Nullable(Type.String({ maxLength: 255 }), {
        description: 'Display name, at most 255 characters; absent, null or blank = the host.',
      }),
    ),
  },
  {
    description:
      'The new monitor gets an uptime check (interval 300 s) and, for https:// URLs, a ' +
      'certificate_health check (3600 s), or the next interval the plan allows; both run at ' +
      'once. Unknown fields are ignored.',
    examples: [{ url: 'https://example.com/', alias: 'Example' }],
  },
);

/** The service's wording for the alias (coordinator `createMonitor`). */
const MONITOR_MESSAGES = {
  alias: 'The alias must be a string of at most 255 characters.',
};

type IdRoute = { Params: IdParams };

/** `DELETE` takes no body; one sent anyway (e.g. an empty JSON one) is ignored. */
async function deleteRoute(app: FastifyInstance, { service }: RouteOptions): Promise<void> {
  ignoreBodies(app);
  app.delete<IdRoute>(
    '/webapi/monitors/:id',
    {
      config: NOT_FOUND,
      schema: {
        operationId: 'deleteMonitor',
        tags: ['monitors'],
        summary: 'Delete a monitor',
        description: 'Its checks stop and nothing more is sent for it. Any body is ignored.',
        params: IdParams,
        response: responses({ 200: EmptyArray }, [...AUTH_ERRORS, ...BODYLESS_ERRORS, 404], {
          overrides: {
            ...NOT_FOUND_TEXT,
            ...BODYLESS_TEXT,
          },
        }),
      },
    },
    async (request) => {
      await service.deleteMonitor(currentUser(request).id, request.params.id);
      return [];
    },
  );
}

/** Route plugin for monitors; see the file comment for the surface. */
export const monitorRoutes: FastifyPluginAsync<RouteOptions> = async (app, opts) => {
  const { service } = opts;

  app.get(
    '/webapi/monitors',
    {
      schema: {
        operationId: 'listMonitors',
        tags: ['monitors'],
        summary: 'List monitors',
        description: 'Every monitor of the account, with its checks (spec §4).',
        response: responses(
          { 200: Type.Array(Type.Ref(Monitor), { description: 'The account’s monitors.' }) },
          AUTH_ERRORS,
        ),
      },
    },
    async (request): Promise<MonitorView[]> => {
      return service.listMonitors(currentUser(request).id);
    },
  );

  app.post<{ Body: Static<typeof MonitorInputBody> }>(
    '/webapi/monitors',
    {
      config: { fieldMessages: MONITOR_MESSAGES },
      schema: {
        operationId: 'createMonitor',
        tags: ['monitors'],
        summary: 'Create a monitor',
        body: MonitorInputBody,
        response: responses(
          { 201: { ...Type.Ref(Monitor), description: 'The new monitor and its checks.' } },
          [...AUTH_ERRORS, ...BODY_ERRORS],
        ),
      },
    },
    async (request, reply): Promise<MonitorView> => {
      const input = objectBody(request.body);
      const monitor = await service.createMonitor(currentUser(request).id, input);
      reply.code(201);
      return monitor;
    },
  );

  app.get<IdRoute>(
    '/webapi/monitors/:id',
    {
      config: NOT_FOUND,
      schema: {
        operationId: 'getMonitor',
        tags: ['monitors'],
        summary: 'Get a monitor',
        params: IdParams,
        response: responses({ 200: Type.Ref(Monitor) }, [...AUTH_ERRORS, 404], {
          overrides: NOT_FOUND_TEXT,
        }),
      },
    },
    async (request): Promise<MonitorView> => {
      return service.getMonitor(currentUser(request).id, request.params.id);
    },
  );

  await app.register(deleteRoute, opts);
};
