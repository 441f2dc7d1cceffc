/**
 * The HTTP facade: a fastify app serving `/webapi` (spec §4–§5, CONTRACT §3–§4), the
 * operations endpoints and the operator route `/_admin/users`. A factory only: it never
 * listens, so tests `inject()` or `listen({ port: 0 })` it and `main` decides the address.
 *
 * Layout, on the root: `vigil-rate-limit` (the limiter, and X-RateLimit-* on every response),
 * `vigil-errors` (JSON errors, 404/405, counted by the limiter), `vigil-validation` (schema
 * failures in the error model), `vigil-openapi` (shared models, @fastify/swagger), then the
 * operations routes (not counted); one context for `/webapi` counted by the limiter, with the
 * public OpenAPI document and, in a child context, `vigil-auth` with the check, monitor,
 * account and webhook routes; one context for the admin route with its own token check and
 * error body (not counted).
 */
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { logger as moduleLogger, type Logger } from '../common/logger.js';
import type { UserAdmin, VigilService } from '../common/service.js';
import { authPlugin } from './plugins/auth.js';
import { errorsPlugin, frameworkErrorHandler } from './plugins/errors.js';
import { openapiPlugin, openapiRoute } from './plugins/openapi.js';
import { RequestLogController } from './plugins/request-log.js';
import { AJV_OPTIONS, validationPlugin } from './plugins/validation.js';
import { accountRoutes } from './routes/account.js';
import { adminRoutes } from './routes/admin.js';
import { checkRoutes } from './routes/checks.js';
import { monitorRoutes } from './routes/monitors.js';
import { webhookRoutes } from './routes/webhooks.js';
import { opsRoutes } from './routes/ops.js';
import { rateLimitPlugin } from './plugins/rate-limit.js';
import { apiRequests } from '../common/metrics.js';

/** Largest accepted request body, bytes (CONTRACT §4: larger → 413). */
export const BODY_LIMIT_BYTES = 64 * 1024;

/** Options of {@link buildApp}. */
export interface BuildAppOptions {
  /** The account-holder surface behind `/webapi`. */
  service: VigilService;
  /** The operator surface behind `POST /_admin/users`. */
  admin: UserAdmin;
  /** Secret of the `x-vigil-admin-token` header; an empty string disables the admin route. */
  adminToken: string;
  /** /webapi requests per minute per token (CONTRACT §4). @default 120 */
  rateLimitPerMinute?: number;
  /**
   * Failed authentications per client address per minute before every /webapi request from
   * that address is a 429 (issue 6). @default 30
   */
  maxAuthFailuresPerMinute?: number;
  /**
   * Logger for request lines and 5xx causes; tokens and query strings are never logged.
   * @default logger('facade') from common/logger
   */
  logger?: Logger;
}

/**
 * Builds the facade app, not listening. Call `await app.ready()` (or `listen`) before use and
 * `await app.close()` after; closing the app does not close the service.
 */
export function buildApp(opts: BuildAppOptions): FastifyInstance {
  const { service, admin, adminToken } = opts;
  const log: FastifyBaseLogger = opts.logger ?? moduleLogger('facade');
  const app = Fastify({
    loggerInstance: log,
    logController: new RequestLogController(),
    bodyLimit: BODY_LIMIT_BYTES,
    onProtoPoisoning: 'error',
    onConstructorPoisoning: 'error',
    return503OnClosing: true,
    frameworkErrors: frameworkErrorHandler,
    ajv: { customOptions: { ...AJV_OPTIONS } },
  });

  // JSON only: a text/plain body is refused with 415 instead of reaching a route as a string.
  app.removeContentTypeParser('text/plain');

  // First: its decorators and root onSend hook must exist before the other plugins use them.
  void app.register(rateLimitPlugin, { service, perMinute: opts.rateLimitPerMinute ?? 120 });
  void app.register(errorsPlugin);
  void app.register(validationPlugin);
  void app.register(openapiPlugin);
  app.addHook('onResponse', async (request, reply) => {
    apiRequests.inc({ route: request.routeOptions.url ?? 'unmatched', status: reply.statusCode });
  });
  void app.register(opsRoutes, { service });
  void app.register(async (webapi) => {
    // Every /webapi request is counted, before authentication (plugins/auth.ts runs in
    // preParsing), so refused and unauthenticated requests are counted too.
    webapi.addHook('onRequest', webapi.rateLimit());
    await webapi.register(openapiRoute);
    await webapi.register(async (authenticated) => {
      const authOptions =
        opts.maxAuthFailuresPerMinute === undefined
          ? { service }
          : { service, maxAuthFailuresPerMinute: opts.maxAuthFailuresPerMinute };
      await authenticated.register(authPlugin, authOptions);
      await authenticated.register(checkRoutes, { service });
      await authenticated.register(monitorRoutes, { service });
      await authenticated.register(accountRoutes, { service });
      await authenticated.register(webhookRoutes, { service });
    });
  });
  void app.register(adminRoutes, { admin, adminToken });
  return app;
}
