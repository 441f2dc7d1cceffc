/**
 * Request logging without secrets: one line per request with method, path (never the query
 * string, which may carry `api_key`), status and response time. Fastify's own request log
 * lines serialize the raw URL and headers, so every hook that would write them is replaced.
 */
import { LogController, type FastifyReply, type FastifyRequest } from 'fastify';

/** The path of a request URL without its query string or fragment. */
export function pathOf(url: string): string {
  const cut = url.search(/[?#]/);
  return cut === -1 ? url : url.slice(0, cut);
}

/** Fields every facade log line about a request carries; never the query or headers. */
export function requestFields(request: FastifyRequest): Record<string, unknown> {
  const fields: Record<string, unknown> = {
    method: request.method,
    url: pathOf(request.url),
  };
  const user = (request as { user?: { id: number } | null }).user;
  if (user) fields.userId = user.id;
  return fields;
}

/**
 * Fastify log controller for the facade. Lines: `request completed` (info) with `method`,
 * `url` (path only), `userId` when authenticated, `statusCode`, `responseTimeMs`.
 */
export class RequestLogController extends LogController {
  constructor() {
    super({ disableRequestLogging: false });
  }

  /** The completion line says everything; an extra line per request is noise. */
  override incomingRequest(): void {}

  override requestCompleted(
    error: Error | null | undefined,
    request: FastifyRequest,
    reply: FastifyReply,
  ): void {
    const fields = {
      ...requestFields(request),
      statusCode: reply.statusCode,
      responseTimeMs: Math.round(reply.elapsedTime * 100) / 100,
    };
    if (error) reply.log.error({ ...fields, err: error }, 'request errored');
    else reply.log.info(fields, 'request completed');
  }

  /** The 404 reply is logged by `requestCompleted`; fastify's line would carry the query. */
  override routeNotFound(): void {}

  override defaultErrorLog(error: Error, request: FastifyRequest, reply: FastifyReply): void {
    const fields = { ...requestFields(request), statusCode: reply.statusCode, err: error };
    if (reply.statusCode >= 500) reply.log.error(fields, 'request failed');
    else reply.log.info(fields, error.message);
  }

  override writeHeadError(error: Error, request: FastifyRequest, reply: FastifyReply): void {
    reply.log.warn({ ...requestFields(request), err: error }, 'writing the response head failed');
  }
}
