/**
 * Token authentication of `/webapi` (spec §5, CONTRACT §3–§4). The token is taken from, in
 * this order: `Authorization: Bearer <t>`, `Authentication: Bearer <t>` (or a bare token in
 * `Authentication`, as the spec's endpoint reference shows it), `?api_key=<t>`. Missing or
 * unknown → 401 `Unauthenticated.`; API deactivated → 403. The check runs in `onRequest`,
 * before the body is read, so an unauthenticated client cannot make the service parse anything.
 */
import type { FastifyRequest } from 'fastify';
import { VigilError } from '../../common/errors.js';
import type { VigilService } from '../../common/service.js';
import type { User } from '../../domain/check.js';
import { namedPlugin } from './named-plugin.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The authenticated account; set by the `vigil-auth` plugin, null outside `/webapi`. */
    user: User | null;
  }
}

/** Options of {@link authPlugin}. */
export interface AuthPluginOptions extends Record<string, unknown> {
  /** Failed authentications per client address per minute before 429. @default 30 */
  maxAuthFailuresPerMinute?: number;
  service: Pick<VigilService, 'authenticate'>;
}

const BEARER = /^Bearer[ \t]+(\S+)[ \t]*$/i;
const BARE = /^[ \t]*(\S+)[ \t]*$/;

function header(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  return typeof value === 'string' ? value : undefined;
}

/**
 * The token a request presents, or null. The first credential present decides: a request with
 * an `Authorization` header is judged by it alone, even if `api_key` is also given.
 */
export function presentedToken(request: FastifyRequest): string | null {
  const authorization = header(request, 'authorization');
  if (authorization !== undefined) return BEARER.exec(authorization)?.[1] ?? null;
  const authentication = header(request, 'authentication');
  if (authentication !== undefined) {
    return (BEARER.exec(authentication) ?? BARE.exec(authentication))?.[1] ?? null;
  }
  const query = request.query as Record<string, unknown> | undefined;
  const apiKey = query?.api_key;
  return typeof apiKey === 'string' && apiKey !== '' ? apiKey : null;
}

/** The authenticated user of a `/webapi` request; a route outside the auth context is a bug. */
export function currentUser(request: FastifyRequest): User {
  if (!request.user) throw new Error('currentUser() called on a route without vigil-auth');
  return request.user;
}

/**
 * Auth plugin `vigil-auth`: decorates `request.user` and rejects every request of the
 * registering context that lacks a valid token (401) or whose account has the API off (403).
 */
export const authPlugin = namedPlugin<AuthPluginOptions>('vigil-auth', async (app, opts) => {
  const { service } = opts;
  app.decorateRequest('user', null);
  // Failed authentications per client address in the current minute (issue 6): guessing
  // tokens gets a 429 long before it could matter. Entries are dropped as windows pass.
  const failures = new Map<string, { count: number; windowStart: number }>();
  const maxFailures = opts.maxAuthFailuresPerMinute ?? 30;
  // preParsing: after the rate limiter's onRequest hook (app.ts; so refused requests are
  // counted and carry X-RateLimit-*), still before the body is read.
  app.addHook('preParsing', async (request, reply, payload) => {
    const now = Date.now();
    let f = failures.get(request.ip);
    if (f && now - f.windowStart >= 60_000) {
      failures.delete(request.ip);
      f = undefined;
    }
    if (f && f.count >= maxFailures) {
      reply.header('retry-after', String(Math.ceil((f.windowStart + 60_000 - now) / 1000)));
      throw new VigilError(
        'VIGIL_ERR_RATE_LIMITED',
        'Too many failed authentication attempts from this address. Try again later.',
      );
    }
    const token = presentedToken(request);
    const user = token === null ? null : service.authenticate(token);
    if (!user) {
      if (failures.size > 100_000) failures.clear(); // bounded memory under a spray
      const entry = f ?? { count: 0, windowStart: now };
      entry.count++;
      failures.set(request.ip, entry);
      throw new VigilError('VIGIL_ERR_UNAUTHENTICATED');
    }
    if (!user.apiEnabled) throw new VigilError('VIGIL_ERR_API_DISABLED');
    request.user = user;
    return payload;
  });
});
