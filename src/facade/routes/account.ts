/**
 * Account routes (CONTRACT §3): `GET /webapi/account` and `PUT /webapi/account` with body
 * `{"webhook_url": string|null}`; both answer 200 with
 * `{"id","email","plan","webhook_url","api_enabled"}`. Registered inside the `vigil-auth` context.
 */
import type { FastifyPluginAsync } from 'fastify';
import type { AccountView } from '../../common/service.js';
import { currentUser } from '../plugins/auth.js';
import { objectBody, type RouteOptions } from './input.js';

/** Route plugin for the account; see the file comment for the surface. */
export const accountRoutes: FastifyPluginAsync<RouteOptions> = async (app, { service }) => {
  app.get('/webapi/account', async (request): Promise<AccountView> => {
    return service.getAccount(currentUser(request).id);
  });

  app.put('/webapi/account', async (request): Promise<AccountView> => {
    const input = objectBody(request.body);
    return service.updateAccount(currentUser(request).id, input);
  });
};
