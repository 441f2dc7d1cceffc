/**
 * The OpenAPI document as a test oracle (issue 6: "responses checked against it in the API
 * tests"). {@link loadContract} fetches `GET /webapi/openapi.json` from a built app and compiles
 * every documented response schema with Ajv (the one fastify ships), so a test can assert that
 * an actual response is documented — its status listed for the operation, its body valid
 * against the schema, its documented headers present.
 */
import assert from 'node:assert/strict';
import AjvModule, { type ValidateFunction } from 'ajv';
import type { FastifyInstance } from 'fastify';

const Ajv = AjvModule.default;

/** The parts of an OpenAPI 3.0 document the tests read. */
export interface OpenApiDocument {
  openapi: string;
  info: { title: string; version: string };
  paths: Record<string, Record<string, OpenApiOperation>>;
  components: {
    schemas: Record<string, Record<string, unknown>>;
    securitySchemes: Record<string, Record<string, unknown>>;
  };
  security?: Record<string, string[]>[];
  [key: string]: unknown;
}

export interface OpenApiOperation {
  operationId?: string;
  tags?: string[];
  security?: Record<string, string[]>[];
  parameters?: { name: string; in: string; required?: boolean; schema?: unknown }[];
  requestBody?: {
    required?: boolean;
    content: Record<string, { schema: Record<string, unknown> }>;
  };
  responses: Record<
    string,
    {
      description: string;
      headers?: Record<string, unknown>;
      content?: Record<string, { schema: Record<string, unknown> }>;
    }
  >;
}

/** What a response looked like, from `inject()` or `fetch`. */
export interface SeenResponse {
  statusCode: number;
  headers: Record<string, string | string[] | number | undefined>;
  body: string;
}

/** A documented operation matched by method and path. */
export interface MatchedOperation {
  method: string;
  template: string;
  operation: OpenApiOperation;
}

/** See the file comment. */
export interface Contract {
  readonly document: OpenApiDocument;
  /** The documented operation `method url` falls under, or null (unknown route or method). */
  match(method: string, url: string): MatchedOperation | null;
  /**
   * Asserts that the response to `method url` is what the document says, when the request
   * falls under a documented operation; returns the operation (or null: nothing to check).
   */
  check(method: string, url: string, res: SeenResponse): MatchedOperation | null;
}

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'options', 'head', 'trace'];

function pointer(segments: string[]): string {
  return segments
    .map((s) => encodeURIComponent(s.replace(/~/g, '~0').replace(/\//g, '~1')))
    .join('/');
}

/** Fetches and compiles the document of `app` (which must be ready). */
export async function loadContract(app: FastifyInstance): Promise<Contract> {
  const res = await app.inject({ method: 'GET', url: '/webapi/openapi.json' });
  assert.equal(res.statusCode, 200, 'GET /webapi/openapi.json');
  const document = res.json<OpenApiDocument>();
  // OpenAPI 3.0 schema objects add `nullable` (which Ajv knows) and `example` (which it must
  // tolerate): not strict.
  const ajv = new Ajv({ strict: false, allErrors: true });
  ajv.addSchema({ ...structuredClone(document), $id: 'openapi' });

  const routes: { template: string; pattern: RegExp }[] = Object.keys(document.paths).map(
    (template) => ({
      template,
      pattern: new RegExp(
        `^${template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+')}$`,
      ),
    }),
  );
  const validators = new Map<string, ValidateFunction>();
  function validator(segments: string[]): ValidateFunction {
    const ref = `openapi#/${pointer(segments)}`;
    let v = validators.get(ref);
    if (!v) {
      v = ajv.compile({ $ref: ref });
      validators.set(ref, v);
    }
    return v;
  }

  function match(method: string, url: string): MatchedOperation | null {
    // Resolved as every HTTP client (and inject) resolves it: `/a/b/..` is `/a/`.
    const rawPath = new URL(`http://vigil.test${url}`).pathname;
    let path: string;
    try {
      path = decodeURI(rawPath);
    } catch {
      return null; // a malformed URL is refused by the router, before any route
    }
    const m = method.toLowerCase();
    if (!METHODS.includes(m)) return null;
    for (const route of routes) {
      if (!route.pattern.test(rawPath) && !route.pattern.test(path)) continue;
      // A path parameter over fastify's maxParamLength (100) is refused by the router with a
      // plain 404 before any route runs.
      if (rawPath.split('/').some((segment) => segment.length > 100)) return null;
      const operation = document.paths[route.template]?.[m];
      if (operation) return { method: m, template: route.template, operation };
    }
    return null;
  }

  function check(method: string, url: string, res: SeenResponse): MatchedOperation | null {
    const matched = match(method, url);
    if (!matched) return null;
    const where = `${method} ${url} → ${res.statusCode}`;
    const status = String(res.statusCode);
    const documented = matched.operation.responses[status] ?? matched.operation.responses.default;
    assert.ok(
      documented,
      `${where}: status not documented for ${matched.method} ${matched.template} (${res.body.slice(0, 200)})`,
    );
    for (const name of Object.keys(documented.headers ?? {})) {
      if (name === 'x-ratelimit-reset' || name === 'retry-after') continue; // not always sent
      assert.ok(res.headers[name] !== undefined, `${where}: documented header ${name} missing`);
    }
    if (!documented.content) return matched;
    const contentType = String(res.headers['content-type'] ?? '');
    const mediaType = Object.keys(documented.content).find((t) => contentType.startsWith(t));
    assert.ok(mediaType, `${where}: content type ${contentType} not documented`);
    if (!mediaType.startsWith('application/json')) return matched;
    let body: unknown;
    try {
      body = JSON.parse(res.body);
    } catch {
      assert.fail(`${where}: body is not JSON: ${res.body.slice(0, 200)}`);
    }
    const validate = validator([
      'paths',
      matched.template,
      matched.method,
      'responses',
      documented === matched.operation.responses[status] ? status : 'default',
      'content',
      mediaType,
      'schema',
    ]);
    assert.ok(
      validate(body),
      `${where}: body does not match the documented schema: ${ajv.errorsText(validate.errors)}\n${res.body.slice(0, 500)}`,
    );
    return matched;
  }

  return { document, match, check };
}
