/**
 * Rate limits (CONTRACT §4, issue 6), on @fastify/rate-limit: `perMinute` requests per API
 * token (requests with no or an unknown token count per client address), 429 `{"message"}`
 * with `Retry-After`, and `X-RateLimit-Limit` / `X-RateLimit-Remaining` on every response.
 *
 * Registered on the root instance with `global: false`, so it counts nothing by itself: the
 * /webapi context adds {@link FastifyInstance.rateLimit} as an `onRequest` hook (before
 * authentication, so refused and unauthenticated requests are counted and carry the headers)
 * and the not-found handler (404/405, plugins/errors.ts) runs it as a `preHandler`. Every other
 * response — the operations routes, the admin route, and errors raised before the limiter runs
 * (router errors, 400/413/415 of unknown routes) — gets the headers from a root `onSend` hook
 * that reads the caller's budget without spending it.
 */
import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { createHash } from 'node:crypto';
import { VigilError } from '../../common/errors.js';
import type { VigilService } from '../../common/service.js';
import { presentedToken } from './auth.js';
import { namedPlugin } from './named-plugin.js';

declare module 'fastify' {
  interface FastifyInstance {
    /**
     * Sets `X-RateLimit-Limit` / `X-RateLimit-Remaining` on `reply` from the caller's budget
     * without spending it, unless already set. Decorated by `vigil-rate-limit`.
     */
    addRateLimitHeaders(request: FastifyRequest, reply: FastifyReply): Promise<void>;
  }
}

const LIMIT = 'x-ratelimit-limit';
const REMAINING = 'x-ratelimit-remaining';

export interface RateLimitPluginOptions extends Record<string, unknown> {
  service: VigilService;
  /** Requests per minute per token. @default 120 (`VIGIL_RATE_LIMIT`) */
  perMinute: number;
}

export const rateLimitPlugin = namedPlugin<RateLimitPluginOptions>(
  'vigil-rate-limit',
  async (app, { service, perMinute }) => {
    await app.register(rateLimit, {
      global: false,
      max: perMinute,
      timeWindow: 60_000,
      keyGenerator: (request) => {
        const token = presentedToken(request);
        if (token !== null && service.authenticate(token)) {
          // Keyed by a hash so the limiter's store never holds the token itself.
          return `token:${createHash('sha256').update(token).digest('base64url')}`;
        }
        return `ip:${request.ip}`;
      },
      errorResponseBuilder: (_request, context) =>
        new VigilError(
          'VIGIL_ERR_RATE_LIMITED',
          `Too many requests: at most ${context.max} per minute. Retry in ${Math.ceil(context.ttl / 1000)} s.`,
        ),
      addHeadersOnExceeding: {
        'x-ratelimit-limit': true,
        'x-ratelimit-remaining': true,
        'x-ratelimit-reset': true,
      },
      addHeaders: {
        'x-ratelimit-limit': true,
        'x-ratelimit-remaining': true,
        'x-ratelimit-reset': true,
        'retry-after': true,
      },
    });
    // Reads the shared per-token / per-address budget; `{ increment: false }` never spends it.
    const peek = app.createRateLimit();
    const addHeaders = (request: FastifyRequest, reply: FastifyReply): Promise<void> =>
      addMissingHeaders(request, reply, peek, perMinute);
    app.addHook('onSend', async (request, reply, payload) => {
      await addHeaders(request, reply);
      return payload;
    });
    // For fastify's frameworkErrors replies (plugins/errors.ts), which run no hooks.
    app.decorate('addRateLimitHeaders', addHeaders);
  },
);

type Peek = ReturnType<FastifyInstance['createRateLimit']>;

/**
 * Sets `X-RateLimit-Limit` / `X-RateLimit-Remaining` on a reply the limiter did not see, from
 * the caller's current budget. If that cannot be read, remaining is 0: never more than is left.
 */
async function addMissingHeaders(
  request: FastifyRequest,
  reply: FastifyReply,
  peek: Peek,
  perMinute: number,
): Promise<void> {
  if (reply.hasHeader(LIMIT) && reply.hasHeader(REMAINING)) return;
  let limit = perMinute;
  let remaining = 0;
  try {
    const state = await peek(request, { increment: false });
    if (!state.isAllowed) {
      limit = state.max;
      remaining = state.remaining;
    }
  } catch {
    // keep the conservative 0
  }
  reply.header(LIMIT, limit);
  reply.header(REMAINING, remaining);
}
