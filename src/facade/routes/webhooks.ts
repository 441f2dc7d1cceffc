/**
 * Webhook routes (issue 4): `GET /webapi/webhooks?status=pending|delivered|failed&page=&per_page=`
 * lists the user's webhook events newest first with their attempts;
 * `POST /webapi/webhooks/{id}/redeliver` sends a delivered or failed one again (409 while it
 * is still pending). Registered inside the `vigil-auth` context.
 */
import { Type, type Static } from '@sinclair/typebox';
import type { FastifyInstance, FastifyPluginAsync } from 'fastify';
import type { WebhookPage as WebhookPageView, WebhookView } from '../../common/service.js';
import { currentUser } from '../plugins/auth.js';
import {
  AUTH_ERRORS,
  BODYLESS_ERRORS,
  BODYLESS_TEXT,
  IdParams,
  StringEnum,
  Webhook,
  WebhookPage,
  responses,
} from '../schemas.js';
import { ignoreBodies, type RouteOptions } from './input.js';

/** Query of `GET /webapi/webhooks` (issue 4). */
export const WebhookQuery = Type.Object({
  status: Type.Optional(
    StringEnum(['pending', 'delivered', 'failed'], { description: 'Only webhooks in this state.' }),
  ),
  page: Type.Optional(
    Type.Integer({ minimum: 1, maximum: 1_000_000, default: 1, description: 'Page number.' }),
  ),
  per_page: Type.Optional(
    Type.Integer({ minimum: 1, maximum: 100, default: 50, description: 'Webhooks per page.' }),
  ),
});

async function redeliverRoute(app: FastifyInstance, { service }: RouteOptions): Promise<void> {
  ignoreBodies(app);
  app.post<{ Params: IdParams }>(
    '/webapi/webhooks/:id/redeliver',
    {
      config: { notFound: 'VIGIL_ERR_WEBHOOK_NOT_FOUND' },
      schema: {
        operationId: 'redeliverWebhook',
        tags: ['webhooks'],
        summary: 'Send a webhook again',
        description:
          'Sends a delivered or failed webhook again: a new chain of tries under the same ' +
          '`X-Service-Parent-Webhook`, the same bytes and signature. Takes no body.',
        params: IdParams,
        response: responses(
          { 200: { ...Type.Ref(Webhook), description: 'The webhook, pending again.' } },
          [...AUTH_ERRORS, ...BODYLESS_ERRORS, 404, 409],
          {
            overrides: {
              ...BODYLESS_TEXT,
              404: '`{"message":"Webhook not found."}`: no such webhook for this token.',
              409: '`{"message":"The webhook is still being delivered."}`',
            },
          },
        ),
      },
    },
    async (request): Promise<WebhookView> => {
      return service.redeliverWebhook(currentUser(request).id, request.params.id);
    },
  );
}

/** Route plugin for webhooks; see the file comment for the surface. */
export const webhookRoutes: FastifyPluginAsync<RouteOptions> = async (app, opts) => {
  const { service } = opts;
  app.get<{ Querystring: Static<typeof WebhookQuery> }>(
    '/webapi/webhooks',
    {
      schema: {
        operationId: 'listWebhooks',
        tags: ['webhooks'],
        summary: 'List webhooks',
        description: 'The account’s webhook events, newest first, with every try.',
        querystring: WebhookQuery,
        response: responses({ 200: Type.Ref(WebhookPage) }, [...AUTH_ERRORS, 422]),
      },
    },
    async (request): Promise<WebhookPageView> => {
      const { status, page, per_page } = request.query;
      return service.listWebhooks(currentUser(request).id, { status, page, per_page });
    },
  );
  await app.register(redeliverRoute, opts);
};
