/**
 * The JSON error model (CONTRACT §4) over real HTTP and `inject()` against the real
 * coordinator: 400 for bodies that are not JSON objects, 413 over 64 KiB, 415 for non-JSON,
 * 404 for unknown routes, 500 without a stack trace, and the bodyless disable/enable routes.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { pino } from 'pino';
import type { MonitorView, UserView } from '../../src/common/service.js';
import { Coordinator } from '../../src/coordinator/coordinator.js';
import { BODY_LIMIT_BYTES, buildApp } from '../../src/facade/app.js';

interface Reply {
  status: number;
  body: Record<string, unknown>;
  contentType: string | undefined;
  headers: import('node:http').IncomingHttpHeaders;
  raw: string;
}

const silent = pino({ level: 'silent' });

let dir: string;
let coordinator: Coordinator;
let app: ReturnType<typeof buildApp>;
let port: number;
let user: UserView;
let monitor: MonitorView;
let checkId: number;

/**
 * A raw HTTP request: exact headers, exact body bytes (fetch would add a content type to a
 * string body, and cannot send a body without one).
 */
function raw(
  method: string,
  path: string,
  headers: Record<string, string | number>,
  body?: string | Buffer,
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, method, path, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        try {
          resolve({
            status: res.statusCode ?? 0,
            body: JSON.parse(text) as Record<string, unknown>,
            contentType: res.headers['content-type'],
            headers: res.headers,
            raw: text,
          });
        } catch (err) {
          reject(new Error(`not JSON (${res.statusCode}): ${text}`, { cause: err }));
        }
      });
    });
    req.on('error', reject);
    if (body !== undefined) req.write(body);
    req.end();
  });
}

function auth(extra: Record<string, string | number> = {}): Record<string, string | number> {
  return { authorization: `Bearer ${user.api_token}`, ...extra };
}

const JSON_CT = { 'content-type': 'application/json' };

function assertBadRequest(res: Reply, what: string): void {
  assert.equal(res.status, 400, what);
  assert.match(res.contentType ?? '', /^application\/json/);
  assert.equal(typeof res.body.message, 'string', what);
  assert.deepEqual(Object.keys(res.body), ['message'], what);
}

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'vigil-facade-errors-'));
  coordinator = await Coordinator.open({ dataDir: dir, logger: silent });
  app = buildApp({
    service: coordinator,
    admin: coordinator,
    adminToken: 'admin-secret',
    logger: silent,
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  port = (app.server.address() as AddressInfo).port;
  user = await coordinator.createUser({
    email: 'grace@example.test',
    plan: 'free',
    apiEnabled: true,
    webhookUrl: null,
  });
  monitor = await coordinator.createMonitor(user.id, { url: 'https://errors.example.test/' });
  checkId = monitor.checks[0]!.id;
});

after(async () => {
  await app?.close();
  await coordinator?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('400: the body must be a JSON object', () => {
  it('invalid JSON', async () => {
    const res = await raw('PUT', `/webapi/checks/${checkId}`, auth(JSON_CT), '{"interval": 300,');
    assertBadRequest(res, 'invalid JSON');
    assert.equal(res.body.message, 'The request body is not valid JSON.');
  });

  it('a JSON array, null, a string, a number', async () => {
    for (const body of ['[]', '[{"interval": 300}]', 'null', '"interval"', '300', 'true']) {
      const res = await raw('PUT', `/webapi/checks/${checkId}`, auth(JSON_CT), body);
      assertBadRequest(res, body);
      assert.match(String(res.body.message), /must be a JSON object/);
    }
    const array = await raw('PUT', `/webapi/checks/${checkId}`, auth(JSON_CT), '[]');
    assert.equal(array.body.message, 'The request body must be a JSON object, not an array.');
  });

  it('the same on POST /webapi/monitors and PUT /webapi/account', async () => {
    assertBadRequest(
      await raw('POST', '/webapi/monitors', auth(JSON_CT), '["https://x.test/"]'),
      'monitors',
    );
    assertBadRequest(await raw('POST', '/webapi/monitors', auth(JSON_CT), '{'), 'monitors invalid');
    assertBadRequest(
      await raw('PUT', '/webapi/account', auth(JSON_CT), '"https://x.test/"'),
      'account',
    );
  });

  it('an empty body where one is required, with and without a content type', async () => {
    const empty = await raw(
      'PUT',
      `/webapi/checks/${checkId}`,
      auth({ ...JSON_CT, 'content-length': 0 }),
      '',
    );
    assertBadRequest(empty, 'empty JSON body');
    assert.match(String(empty.body.message), /empty/);
    const none = await raw('PUT', `/webapi/checks/${checkId}`, auth({ 'content-length': 0 }));
    assertBadRequest(none, 'no body at all');
    const post = await raw('POST', '/webapi/monitors', auth({ 'content-length': 0 }));
    assertBadRequest(post, 'no monitor body');
  });

  it('a prototype-poisoning body is refused', async () => {
    const res = await raw(
      'PUT',
      `/webapi/checks/${checkId}`,
      auth(JSON_CT),
      '{"interval": 300, "__proto__": {"admin": true}}',
    );
    assertBadRequest(res, '__proto__');
  });

  it('a charset parameter on the content type is fine', async () => {
    const res = await raw(
      'PUT',
      `/webapi/checks/${checkId}`,
      auth({ 'content-type': 'application/json; charset=utf-8' }),
      '{"interval": 300}',
    );
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, []);
  });
});

describe('413 and 415', () => {
  it('a body over 64 KiB is a 413 with a JSON message (real socket)', async () => {
    const big = JSON.stringify({ interval: 300, pad: 'x'.repeat(BODY_LIMIT_BYTES) });
    assert.ok(Buffer.byteLength(big) > 64 * 1024);
    const res = await raw('PUT', `/webapi/checks/${checkId}`, auth(JSON_CT), big);
    assert.equal(res.status, 413);
    assert.equal(typeof res.body.message, 'string');
    assert.deepEqual(Object.keys(res.body), ['message']);
  });

  it('a body over 64 KiB is a 413 on POST /webapi/monitors (inject)', async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/webapi/monitors',
      headers: auth(JSON_CT) as Record<string, string>,
      payload: JSON.stringify({ url: 'https://big.example.test/', alias: 'a'.repeat(70_000) }),
    });
    assert.equal(res.statusCode, 413);
    assert.equal(typeof (res.json() as { message: unknown }).message, 'string');
  });

  it('a body just under the limit is parsed', async () => {
    const pad = 'x'.repeat(BODY_LIMIT_BYTES - 100);
    const res = await raw(
      'PUT',
      `/webapi/checks/${checkId}`,
      auth(JSON_CT),
      JSON.stringify({ interval: 300, pad }),
    );
    assert.equal(res.status, 200);
  });

  it('a text/plain or form body is a 415', async () => {
    for (const ct of ['text/plain', 'application/x-www-form-urlencoded', 'application/xml']) {
      const res = await raw(
        'PUT',
        `/webapi/checks/${checkId}`,
        auth({ 'content-type': ct }),
        'interval=300',
      );
      assert.equal(res.status, 415, ct);
      assert.equal(typeof res.body.message, 'string');
    }
  });
});

describe('404 for unknown routes', () => {
  it('unknown paths answer JSON {"message":"Not found."}', async () => {
    for (const [method, path] of [
      ['GET', '/'],
      ['GET', '/nope'],
      ['GET', '/webapi/nope'],
      ['GET', '/webapi/checks'],
    ] as const) {
      const res = await raw(method, path, auth());
      assert.equal(res.status, 404, `${method} ${path}`);
      assert.deepEqual(res.body, { message: 'Not found.' });
      assert.match(res.contentType ?? '', /^application\/json/);
    }
  });

  it('a known path with the wrong method answers 405 JSON with Allow', async () => {
    for (const [method, path, allow] of [
      ['DELETE', '/webapi/checks/1', 'GET, HEAD, PUT'],
      ['GET', '/webapi/checks/1/disable', 'POST'],
      ['PATCH', '/webapi/monitors/1', 'GET, HEAD, DELETE'],
      ['POST', '/webapi/account', 'GET, HEAD, PUT'],
    ] as const) {
      const res = await raw(method, path, auth());
      assert.equal(res.status, 405, `${method} ${path}`);
      assert.deepEqual(res.body, { message: 'Method not allowed.' });
      assert.match(res.contentType ?? '', /^application\/json/);
      assert.deepEqual(
        String(res.headers.allow ?? '')
          .split(', ')
          .sort(),
        allow.split(', ').sort(),
        `${method} ${path}`,
      );
    }
  });
});

describe('router-level errors are JSON too', () => {
  it('a malformed percent-encoding is a 400', async () => {
    const res = await raw('GET', '/webapi/checks/%E0%A4%A', auth());
    assert.equal(res.status, 400);
    assert.deepEqual(res.body, { message: 'The request URL is malformed.' });
  });

  it('an id longer than the router allows is a 404', async () => {
    const res = await raw('GET', `/webapi/checks/${'1'.repeat(300)}`, auth());
    assert.equal(res.status, 404);
    assert.deepEqual(res.body, { message: 'Not found.' });
  });
});

describe('GET with the spec’s recommended headers', () => {
  it('Accept and Content-Type: application/json on a GET without a body (spec §4)', async () => {
    const res = await raw(
      'GET',
      '/webapi/monitors',
      auth({ accept: 'application/json', 'content-type': 'application/json' }),
    );
    assert.equal(res.status, 200);
    assert.ok(Array.isArray(res.body));
  });
});

describe('disable / enable take no body', () => {
  const path = (action: string): string => `/webapi/checks/${checkId}/${action}`;

  it('Content-Type: application/json with an empty body', async () => {
    for (const action of ['disable', 'enable']) {
      const res = await raw('POST', path(action), auth({ ...JSON_CT, 'content-length': 0 }), '');
      assert.equal(res.status, 200, action);
      assert.deepEqual(res.body, []);
    }
  });

  it('no content type and no body', async () => {
    for (const action of ['disable', 'enable']) {
      const res = await raw('POST', path(action), auth());
      assert.equal(res.status, 200, action);
      assert.deepEqual(res.body, []);
    }
  });

  it('any body is ignored: JSON, broken JSON, text', async () => {
    const cases: [Record<string, string>, string][] = [
      [JSON_CT, '{"enabled": false}'],
      [JSON_CT, '{not json'],
      [{ 'content-type': 'text/plain' }, 'please'],
    ];
    for (const [headers, body] of cases) {
      const res = await raw('POST', path('disable'), auth(headers), body);
      assert.equal(res.status, 200, body);
      assert.deepEqual(res.body, []);
    }
    const view = coordinator.getCheck(user.id, checkId);
    assert.equal(view.enabled, false);
    await raw('POST', path('enable'), auth(JSON_CT), '{"enabled": false}');
    assert.equal(coordinator.getCheck(user.id, checkId).enabled, true);
  });

  it('still authenticated, and the body limit still holds', async () => {
    const unauth = await raw('POST', path('disable'), JSON_CT, '');
    assert.equal(unauth.status, 401);
    const big = await raw('POST', path('disable'), auth(JSON_CT), 'x'.repeat(BODY_LIMIT_BYTES + 1));
    assert.equal(big.status, 413);
  });
});

describe('500', () => {
  it('an unexpected failure answers {"message":"Server error."}, logs the cause, leaks nothing', async () => {
    const lines: string[] = [];
    const capture = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(chunk.toString('utf8'));
        done();
      },
    });
    // The real coordinator, with one call turned into a fault of Vigil's own (a plain Error,
    // not a VigilError). Everything else, authentication included, is the real thing.
    const faulty = new Proxy(coordinator, {
      get(target, prop, receiver) {
        if (prop === 'listMonitors') {
          return () => {
            throw new TypeError('boom: /secret/internal/path');
          };
        }
        const value: unknown = Reflect.get(target, prop, receiver);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const faultyApp = buildApp({
      service: faulty,
      admin: coordinator,
      adminToken: 'admin-secret',
      logger: pino({ level: 'info' }, capture),
    });
    try {
      const res = await faultyApp.inject({
        method: 'GET',
        url: '/webapi/monitors',
        headers: { authorization: `Bearer ${user.api_token}` },
      });
      assert.equal(res.statusCode, 500);
      assert.deepEqual(res.json(), { message: 'Server error.' });
      assert.ok(!res.body.includes('boom'), 'the cause is not returned');
      assert.ok(!res.body.includes(' at '), 'no stack trace in the body');
      await new Promise((resolve) => setImmediate(resolve));
      const failed = lines
        .flatMap((l) => l.split('\n'))
        .filter((l) => l !== '')
        .map(
          (l) =>
            JSON.parse(l) as {
              msg?: string;
              err?: { message?: string; stack?: string };
              level: number;
            },
        )
        .find((l) => l.msg === 'request failed');
      assert.ok(failed, 'the failure is logged');
      assert.equal(failed.level, 50);
      assert.equal(failed.err?.message, 'boom: /secret/internal/path');
      assert.equal(typeof failed.err?.stack, 'string', 'with its stack');
      assert.ok(!lines.join('').includes(user.api_token), 'without the token');
    } finally {
      await faultyApp.close();
    }
  });
});
