/**
 * Monitor routes (spec §4 listing, CONTRACT §3 extensions): `GET /webapi/monitors`,
 * `POST /webapi/monitors` (201), `GET /webapi/monitors/{id}`, `DELETE /webapi/monitors/{id}`
 * (200 `[]`), and `POST /webapi/monitors/bulk` (201, up to 1000 monitors at once, all or nothing;
 * docs/architecture.md "API edge"). Registered inside the `vigil-auth` context.
 */
import { Type, type Static } from '@sinclair/typebox';
import type { FastifyInstance, FastifyPluginAsync } from 'fastify';
import { BULK_MONITORS_MAX, type MonitorView } from '../../common/service.js';
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

/** Body of `POST /webapi/monitors/bulk`: the monitors to create, all or nothing. */
export const MonitorBulkBody = Type.Object(
  {
    monitors: Type.Array(
      Type.Object({
        url: Type.String({ description: 'As in `POST /webapi/monitors`.' }),
        // Its length is checked by the service, so that the 422 names the item.
        alias: Type.Optional(
          Nullable(Type.String(), { description: 'As in `POST /webapi/monitors`.' }),
        ),
        interval: Type.Optional(
          Type.Integer({
            description:
              'The uptime check’s interval, seconds (a JSON number), on the account’s plan; ' +
              'absent = the default of a single create (300, or the next the plan allows).',
          }),
        ),
      }),
      { minItems: 1, maxItems: BULK_MONITORS_MAX },
    ),
  },
  {
    description:
      `1 to ${BULK_MONITORS_MAX} monitors, created in one atomic write: any invalid item is a ` +
      '422 naming it (`monitors.3.url`) and nothing is created. Their checks run at once, as ' +
      'with a single create; to spread the load of a large import, send it in chunks over ' +
      'one interval.',
    examples: [{ monitors: [{ url: 'https://example.com/', alias: 'Example', interval: 60 }] }],
  },
);

/** Largest bulk body, bytes: 1000 URLs of up to 2048 characters, with room to spare. */
export const BULK_BODY_LIMIT_BYTES = 4 * 1024 * 1024;

/** The wording of a bulk body whose `monitors` has the wrong shape. */
const BULK_MESSAGES = {
  monitors:
    `The monitors must be an array of 1 to ${BULK_MONITORS_MAX} objects ` +
    '{"url", "alias"?, "interval"?}.',
};

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

  app.post<{ Body: Static<typeof MonitorBulkBody> }>(
    '/webapi/monitors/bulk',
    {
      bodyLimit: BULK_BODY_LIMIT_BYTES,
      config: { fieldMessages: BULK_MESSAGES },
      schema: {
        operationId: 'createMonitors',
        tags: ['monitors'],
        summary: 'Create many monitors at once',
        body: MonitorBulkBody,
        response: responses(
          {
            201: Type.Object(
              { monitors: Type.Array(Type.Ref(Monitor)) },
              { description: 'The new monitors and their checks, in request order.' },
            ),
          },
          [...AUTH_ERRORS, ...BODY_ERRORS],
        ),
      },
    },
    async (request, reply): Promise<{ monitors: MonitorView[] }> => {
      const body = objectBody(request.body);
      const monitors = await service.createMonitors(
        currentUser(request).id,
        body.monitors as Static<typeof MonitorBulkBody>['monitors'],
      );
      reply.code(201);
      return { monitors };
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
