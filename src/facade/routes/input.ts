/**
 * Edge parsing shared by the `/webapi` routes: path ids and JSON-object bodies (CONTRACT §4),
 * and the routes' common options.
 * Value validation is the service's job; this only rejects what is not an id or an object.
 */
import type { FastifyInstance } from 'fastify';
import { VigilError, type ErrorCode } from '../../common/errors.js';
import type { VigilService } from '../../common/service.js';
import { BODY_MESSAGES } from '../plugins/errors.js';

/** Options of the `/webapi` route plugins. */
export interface RouteOptions extends Record<string, unknown> {
  service: VigilService;
}

/** A positive integer in canonical decimal, no sign, no leading zero, within 2^53. */
const ID = /^[1-9][0-9]{0,15}$/;

/**
 * The numeric value of a path id. Anything else (`abc`, `0`, `-1`, `1.5`, `01`) is a 404 with
 * `notFound`'s message: a malformed id names no resource (CONTRACT §4).
 */
export function parseId(raw: string | undefined, notFound: ErrorCode): number {
  if (raw === undefined || !ID.test(raw)) throw new VigilError(notFound);
  const id = Number(raw);
  if (!Number.isSafeInteger(id)) throw new VigilError(notFound);
  return id;
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  switch (typeof value) {
    case 'string':
      return 'a string';
    case 'number':
      return 'a number';
    case 'boolean':
      return 'a boolean';
    default:
      return typeof value;
  }
}

/**
 * The request body as a JSON object, else a 400 naming what came instead (CONTRACT §4).
 * `undefined` means no body was sent at all.
 */
export function objectBody(body: unknown): Record<string, unknown> {
  if (body === undefined) {
    throw new VigilError('VIGIL_ERR_BAD_REQUEST', BODY_MESSAGES.emptyJson);
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new VigilError(
      'VIGIL_ERR_BAD_REQUEST',
      `The request body must be a JSON object, not ${describe(body)}.`,
    );
  }
  return body as Record<string, unknown>;
}

/** Path parameters of the `/:id` routes. */
export interface IdParams {
  id: string;
}

/**
 * For body-less actions (`…/disable`, `…/enable`, `…/redeliver`): clients send the spec's
 * recommended `Content-Type: application/json` with nothing after it, or stray bytes. In the
 * calling plugin's context any body (up to the body limit) is read and dropped, not parsed.
 */
export function ignoreBodies(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, _body, done) => {
    done(null, undefined);
  });
}
