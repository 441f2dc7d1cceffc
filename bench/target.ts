/**
 * A bench target in its own process: an HTTP server on 127.0.0.1 answering 200 to every path
 * (or 503 for paths under /down/). Prints its port as one JSON line and runs until killed.
 */
import { createServer } from 'node:http';

const server = createServer((req, res) => {
  res.statusCode = req.url?.startsWith('/down/') ? 503 : 200;
  res.end('ok');
});
server.keepAliveTimeout = 1000;
server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  process.stdout.write(
    `${JSON.stringify({ port: typeof address === 'object' && address ? address.port : 0 })}\n`,
  );
});
