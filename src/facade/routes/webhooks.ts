/**
 * Webhook routes (issue 4): `GET /webapi/webhooks?status=pending|delivered|failed&page=&per_page=`
 * lists the user's webhook events newest first with their attempts;
 * `POST /webapi/webhooks/{id}/redeliver` sends a delivered or failed one again (409 while it
 * is still pending). Registered inside the `vigil-auth` context.
 */
import type { FastifyInstance, FastifyPluginAsync } from 'fastify';
import type { WebhookPage, WebhookView } from '../../common/service.js';
import { currentUser } from '../plugins/auth.js';
import { ignoreBodies, parseId, type IdParams, type RouteOptions } from './input.js';

async function redeliverRoute(app: FastifyInstance, { service }: RouteOptions): Promise<void> {
  ignoreBodies(app);
  app.post<{ Params: IdParams }>(
    '/webapi/webhooks/:id/redeliver',
    async (request): Promise<WebhookView> => {
      const id = parseId(request.params.id, 'VIGIL_ERR_WEBHOOK_NOT_FOUND');
      return service.redeliverWebhook(currentUser(request).id, id);
    },
  );
}

/** Route plugin for webhooks; see the file comment for the surface. */
export const webhookRoutes: FastifyPluginAsync<RouteOptions> = async (app, opts) => {
  const { service } = opts;
  app.get<{ Querystring: Record<string, unknown> }>(
    '/webapi/webhooks',
    async (request): Promise<WebhookPage> => {
      const { status, page, per_page } = request.query;
      return service.listWebhooks(currentUser(request).id, { status, page, per_page });
    },
  );
  await app.register(redeliverRoute, opts);
};
