/**
 * The JSON error model of CONTRACT §4: every error leaves as `{"message": …}` (plus
 * `"errors": {field: [messages]}` for 422), never as HTML or a stack trace. VigilErrors keep
 * their status and message; fastify's own errors are translated; anything else is a 500
 * whose cause is logged and not returned.
 */
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { ERRORS, VigilError, type ErrorCode, type FieldErrors } from '../../common/errors.js';
import { namedPlugin } from './named-plugin.js';
import { requestFields } from './request-log.js';
import { BODY_MESSAGES, isValidationError, validationProblem } from './validation.js';

/** What an error becomes on the wire, before the body shape is chosen. */
export interface HttpProblem {
  /** HTTP status. */
  status: number;
  /** Stable code from the ERRORS table (CONTRACT §4, STYLE habit 3). */
  code: ErrorCode;
  /** Human-readable, safe to return. */
  message: string;
  /** Field-level messages (422 only). */
  fields?: FieldErrors;
  /** True when the error is Vigil's fault and its cause must be logged. */
  internal: boolean;
}

/** `/webapi` error body (CONTRACT §4). */
export interface ErrorBody {
  message: string;
  errors?: FieldErrors;
}

/** Content type of every facade response. */
export const JSON_TYPE = 'application/json; charset=utf-8';

/** Fastify error codes with a fixed translation. */
const FASTIFY_ERRORS: Readonly<Record<string, { code: ErrorCode; message?: string }>> = {
  FST_ERR_CTP_INVALID_JSON_BODY: {
    code: 'VIGIL_ERR_BAD_REQUEST',
    message: BODY_MESSAGES.invalidJson,
  },
  FST_ERR_CTP_EMPTY_JSON_BODY: { code: 'VIGIL_ERR_BAD_REQUEST', message: BODY_MESSAGES.emptyJson },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: {
    code: 'VIGIL_ERR_BAD_REQUEST',
    message: BODY_MESSAGES.contentLength,
  },
  FST_ERR_CTP_BODY_TOO_LARGE: { code: 'VIGIL_ERR_PAYLOAD_TOO_LARGE' },
  FST_ERR_CTP_INVALID_MEDIA_TYPE: { code: 'VIGIL_ERR_UNSUPPORTED_MEDIA_TYPE' },
  FST_ERR_CTP_INVALID_CONTENT_TYPE: { code: 'VIGIL_ERR_UNSUPPORTED_MEDIA_TYPE' },
  // Router errors (raised before any route or hook runs; see frameworkErrorHandler).
  FST_ERR_BAD_URL: { code: 'VIGIL_ERR_BAD_REQUEST', message: 'The request URL is malformed.' },
  // A path segment over the router's limit cannot be any id that exists.
  FST_ERR_MAX_PARAM_LENGTH: { code: 'VIGIL_ERR_ROUTE_NOT_FOUND' },
};

function isFastifyError(err: unknown): err is FastifyError {
  if (!(err instanceof Error)) return false;
  const code: unknown = (err as Error & { code?: unknown }).code;
  return typeof code === 'string' && code.startsWith('FST_');
}

/** The closest table code for a fastify client error with an unmapped status. */
function codeForStatus(status: number): ErrorCode {
  switch (status) {
    case 404:
      return 'VIGIL_ERR_ROUTE_NOT_FOUND';
    case 405:
      return 'VIGIL_ERR_METHOD_NOT_ALLOWED';
    case 413:
      return 'VIGIL_ERR_PAYLOAD_TOO_LARGE';
    case 415:
      return 'VIGIL_ERR_UNSUPPORTED_MEDIA_TYPE';
    default:
      return 'VIGIL_ERR_BAD_REQUEST';
  }
}

/** Translates any thrown value into what the client is told (CONTRACT §4). */
export function problemOf(err: unknown): HttpProblem {
  if (err instanceof VigilError) {
    const problem: HttpProblem = {
      status: err.status,
      code: err.code,
      message: err.message,
      internal: err.status >= 500,
    };
    if (err.fields) problem.fields = err.fields;
    return problem;
  }
  if (isFastifyError(err)) {
    const known = FASTIFY_ERRORS[err.code];
    if (known) {
      return {
        status: ERRORS[known.code].status,
        code: known.code,
        message: known.message ?? ERRORS[known.code].message,
        internal: false,
      };
    }
    const status = err.statusCode;
    // Other fastify client errors keep their status; their messages hold no secrets.
    if (status !== undefined && status >= 400 && status < 500) {
      return { status, code: codeForStatus(status), message: err.message, internal: false };
    }
  }
  return {
    status: ERRORS.VIGIL_ERR_INTERNAL.status,
    code: 'VIGIL_ERR_INTERNAL',
    message: ERRORS.VIGIL_ERR_INTERNAL.message,
    internal: true,
  };
}

/** Logs the cause of a 5xx; client errors are logged by the request line only. */
export function logProblem(problem: HttpProblem, err: unknown, request: FastifyRequest): void {
  if (problem.internal) {
    request.log.error({ ...requestFields(request), err, code: problem.code }, 'request failed');
  } else {
    request.log.debug({ ...requestFields(request), code: problem.code }, problem.message);
  }
}

/** The `/webapi` body for a problem. */
export function errorBody(problem: HttpProblem): ErrorBody {
  return problem.fields
    ? { message: problem.message, errors: problem.fields }
    : { message: problem.message };
}

async function sendError(
  err: unknown,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<FastifyReply> {
  // A request part that fails its route schema: 400, 404 or 422 (plugins/validation.ts).
  const problem = problemOf(isValidationError(err) ? validationProblem(err, request) : err);
  logProblem(problem, err, request);
  return reply.code(problem.status).type(JSON_TYPE).send(errorBody(problem));
}

/**
 * Fastify's `frameworkErrors` option: errors the router raises before any route context exists
 * (malformed percent-encoding, over-long path parameters) would otherwise bypass the error
 * handler and leave in fastify's own body shape. No hook runs for them either, so the rate
 * headers come from the `addRateLimitHeaders` decorator of plugins/rate-limit.ts.
 */
export function frameworkErrorHandler(
  err: FastifyError,
  request: FastifyRequest,
  reply: FastifyReply,
): void {
  const problem = problemOf(err);
  logProblem(problem, err, request);
  const send = (): void => {
    void reply.code(problem.status).type(JSON_TYPE).send(errorBody(problem));
  };
  // No hook runs for these replies, so the X-RateLimit-* headers (CONTRACT §4) are set here.
  const server = request.server;
  if (server.hasDecorator('addRateLimitHeaders')) {
    server.addRateLimitHeaders(request, reply).then(send, send);
  } else {
    send();
  }
}

/**
 * Error plugin `vigil-errors`: the root error handler and 404 handler (CONTRACT §4). Registered
 * on the root instance; every context inherits the handler unless it sets its own.
 */
export const errorsPlugin = namedPlugin('vigil-errors', async (app) => {
  app.setErrorHandler(sendError);
  // Every route's path as a pattern, so a known path with the wrong method is a 405 with
  // `Allow` (issue 6) rather than a 404.
  const routes: Array<{ pattern: RegExp; method: string }> = [];
  app.addHook('onRoute', (route) => {
    const pattern = new RegExp(
      `^${route.url.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/:[^/]+/g, '[^/]+')}/?$`,
    );
    for (const m of [route.method].flat()) routes.push({ pattern, method: m.toUpperCase() });
  });
  // Unknown routes spend the caller's rate budget like any /webapi request (CONTRACT §4), when
  // the limiter (plugins/rate-limit.ts) is registered before this plugin.
  const limiter = app.hasDecorator('rateLimit') ? app.rateLimit() : undefined;
  app.setNotFoundHandler(limiter ? { preHandler: limiter } : {}, async (request, reply) => {
    const path = request.url.split('?')[0] ?? '';
    const allowed = [...new Set(routes.filter((r) => r.pattern.test(path)).map((r) => r.method))];
    if (allowed.length > 0) {
      const { status, message } = ERRORS.VIGIL_ERR_METHOD_NOT_ALLOWED;
      return reply
        .code(status)
        .header('allow', allowed.join(', '))
        .type(JSON_TYPE)
        .send({ message });
    }
    const { status, message } = ERRORS.VIGIL_ERR_ROUTE_NOT_FOUND;
    return reply.code(status).type(JSON_TYPE).send({ message });
  });
});
