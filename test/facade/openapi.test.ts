/**
 * The OpenAPI document (issue 6): served without a token at `GET /webapi/openapi.json`,
 * valid for a real OpenAPI validator (@apidevtools/swagger-parser), complete (every spec,
 * extension and operations route, the three token forms, the error responses) and true:
 * every documented operation is called for its success status and for each documented error
 * status, and every answer is checked against the document (status listed, body valid against
 * the documented schema, documented headers present).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import SwaggerParser from '@apidevtools/swagger-parser';
import type { InjectOptions } from 'fastify';
import { BODY_LIMIT_BYTES } from '../../src/facade/app.js';
import { BULK_BODY_LIMIT_BYTES } from '../../src/facade/routes/monitors.js';
import { loadContract, type Contract, type OpenApiOperation } from './contract.js';
import { openWorld, type World } from './world.js';

let world: World;
let contract: Contract;

/** Every route the document must describe: spec §4, CONTRACT §3–§4, issues 4 and 6. */
const EXPECTED_OPERATIONS = [
  'GET /healthz',
  'GET /readyz',
  'GET /metrics',
  'GET /webapi/openapi.json',
  'GET /webapi/checks/{id}',
  'PUT /webapi/checks/{id}',
  'GET /webapi/checks/{id}/results',
  'POST /webapi/checks/{id}/disable',
  'POST /webapi/checks/{id}/enable',
  'GET /webapi/monitors',
  'POST /webapi/monitors',
  'POST /webapi/monitors/bulk',
  'GET /webapi/monitors/{id}',
  'DELETE /webapi/monitors/{id}',
  'GET /webapi/account',
  'PUT /webapi/account',
  'GET /webapi/webhooks',
  'POST /webapi/webhooks/{id}/redeliver',
].sort();

const OPERATIONS_ROUTES = ['/healthz', '/readyz', '/metrics', '/webapi/openapi.json'];

function operations(): [string, string, OpenApiOperation][] {
  return Object.entries(contract.document.paths).flatMap(([path, ops]) =>
    Object.entries(ops).map(([method, op]) => [method.toUpperCase(), path, op] as const),
  ) as [string, string, OpenApiOperation][];
}

before(async () => {
  world = await openWorld({ rateLimitPerMinute: 100_000 });
  contract = await loadContract(world.app);
});

after(async () => {
  await world?.close();
});

describe('GET /webapi/openapi.json', () => {
  it('answers without a token, as JSON, with the rate limit headers', async () => {
    const res = await world.app.inject({ method: 'GET', url: '/webapi/openapi.json' });
    assert.equal(res.statusCode, 200);
    assert.match(String(res.headers['content-type']), /^application\/json/);
    assert.ok(res.headers['x-ratelimit-limit'] !== undefined);
    assert.ok(res.headers['x-ratelimit-remaining'] !== undefined);
    const doc = res.json<{ openapi: string; info: { title: string } }>();
    assert.match(doc.openapi, /^3\.0\.\d$/);
    assert.equal(doc.info.title, 'Vigil API');
  });

  it('is a valid OpenAPI 3 document for @apidevtools/swagger-parser', async () => {
    // validate() dereferences in place: give it a copy.
    const api = await SwaggerParser.validate(
      structuredClone(contract.document) as unknown as Parameters<typeof SwaggerParser.validate>[0],
    );
    assert.ok('openapi' in api);
  });

  it('describes every spec, extension and operations route, and not the admin route', () => {
    const documented = operations()
      .map(([method, path]) => `${method} ${path}`)
      .sort();
    assert.deepEqual(documented, EXPECTED_OPERATIONS);
    assert.ok(!Object.keys(contract.document.paths).some((p) => p.startsWith('/_admin')));
    for (const op of EXPECTED_OPERATIONS) {
      const [method, path] = op.split(' ') as [string, string];
      const url = path.replace('{id}', ':id');
      assert.ok(world.app.hasRoute({ method, url }), `${op} is a real route`);
    }
    const ids = operations().map(([, , op]) => op.operationId);
    assert.equal(new Set(ids).size, ids.length, 'operationIds are unique');
    assert.ok(
      ids.every((id) => typeof id === 'string' && id !== ''),
      'every operation has an id',
    );
  });

  it('declares the three token forms, required everywhere but on the operations routes', () => {
    const schemes = contract.document.components.securitySchemes;
    assert.equal(schemes.bearerAuth?.type, 'http');
    assert.equal(schemes.bearerAuth?.scheme, 'bearer');
    assert.equal(schemes.authenticationHeader?.type, 'apiKey');
    assert.equal(schemes.authenticationHeader?.in, 'header');
    assert.equal(schemes.authenticationHeader?.name, 'Authentication');
    assert.equal(schemes.apiKeyQuery?.type, 'apiKey');
    assert.equal(schemes.apiKeyQuery?.in, 'query');
    assert.equal(schemes.apiKeyQuery?.name, 'api_key');
    // Any one of the three (a list of alternatives).
    assert.deepEqual(contract.document.security, [
      { bearerAuth: [] },
      { authenticationHeader: [] },
      { apiKeyQuery: [] },
    ]);
    for (const [method, path, op] of operations()) {
      if (OPERATIONS_ROUTES.includes(path)) {
        assert.deepEqual(op.security, [], `${method} ${path} needs no token`);
      } else {
        assert.equal(op.security, undefined, `${method} ${path} uses the global security`);
      }
    }
  });

  it('documents the error responses of each route with the error body', () => {
    const errorRef = { $ref: '#/components/schemas/ErrorBody' };
    for (const [method, path, op] of operations()) {
      const where = `${method} ${path}`;
      const expected = new Set<string>(['500']);
      if (!OPERATIONS_ROUTES.includes(path)) ['401', '403', '429'].forEach((s) => expected.add(s));
      if (path === '/webapi/openapi.json') expected.add('429');
      if (path.includes('{id}')) expected.add('404');
      if (op.requestBody) ['400', '413', '415', '422'].forEach((s) => expected.add(s));
      if (['POST', 'DELETE'].includes(method) && path.includes('{id}')) {
        ['400', '413', '415'].forEach((s) => expected.add(s)); // bodyless: a body is read, dropped
      }
      if ((op.parameters ?? []).some((p) => p.in === 'query')) expected.add('422');
      for (const status of expected) {
        const response = op.responses[status];
        assert.ok(response, `${where} documents ${status}`);
        assert.deepEqual(
          response.content?.['application/json']?.schema,
          errorRef,
          `${where} ${status} has the error body`,
        );
        assert.ok(response.description.length > 0);
      }
      if (!OPERATIONS_ROUTES.includes(path) || path === '/webapi/openapi.json') {
        for (const [status, response] of Object.entries(op.responses)) {
          assert.ok(response.headers?.['x-ratelimit-limit'], `${where} ${status} rate headers`);
          assert.ok(response.headers?.['x-ratelimit-remaining'], `${where} ${status}`);
        }
        assert.ok(op.responses['429']?.headers?.['retry-after'], `${where} 429 Retry-After`);
      }
    }
  });

  it('request bodies accept unknown fields and say that numbers must be JSON numbers', () => {
    for (const [method, path, op] of operations()) {
      const schema = op.requestBody?.content['application/json']?.schema;
      if (!schema) continue;
      assert.notEqual(schema.additionalProperties, false, `${method} ${path}`);
      const properties = schema.properties as Record<
        string,
        { type?: string; description?: string }
      >;
      for (const [name, property] of Object.entries(properties)) {
        if (property.type === 'integer' || property.type === 'number') {
          assert.match(property.description ?? '', /JSON number/, `${method} ${path} ${name}`);
        }
      }
    }
  });

  it('path ids are documented as positive integers; a malformed one is a 404', () => {
    for (const [method, path, op] of operations()) {
      if (!path.includes('{id}')) continue;
      const id = op.parameters?.find((p) => p.in === 'path' && p.name === 'id');
      assert.ok(id?.required, `${method} ${path}`);
      assert.deepEqual(
        { ...(id.schema as object) },
        { type: 'integer', minimum: 1, maximum: Number.MAX_SAFE_INTEGER },
      );
    }
  });
});

describe('the routes do what the document says', () => {
  /** `METHOD template status` of every answer checked against the document. */
  const seen = new Set<string>();

  async function call(opts: InjectOptions, app = world.app): Promise<number> {
    const res = await app.inject(opts);
    const url = String(opts.url);
    const method = String(opts.method);
    const matched = contract.check(method, url, {
      statusCode: res.statusCode,
      headers: res.headers,
      body: res.body,
    });
    assert.ok(matched, `${method} ${url} is a documented operation`);
    seen.add(`${method} ${matched.template} ${res.statusCode}`);
    return res.statusCode;
  }

  const bearer = (token: string): Record<string, string> => ({ authorization: `Bearer ${token}` });
  const json = (token: string): Record<string, string> => ({
    ...bearer(token),
    'content-type': 'application/json',
  });

  /** The operations with a path id, as `[method, path template, sample body]`. */
  function idOperations(): [string, string, string | undefined][] {
    return [
      ['GET', '/webapi/checks/{id}', undefined],
      ['PUT', '/webapi/checks/{id}', '{"interval": 300}'],
      ['GET', '/webapi/checks/{id}/results', undefined],
      ['POST', '/webapi/checks/{id}/disable', undefined],
      ['POST', '/webapi/checks/{id}/enable', undefined],
      ['GET', '/webapi/monitors/{id}', undefined],
      ['DELETE', '/webapi/monitors/{id}', undefined],
      ['POST', '/webapi/webhooks/{id}/redeliver', undefined],
    ];
  }

  it('success answers match the documented schemas', async () => {
    const { alice } = world;
    const t = alice.api_token;
    const [https] = world.aliceMonitors;
    assert.ok(https);
    const uptimeId = world.aliceCheckIds[0] ?? 0;
    const certId = https.checks.find((c) => c.name === 'certificate_health')?.id ?? 0;
    assert.equal(await call({ method: 'GET', url: '/webapi/monitors', headers: bearer(t) }), 200);
    assert.equal(
      await call({ method: 'GET', url: `/webapi/monitors/${https.id}`, headers: bearer(t) }),
      200,
    );
    assert.equal(
      await call({ method: 'GET', url: `/webapi/checks/${uptimeId}`, headers: bearer(t) }),
      200,
    );
    assert.equal(
      await call({ method: 'GET', url: `/webapi/checks/${certId}`, headers: bearer(t) }),
      200,
    );
    assert.equal(
      await call({
        method: 'GET',
        url: `/webapi/checks/${uptimeId}/results?limit=5`,
        headers: bearer(t),
      }),
      200,
    );
    assert.equal(
      await call({
        method: 'PUT',
        url: `/webapi/checks/${certId}`,
        headers: json(t),
        payload: '{"expiry_threshold_days": 14, "interval": 7200}',
      }),
      200,
    );
    for (const action of ['disable', 'enable']) {
      assert.equal(
        await call({
          method: 'POST',
          url: `/webapi/checks/${certId}/${action}`,
          headers: bearer(t),
        }),
        200,
      );
    }
    assert.equal(await call({ method: 'GET', url: '/webapi/account', headers: bearer(t) }), 200);
    assert.equal(
      await call({
        method: 'PUT',
        url: '/webapi/account',
        headers: json(t),
        payload: JSON.stringify({ webhook_url: alice.webhook_url }),
      }),
      200,
    );
    for (const query of ['', '?status=delivered', '?status=pending&page=1&per_page=1']) {
      assert.equal(
        await call({ method: 'GET', url: `/webapi/webhooks${query}`, headers: bearer(t) }),
        200,
      );
    }
    const created = await world.app.inject({
      method: 'POST',
      url: '/webapi/monitors',
      headers: json(t),
      payload: '{"url": "https://doc-created.example.test/", "alias": null}',
    });
    assert.equal(contract.check('POST', '/webapi/monitors', created)?.template, '/webapi/monitors');
    seen.add(`POST /webapi/monitors ${created.statusCode}`);
    assert.equal(created.statusCode, 201);
    const newId = created.json<{ id: number }>().id;
    assert.equal(
      await call({
        method: 'POST',
        url: '/webapi/monitors/bulk',
        headers: json(t),
        payload: '{"monitors": [{"url": "https://bulk-a.example.test/", "interval": 900}]}',
      }),
      201,
    );
    assert.equal(
      await call({ method: 'DELETE', url: `/webapi/monitors/${newId}`, headers: bearer(t) }),
      200,
    );
    // The delivered webhook can be sent again (200); then it is pending (409).
    const delivered = world.aliceWebhooks[0]?.id ?? 0;
    assert.equal(
      await call({
        method: 'POST',
        url: `/webapi/webhooks/${delivered}/redeliver`,
        headers: bearer(t),
      }),
      200,
    );
    assert.equal(
      await call({
        method: 'POST',
        url: `/webapi/webhooks/${delivered}/redeliver`,
        headers: bearer(t),
      }),
      409,
    );
    for (const url of OPERATIONS_ROUTES) {
      assert.equal(await call({ method: 'GET', url }), 200, url);
    }
  });

  it('401, 403 and 404 answers match the document', async () => {
    const { carol } = world;
    for (const [method, template, body] of [
      ...idOperations(),
      ['GET', '/webapi/monitors', undefined] as const,
      ['POST', '/webapi/monitors', '{"url": "https://x.example.test/"}'] as const,
      [
        'POST',
        '/webapi/monitors/bulk',
        '{"monitors": [{"url": "https://x.example.test/"}]}',
      ] as const,
      ['GET', '/webapi/account', undefined] as const,
      ['PUT', '/webapi/account', '{"webhook_url": null}'] as const,
      ['GET', '/webapi/webhooks', undefined] as const,
    ]) {
      const url = template.replace('{id}', '999999');
      const headers = body === undefined ? {} : { 'content-type': 'application/json' };
      assert.equal(await call({ method, url, headers, payload: body }), 401, `${method} ${url}`);
      assert.equal(
        await call({
          method,
          url,
          headers: { ...headers, ...bearer(carol.api_token) },
          payload: body,
        }),
        403,
      );
      if (template.includes('{id}')) {
        for (const id of ['999999', 'abc', '0', '01']) {
          const res = await call({
            method,
            url: template.replace('{id}', id),
            headers: { ...headers, ...bearer(world.bob.api_token) },
            payload: body,
          });
          assert.equal(res, 404, `${method} ${template} ${id}`);
        }
      }
    }
  });

  it('400, 413, 415 and 422 answers match the document', async () => {
    const t = world.bob.api_token;
    const bobCheck = world.bobMonitor.checks[0]?.id ?? 0;
    const bodyRoutes: [string, string, string][] = [
      ['PUT', `/webapi/checks/${bobCheck}`, '{"interval": "300"}'],
      ['POST', '/webapi/monitors', '{"url": 42}'],
      ['POST', '/webapi/monitors/bulk', '{"monitors": [{"url": "ftp://x.example.test/"}]}'],
      ['PUT', '/webapi/account', '{"webhook_url": 42}'],
    ];
    const big = JSON.stringify({ pad: 'x'.repeat(BODY_LIMIT_BYTES) });
    const bigBulk = JSON.stringify({ pad: 'x'.repeat(BULK_BODY_LIMIT_BYTES) });
    for (const [method, url, invalid] of bodyRoutes) {
      const tooBig = url.endsWith('/bulk') ? bigBulk : big;
      assert.equal(await call({ method, url, headers: json(t), payload: '[1]' }), 400, url);
      assert.equal(await call({ method, url, headers: json(t), payload: '{"a":' }), 400, url);
      assert.equal(await call({ method, url, headers: json(t), payload: tooBig }), 413, url);
      assert.equal(
        await call({
          method,
          url,
          headers: { ...bearer(t), 'content-type': 'text/plain' },
          payload: '{}',
        }),
        415,
        url,
      );
      assert.equal(await call({ method, url, headers: json(t), payload: invalid }), 422, url);
    }
    // Bodyless actions read a body and drop it: only its size, its length and the syntax of
    // its content type can be wrong.
    const spare = await world.coordinator.createMonitor(world.bob.id, {
      url: 'http://spare.example.test/',
    });
    for (const url of [
      `/webapi/checks/${bobCheck}/disable`,
      `/webapi/checks/${bobCheck}/enable`,
      `/webapi/webhooks/999999/redeliver`,
      `/webapi/monitors/${spare.id}`,
    ]) {
      const method = url.startsWith('/webapi/monitors') ? 'DELETE' : 'POST';
      assert.equal(await call({ method, url, headers: json(t), payload: big }), 413, url);
      assert.equal(
        await call({
          method,
          url,
          headers: { ...json(t), 'content-length': '100' },
          payload: '{}',
        }),
        400,
        url,
      );
      for (const contentType of ['', 'json', 'text']) {
        assert.equal(
          await call({
            method,
            url,
            headers: { ...bearer(t), 'content-type': contentType },
            payload: '{}',
          }),
          415,
          `${url} ${contentType}`,
        );
      }
    }
    // Query parameters.
    assert.equal(
      await call({
        method: 'GET',
        url: `/webapi/checks/${bobCheck}/results?limit=0`,
        headers: bearer(t),
      }),
      422,
    );
    assert.equal(
      await call({ method: 'GET', url: '/webapi/webhooks?status=lost', headers: bearer(t) }),
      422,
    );
  });

  it('429, 500 and 503 answers match the document', async () => {
    // A limit of one request a minute: the second call of anything is a 429.
    const limited = world.extraApp({ rateLimitPerMinute: 1 });
    await limited.ready();
    const t = world.bob.api_token;
    const bobCheck = world.bobMonitor.checks[0]?.id ?? 0;
    const all: [string, string, string | undefined][] = [
      ['GET', `/webapi/checks/${bobCheck}`, undefined],
      ['PUT', `/webapi/checks/${bobCheck}`, '{"interval": 300}'],
      ['GET', `/webapi/checks/${bobCheck}/results`, undefined],
      ['POST', `/webapi/checks/${bobCheck}/disable`, undefined],
      ['POST', `/webapi/checks/${bobCheck}/enable`, undefined],
      ['GET', '/webapi/monitors', undefined],
      ['POST', '/webapi/monitors', '{"url": "https://x.example.test/"}'],
      ['POST', '/webapi/monitors/bulk', '{"monitors": [{"url": "https://x.example.test/"}]}'],
      ['GET', `/webapi/monitors/${world.bobMonitor.id}`, undefined],
      ['DELETE', `/webapi/monitors/${world.bobMonitor.id}`, undefined],
      ['GET', '/webapi/account', undefined],
      ['PUT', '/webapi/account', '{"webhook_url": null}'],
      ['GET', '/webapi/webhooks', undefined],
      ['POST', '/webapi/webhooks/1/redeliver', undefined],
    ];
    await limited.inject({ method: 'GET', url: '/webapi/account', headers: bearer(t) });
    for (const [method, url, body] of all) {
      const headers = body === undefined ? bearer(t) : json(t);
      assert.equal(await call({ method, url, headers, payload: body }, limited), 429, url);
    }
    await limited.inject({ method: 'GET', url: '/webapi/openapi.json' });
    assert.equal(await call({ method: 'GET', url: '/webapi/openapi.json' }, limited), 429);

    // Vig's own faults: every service call but authentication throws a plain Error.
    let notReady = false;
    const faulty = new Proxy(world.coordinator, {
      get(target, prop, receiver) {
        const value: unknown = Reflect.get(target, prop, receiver);
        if (typeof value !== 'function') return value;
        if (prop === 'authenticate') return value.bind(target);
        if (prop === 'readiness' && notReady) return () => ({ store: true, probes: 0 });
        return () => {
          throw new TypeError('injected fault');
        };
      },
    });
    const broken = world.extraApp({ service: faulty, rateLimitPerMinute: 100_000 });
    await broken.ready();
    for (const [method, url, body] of all) {
      const headers = body === undefined ? bearer(t) : json(t);
      assert.equal(await call({ method, url, headers, payload: body }, broken), 500, url);
    }
    assert.equal(await call({ method: 'GET', url: '/readyz' }, broken), 500);
    notReady = true;
    assert.equal(await call({ method: 'GET', url: '/readyz' }, broken), 503);
  });

  it('no field of the service’s answers is lost to the response schemas', async () => {
    // Fastify serializes with the response schemas, which drop undeclared properties: a field
    // added to a view in common/service.ts must be added to src/facade/schemas.ts too.
    const { alice, coordinator } = world;
    const t = alice.api_token;
    const [https] = world.aliceMonitors;
    assert.ok(https);
    const api = async (url: string): Promise<unknown> =>
      (await world.app.inject({ method: 'GET', url, headers: bearer(t) })).json();
    const same = (value: unknown): unknown => JSON.parse(JSON.stringify(value));
    assert.deepEqual(await api('/webapi/monitors'), same(coordinator.listMonitors(alice.id)));
    assert.deepEqual(
      await api(`/webapi/monitors/${https.id}`),
      same(coordinator.getMonitor(alice.id, https.id)),
    );
    for (const check of https.checks) {
      assert.deepEqual(
        await api(`/webapi/checks/${check.id}`),
        same(coordinator.getCheck(alice.id, check.id)),
      );
    }
    const checkId = world.aliceCheckIds[0] ?? 0;
    assert.deepEqual(
      await api(`/webapi/checks/${checkId}/results`),
      same(await coordinator.listResults(alice.id, checkId, 100)),
    );
    assert.deepEqual(await api('/webapi/account'), same(coordinator.getAccount(alice.id)));
    assert.deepEqual(await api('/webapi/webhooks'), same(coordinator.listWebhooks(alice.id, {})));
  });

  it('every documented status of every operation was seen', () => {
    // Statuses documented because they are always possible but that no test can provoke:
    // these routes call nothing that can fail.
    const unprovokable = new Set([
      'GET /healthz 500',
      'GET /metrics 500',
      'GET /webapi/openapi.json 500',
    ]);
    const missing: string[] = [];
    for (const [method, path, op] of operations()) {
      for (const status of Object.keys(op.responses)) {
        const key = `${method} ${path} ${status}`;
        if (!seen.has(key) && !unprovokable.has(key)) missing.push(key);
      }
    }
    assert.deepEqual(missing, []);
  });
});
