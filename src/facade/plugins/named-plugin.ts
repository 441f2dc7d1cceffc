/**
 * Names a fastify plugin and, unless asked otherwise, lets its hooks, decorators and handlers
 * apply to the context that registers it — what the `fastify-plugin` package does, without the
 * dependency (fastify reads these two well-known symbols itself).
 */
import type { FastifyPluginAsync } from 'fastify';

/** Options of {@link namedPlugin}. */
export interface NamedPluginOptions {
  /**
   * Keep the plugin in its own encapsulated context (hooks and handlers stay inside).
   * @default false
   */
  encapsulate?: boolean;
}

/**
 * Marks `plugin` with `name` (shown in fastify's plugin tree and errors) and, unless
 * `encapsulate` is set, with skip-override so that it decorates its parent context.
 */
export function namedPlugin<Options extends Record<string, unknown>>(
  name: string,
  plugin: FastifyPluginAsync<Options>,
  opts: NamedPluginOptions = {},
): FastifyPluginAsync<Options> {
  const marked = plugin as FastifyPluginAsync<Options> & Record<symbol, unknown>;
  marked[Symbol.for('fastify.display-name')] = name;
  if (opts.encapsulate !== true) marked[Symbol.for('skip-override')] = true;
  return marked;
}
