/**
 * One pino logger for the process, a child per module (`module` field). Logs go to stderr so
 * that stdout stays clean for command output (`vigil users …` prints JSON there).
 */
import { pino, type Logger } from 'pino';

export type { Logger };

let root: Logger | null = null;

/** The process-wide logger; level from `VIGIL_LOG_LEVEL` (default `info`). */
export function rootLogger(): Logger {
  root ??= pino(
    {
      level: process.env.VIGIL_LOG_LEVEL ?? 'info',
      base: { pid: process.pid },
      redact: ['token', 'apiToken', 'api_token', 'req.headers.authorization'],
    },
    pino.destination({ fd: 2, sync: false }),
  );
  return root;
}

/** A child logger with a stable module name, e.g. `logger('scheduler')`. */
export function logger(module: string, bindings: Record<string, unknown> = {}): Logger {
  return rootLogger().child({ module, ...bindings });
}
