/**
 * Check routes (spec §4, CONTRACT §3, issue 6): `GET /webapi/checks/{id}`,
 * `PUT /webapi/checks/{id}`, `GET /webapi/checks/{id}/results?limit=N`,
 * `POST /webapi/checks/{id}/disable`, `POST /webapi/checks/{id}/enable`. Registered inside
 * the `vigil-auth` context.
 */
import { Type, type Static } from '@sinclair/typebox';
import type { FastifyInstance, FastifyPluginAsync } from 'fastify';
import type { CheckResultView, CheckView } from '../../common/service.js';
import {
  EXPIRY_THRESHOLDS_DAYS,
  INTERVALS_SECONDS,
  NOTIFICATION_THRESHOLDS_SECONDS,
} from '../../domain/check.js';
import { currentUser } from '../plugins/auth.js';
import {
  AUTH_ERRORS,
  BODYLESS_ERRORS,
  BODYLESS_TEXT,
  BODY_ERRORS,
  Check,
  CheckResult,
  EmptyArray,
  IdParams,
  NUMBER_NOTE,
  Nullable,
  responses,
} from '../schemas.js';
import { objectBody } from '../plugins/validation.js';
import { ignoreBodies, type RouteOptions } from './input.js';

const NOT_FOUND = {
  notFound: 'VIGIL_ERR_CHECK_NOT_FOUND',
} as const;
const NOT_FOUND_TEXT = {
  404: '`{"message":"Check not found."}`: no such check for this token (unknown id, not a positive integer, or another account’s).',
};

/** Body of `PUT /webapi/checks/{id}` (spec §4, CONTRACT §3). */
export const CheckPatchBody = Type.Object(
  {
    interval: Type.Optional(
      Type.Integer({
        description:
          `Seconds between runs: one of ${INTERVALS_SECONDS.join(', ')}, and on the ` +
          `account’s plan (free: 300 and up, pro: 60 and up, business: all). ${NUMBER_NOTE}`,
        examples: [300],
      }),
    ),
    notification_threshold: Type.Optional(
      Type.Integer({
        description:
          `Seconds, one of ${NOTIFICATION_THRESHOLDS_SECONDS.join(', ')}; effective on uptime ` +
          `checks only. ${NUMBER_NOTE}`,
        examples: [60],
      }),
    ),
    expiry_threshold_days: Type.Optional(
      Nullable(Type.Integer(), {
        description:
          `certificate_health checks only: null or one of ${EXPIRY_THRESHOLDS_DAYS.join(', ')}. ` +
          NUMBER_NOTE,
      }),
    ),
  },
  {
    description:
      'At least one known field. Unknown fields are ignored. Which values are allowed is ' +
      'checked against the check and the plan; a refused value is a 422 naming the field.',
    examples: [{ interval: 900, notification_threshold: 60 }],
  },
);

/** The service's wording for type failures of the patch fields (domain/validate.ts). */
const CHECK_PATCH_MESSAGES = {
  interval: 'The interval must be a whole number of seconds.',
  notification_threshold: 'The notification threshold must be a whole number of seconds.',
  expiry_threshold_days: `The expiry threshold must be null or one of ${EXPIRY_THRESHOLDS_DAYS.join(', ')}.`,
};

/** Query of `GET /webapi/checks/{id}/results` (issue 6). */
export const ResultsQuery = Type.Object({
  limit: Type.Optional(
    Type.Integer({
      minimum: 1,
      maximum: 1000,
      default: 100,
      description: 'How many runs, newest first: 1–1000. Anything else is a 422.',
    }),
  ),
});

type IdRoute = { Params: IdParams };

/** `disable` / `enable` take no body (spec §4); whatever is sent is ignored. */
async function bodylessActions(app: FastifyInstance, { service }: RouteOptions): Promise<void> {
  ignoreBodies(app);

  for (const [action, enabled] of [
    ['disable', false],
    ['enable', true],
  ] as const) {
    app.post<IdRoute>(
      `/webapi/checks/:id/${action}`,
      {
        config: NOT_FOUND,
        schema: {
          operationId: `${action}Check`,
          tags: ['checks'],
          summary: `${enabled ? 'Enable' : 'Disable'} a check`,
          description: enabled
            ? 'Takes no body (any is ignored). The check runs at once. Enabling twice is harmless.'
            : 'Takes no body (any is ignored). The check stops running; webhooks already ' +
              'queued are still delivered. Disabling twice is harmless.',
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
        await service.setCheckEnabled(currentUser(request).id, request.params.id, enabled);
        return [];
      },
    );
  }
}

/** Route plugin for checks; see the file comment for the surface. */
export const checkRoutes: FastifyPluginAsync<RouteOptions> = async (app, opts) => {
  const { service } = opts;

  app.get<IdRoute>(
    '/webapi/checks/:id',
    {
      config: NOT_FOUND,
      schema: {
        operationId: 'getCheck',
        tags: ['checks'],
        summary: 'Get a check',
        params: IdParams,
        response: responses({ 200: Type.Ref(Check) }, [...AUTH_ERRORS, 404], {
          overrides: NOT_FOUND_TEXT,
        }),
      },
    },
    async (request): Promise<CheckView> => {
      return service.getCheck(currentUser(request).id, request.params.id);
    },
  );

  app.put<IdRoute & { Body: Static<typeof CheckPatchBody> }>(
    '/webapi/checks/:id',
    {
      config: { ...NOT_FOUND, fieldMessages: CHECK_PATCH_MESSAGES },
      schema: {
        operationId: 'updateCheck',
        tags: ['checks'],
        summary: 'Update a check',
        description:
          'Changes take effect at once: a new interval reschedules the next run from now.',
        params: IdParams,
        body: CheckPatchBody,
        response: responses({ 200: EmptyArray }, [...AUTH_ERRORS, ...BODY_ERRORS, 404], {
          overrides: NOT_FOUND_TEXT,
        }),
      },
    },
    async (request) => {
      const patch = objectBody(request.body);
      await service.updateCheck(currentUser(request).id, request.params.id, patch);
      return [];
    },
  );

  app.get<IdRoute & { Querystring: Static<typeof ResultsQuery> }>(
    '/webapi/checks/:id/results',
    {
      config: NOT_FOUND,
      schema: {
        operationId: 'listCheckResults',
        tags: ['checks'],
        summary: 'List a check’s latest runs',
        description:
          'The latest runs of the check, newest first, from every probe location. Raw ' +
          'results are kept for a bounded time (30 days by default).',
        params: IdParams,
        querystring: ResultsQuery,
        response: responses(
          { 200: Type.Array(Type.Ref(CheckResult), { description: 'Newest first.' }) },
          [...AUTH_ERRORS, 404, 422],
          { overrides: NOT_FOUND_TEXT },
        ),
      },
    },
    async (request): Promise<CheckResultView[]> => {
      const { limit } = request.query;
      return service.listResults(currentUser(request).id, request.params.id, limit);
    },
  );

  await app.register(bodylessActions, opts);
};
