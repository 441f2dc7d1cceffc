/**
 * What the `/webapi` route plugins share: their options, and the body handling of the actions
 * that take no body. Request types are checked by the route schemas (plugins/validation.ts),
 * values by the service.
 */
import type { FastifyInstance } from 'fastify';
import type { VigilService } from '../../common/service.js';

/** Options of the `/webapi` route plugins. */
export interface RouteOptions extends Record<string, unknown> {
  service: VigilService;
}

/**
 * For body-less actions (`…/disable`, `…/enable`, `…/redeliver`, `DELETE`): clients send the
 * spec's recommended `Content-Type: application/json` with nothing after it, or stray bytes.
 * In the calling plugin's context any body (up to the body limit) is read and dropped, not
 * parsed.
 */
export function ignoreBodies(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, _body, done) => {
    done(null, undefined);
  });
}
