// A webhook receiver for Vigil using only node:http and node:crypto.
// Usage: VIGIL_TOKEN=<your api token> node docs/receiver.mjs [port]
// Prints each webhook, checks its signature (spec §6: HMAC-SHA1 of the raw body keyed with
// the API token, lowercase hex, in X-Service-Signature) and answers 200 only when it matches.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer } from 'node:http';

const port = Number(process.argv[2] ?? 9000);
const token = process.env.VIGIL_TOKEN ?? '';

createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const raw = Buffer.concat(chunks); // verify the bytes as received, before JSON.parse
    const expected = createHmac('sha1', token).update(raw).digest();
    const given = Buffer.from(String(req.headers['x-service-signature'] ?? ''), 'hex');
    const ok = given.length === expected.length && timingSafeEqual(given, expected);
    process.stdout.write(
      `${new Date().toISOString()} try ${req.headers['x-service-current-try']} ` +
        `signature ${ok ? 'ok' : 'BAD'}\n${raw.toString('utf8')}\n\n`,
    );
    res.statusCode = ok ? 200 : 401;
    res.end();
  });
}).listen(port, '127.0.0.1', () =>
  process.stdout.write(`receiving on http://127.0.0.1:${port}/hook\n`),
);
