/**
 * A bench target fleet in its own process: HTTP servers on 127.0.0.1 answering 200 to every
 * path (or 503 for paths under /down/). Prints its ports as one JSON line
 * (`{"port": first, "ports": [...]}`) and runs until killed.
 *
 * argv (all optional): `--ports N` servers on N free ports (default 1); `--latency-ms MS`
 * delay before each answer (default 0); `--fail-ratio R` share of other paths answered 503,
 * chosen by a hash of the path so that a given site is stably up or down (default 0).
 */
import { createServer, type Server } from 'node:http';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: {
    ports: { type: 'string', default: '1' },
    'latency-ms': { type: 'string', default: '0' },
    'fail-ratio': { type: 'string', default: '0' },
  },
});
const ports = Math.min(64, Math.max(1, Number(values.ports) || 1));
const latencyMs = Math.max(0, Number(values['latency-ms']) || 0);
const failRatio = Math.min(1, Math.max(0, Number(values['fail-ratio']) || 0));

/** FNV-1a of the path, mapped to [0, 1). */
function pathFraction(path: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < path.length; i++) {
    h ^= path.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h / 2 ** 32;
}

function statusFor(url: string): number {
  if (url.startsWith('/down/')) return 503;
  if (failRatio > 0 && pathFraction(url) < failRatio) return 503;
  return 200;
}

function listen(): Promise<number> {
  const server: Server = createServer((req, res) => {
    const answer = (): void => {
      res.statusCode = statusFor(req.url ?? '/');
      res.end('ok');
    };
    if (latencyMs > 0) setTimeout(answer, latencyMs);
    else answer();
  });
  server.keepAliveTimeout = 1000;
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      resolve(typeof address === 'object' && address ? address.port : 0);
    });
  });
}

const list: number[] = [];
for (let i = 0; i < ports; i++) list.push(await listen());
process.stdout.write(`${JSON.stringify({ port: list[0], ports: list })}\n`);
