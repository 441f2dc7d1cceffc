/**
 * The `uptime` check (CONTRACT §5): GET the URL over fresh connections, follow up to 5
 * redirects, 30 s in total; up when the final status is 200–399. Runs inside a piscina worker,
 * many runs at once per thread. Never throws: a site being down is a result.
 */
import { STATUS_CODES } from 'node:http';
import { Agent, interceptors, request } from 'undici';
import type { CheckTask, CheckTaskResult } from './lib/task.js';
import { describeFailure, timeoutError, tooManyRedirectsError } from './lib/describe-error.js';
import { PhaseRecorder } from './lib/timing.js';

/** Most redirects followed before the run fails (CONTRACT §5). */
export const MAX_REDIRECTS = 5;

/** Total budget of a run when the task names none, ms (CONTRACT §5). */
export const DEFAULT_TIMEOUT_MS = 30_000;

/** Body bytes read before the body counts as done; the rest is not downloaded. */
export const MAX_BODY_BYTES = 1024 * 1024;

const REDIRECT_STATUSES = new Set([300, 301, 302, 303, 307, 308]);

/** `"<status> - <reason phrase>"` (CONTRACT §5), e.g. `"503 - Service Unavailable"`. */
export function statusError(status: number): string {
  return `${status} - ${STATUS_CODES[status] ?? 'Unknown Status'}`;
}

/** Run one uptime check. Resolves with the outcome in every case. */
export default async function runUptime(task: CheckTask): Promise<CheckTaskResult> {
  const startedAtMs = Date.now();
  const phases = new PhaseRecorder();
  const finish = (
    fields: Pick<CheckTaskResult, 'ok' | 'httpStatusCode' | 'error'>,
    redirects: number,
  ): CheckTaskResult => {
    // Microsecond precision is plenty and keeps the JSON short.
    const responseTimeMs = Math.round(phases.elapsed() * 1000) / 1000;
    return {
      ...fields,
      responseTimeMs,
      startedAtMs,
      detail: { timings: phases.result(responseTimeMs), redirects },
    };
  };

  let url: URL;
  try {
    url = new URL(task.url);
  } catch {
    return finish({ ok: false, httpStatusCode: 0, error: '0 - Invalid URL' }, 0);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    return finish(
      { ok: false, httpStatusCode: 0, error: `0 - Unsupported URL scheme (${url.protocol})` },
      0,
    );
  }

  const timeoutMs = task.timeoutMs > 0 ? task.timeoutMs : DEFAULT_TIMEOUT_MS;
  const signal = AbortSignal.timeout(timeoutMs);
  // A new Agent per run: no socket, DNS answer or TLS session is shared with an earlier run
  // (CONTRACT §5 "every run opens fresh connections"). localAddress must be an Agent (Client)
  // option: undici's connector overwrites a localAddress given in `connect` options.
  // undici's own timeouts sit past the run's deadline so that the AbortSignal decides.
  const agent = new Agent({
    ...(task.localAddress ? { localAddress: task.localAddress } : {}),
    connect: phases.connector(timeoutMs + 1000),
    headersTimeout: timeoutMs + 1000,
    bodyTimeout: timeoutMs + 1000,
    pipelining: 1,
  });
  // Without throwOnMaxRedirect the interceptor stops following after MAX_REDIRECTS hops and
  // hands over the next response; a redirect there means the chain was too long. (Its
  // throwOnMaxRedirect mode would also reject a chain of exactly MAX_REDIRECTS.)
  const dispatcher = agent.compose(interceptors.redirect({ maxRedirections: MAX_REDIRECTS }));

  let status = 0;
  let redirects = 0;
  try {
    const res = await request(url, {
      dispatcher,
      method: 'GET',
      signal,
      headers: { 'user-agent': 'Vigil/1.0', accept: '*/*' },
    });
    phases.markHeaders();
    status = res.statusCode;
    redirects = countRedirects(res.context);
    await drain(res.body, MAX_BODY_BYTES);

    if (REDIRECT_STATUSES.has(status) && res.headers.location !== undefined) {
      return finish(
        { ok: false, httpStatusCode: 0, error: tooManyRedirectsError(MAX_REDIRECTS) },
        redirects,
      );
    }
    const ok = status >= 200 && status <= 399;
    return finish({ ok, httpStatusCode: status, error: ok ? '' : statusError(status) }, redirects);
  } catch (err) {
    // A failure after the headers (reset or deadline mid-body) is still a run that did not
    // complete, so it reports like one that got no answer: code 0 and a "0 - …" error.
    const error = signal.aborted ? timeoutError(timeoutMs) : describeFailure(err, timeoutMs, false);
    return finish({ ok: false, httpStatusCode: 0, error }, redirects);
  } finally {
    await agent.destroy().catch(() => undefined);
  }
}

/** Read and discard up to `limit` bytes of a body; more than that counts as done. */
async function drain(body: AsyncIterable<Buffer>, limit: number): Promise<void> {
  let bytes = 0;
  for await (const chunk of body) {
    bytes += chunk.length;
    // Leaving the loop destroys the stream; the Agent is thrown away anyway.
    if (bytes >= limit) break;
  }
}

/** Redirects followed, from the history the redirect interceptor keeps in the context. */
function countRedirects(context: unknown): number {
  const history = (context as { history?: unknown } | null | undefined)?.history;
  return Array.isArray(history) && history.length > 0 ? history.length - 1 : 0;
}
