/**
 * Rate limits of /webapi (CONTRACT §4, issue 6), on @fastify/rate-limit: `perMinute`
 * requests per API token (requests with no or an unknown token count per client address),
 * 429 `{"message"}` with `Retry-After`, and `X-RateLimit-Limit` / `X-RateLimit-Remaining` on
 * every response. Registered in the /webapi context before authentication, so refused and
 * unauthenticated requests are counted and answered with the headers too.
 */
import rateLimit from '@fastify/rate-limit';
import { createHash } from 'node:crypto';
import { VigilError } from '../../common/errors.js';
import type { VigilService } from '../../common/service.js';
import { presentedToken } from './auth.js';
import { namedPlugin } from './named-plugin.js';

export interface RateLimitPluginOptions extends Record<string, unknown> {
  service: VigilService;
  /** Requests per minute per token. @default 120 (`VIGIL_RATE_LIMIT`) */
  perMinute: number;
}

export const rateLimitPlugin = namedPlugin<RateLimitPluginOptions>(
  'vigil-rate-limit',
  async (app, { service, perMinute }) => {
    await app.register(rateLimit, {
      global: true,
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
  },
);
