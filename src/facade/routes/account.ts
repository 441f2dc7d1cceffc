/**
 * Account routes (CONTRACT §3): `GET /webapi/account` and `PUT /webapi/account` with body
 * `{"webhook_url": string|null}`; both answer 200 with
 * `{"id","email","plan","webhook_url","api_enabled"}`. Registered inside the `vigil-auth` context.
 */
import { Type, type Static } from '@sinclair/typebox';
import type { FastifyPluginAsync } from 'fastify';
import type { AccountView } from '../../common/service.js';
import { currentUser } from '../plugins/auth.js';
import { Account, AUTH_ERRORS, BODY_ERRORS, Nullable, responses } from '../schemas.js';
import { objectBody } from '../plugins/validation.js';
import type { RouteOptions } from './input.js';

/** Body of `PUT /webapi/account` (CONTRACT §3). */
export const AccountInputBody = Type.Object(
  {
    webhook_url: Nullable(Type.String(), {
      description:
        'Where webhooks are POSTed: an http:// or https:// URL without credentials, or null ' +
        'for none. Required.',
      examples: ['https://hooks.example.com/vigil'],
    }),
  },
  {
    description: 'Unknown fields are ignored.',
    examples: [{ webhook_url: 'https://hooks.example.com/vigil' }],
  },
);

/** Route plugin for the account; see the file comment for the surface. */
export const accountRoutes: FastifyPluginAsync<RouteOptions> = async (app, { service }) => {
  app.get(
    '/webapi/account',
    {
      schema: {
        operationId: 'getAccount',
        tags: ['account'],
        summary: 'Get the account',
        response: responses({ 200: Type.Ref(Account) }, AUTH_ERRORS),
      },
    },
    async (request): Promise<AccountView> => {
      return service.getAccount(currentUser(request).id);
    },
  );

  app.put<{ Body: Static<typeof AccountInputBody> }>(
    '/webapi/account',
    {
      schema: {
        operationId: 'updateAccount',
        tags: ['account'],
        summary: 'Set the webhook URL',
        body: AccountInputBody,
        response: responses({ 200: Type.Ref(Account) }, [...AUTH_ERRORS, ...BODY_ERRORS]),
      },
    },
    async (request): Promise<AccountView> => {
      const input = objectBody(request.body);
      return service.updateAccount(currentUser(request).id, input);
    },
  );
};
