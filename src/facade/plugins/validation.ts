/**
 * Request validation against the route schemas (issue 6), kept inside the JSON error model of
 * CONTRACT §4:
 *
 * - a body that is missing or not a JSON object → 400, worded by {@link objectBody} (which the
 *   routes call too);
 * - a body field or query parameter of the wrong type → 422 `{"message","errors":{field:[…]}}`
 *   with one message per field, worded like the service's own 422s;
 * - a path id that is not a positive integer in plain decimal → the route's 404
 *   (`Check not found.`), since such an id names nothing.
 *
 * Ajv runs without type coercion ({@link AJV_OPTIONS}), so `"60"` in a JSON body stays a string
 * and is refused. Path and query values are always strings on the wire; the `vigil-validation`
 * hook turns the digit strings among them into numbers where the schema wants an integer,
 * before Ajv sees them — strictly for path ids (`01`, `1e3`, ` 1` stay strings and fail).
 */
import type { FastifyError, FastifyRequest, FastifySchemaValidationError } from 'fastify';
import {
  VigilError,
  validationError,
  type ErrorCode,
  type FieldErrors,
} from '../../common/errors.js';
import { namedPlugin } from './named-plugin.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * The error a path parameter that fails its schema becomes.
     * @default VIGIL_ERR_ROUTE_NOT_FOUND
     */
    notFound?: ErrorCode;
    /**
     * Field → the message of a schema failure of that field, where the service words it
     * (`The interval must be a whole number of seconds.`). Other fields get a message derived
     * from their schema.
     */
    fieldMessages?: Readonly<Record<string, string>>;
  }
}

/**
 * Ajv options of the facade (fastify's `ajv.customOptions`): no coercion (see the file
 * comment), every error of a body at once so each field gets its message, unknown fields kept
 * (CONTRACT §3: ignored, never refused), query defaults filled in.
 */
export const AJV_OPTIONS = Object.freeze({
  coerceTypes: false,
  allErrors: true,
  removeAdditional: false,
  useDefaults: true,
  allowUnionTypes: true,
});

/** Messages for the body problems fastify detects while parsing (CONTRACT §4, 400). */
export const BODY_MESSAGES = {
  invalidJson: 'The request body is not valid JSON.',
  emptyJson: 'The request body is empty; it must be a JSON object.',
  contentLength: 'The Content-Length header does not match the request body.',
} as const;

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  switch (typeof value) {
    case 'string':
      return 'a string';
    case 'number':
      return 'a number';
    case 'boolean':
      return 'a boolean';
    default:
      return typeof value;
  }
}

/**
 * The request body as a JSON object, else a 400 naming what came instead (CONTRACT §4).
 * `undefined` means no body was sent at all.
 */
export function objectBody(body: unknown): Record<string, unknown> {
  if (body === undefined) {
    throw new VigilError('VIGIL_ERR_BAD_REQUEST', BODY_MESSAGES.emptyJson);
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new VigilError(
      'VIGIL_ERR_BAD_REQUEST',
      `The request body must be a JSON object, not ${describe(body)}.`,
    );
  }
  return body as Record<string, unknown>;
}

/** A path id as clients write it: no sign, no leading zero, no exponent. */
const PATH_INTEGER = /^[1-9][0-9]*$/;
/** A query integer as the service has always read it (`page=01` is 1). */
const QUERY_INTEGER = /^[0-9]+$/;

interface JsonSchema {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  anyOf?: JsonSchema[];
  enum?: unknown[];
  minimum?: number;
  maximum?: number;
  maxLength?: number;
}

function wantsInteger(schema: JsonSchema | undefined): boolean {
  if (!schema) return false;
  const types = [schema.type ?? []].flat();
  return (
    types.includes('integer') ||
    types.includes('number') ||
    (schema.anyOf ?? []).some((s) => wantsInteger(s))
  );
}

/** Digit strings → numbers in `values`, for the properties `schema` declares numeric. */
function coerce(values: unknown, schema: unknown, digits: RegExp): void {
  const properties = (schema as JsonSchema | undefined)?.properties;
  if (!properties || typeof values !== 'object' || values === null) return;
  const record = values as Record<string, unknown>;
  for (const [name, property] of Object.entries(properties)) {
    const value = Object.prototype.hasOwnProperty.call(record, name) ? record[name] : undefined;
    if (typeof value === 'string' && digits.test(value) && wantsInteger(property)) {
      record[name] = Number(value);
    }
  }
}

/** Validation plugin `vigil-validation`: the path/query number hook (see the file comment). */
export const validationPlugin = namedPlugin('vigil-validation', async (app) => {
  app.addHook('preValidation', async (request) => {
    const schema = request.routeOptions.schema;
    if (!schema) return;
    coerce(request.params, schema.params, PATH_INTEGER);
    coerce(request.query, schema.querystring, QUERY_INTEGER);
  });
});

/** What `schema` accepts, in words: `a whole number from 1 to 100`, `one of a, b`. */
export function expectation(schema: JsonSchema | undefined): string {
  if (!schema) return 'valid';
  if (schema.anyOf) {
    const nullable = schema.anyOf.some((s) => s.type === 'null');
    const others = schema.anyOf.filter((s) => s.type !== 'null').map(expectation);
    return [...others, ...(nullable ? ['null'] : [])].join(' or ');
  }
  if (schema.enum) {
    const values = schema.enum.filter((v) => v !== null).map(String);
    return `one of ${values.join(', ')}${schema.enum.includes(null) ? ', or null' : ''}`;
  }
  const types = [schema.type ?? []].flat().filter((t) => t !== 'null');
  const nullable = [schema.type ?? []].flat().includes('null') ? ' or null' : '';
  switch (types[0]) {
    case 'integer': {
      const { minimum: min, maximum: max } = schema;
      if (min !== undefined && max !== undefined) return `a whole number from ${min} to ${max}`;
      if (min !== undefined) return `a whole number of at least ${min}${nullable}`;
      return `a whole number${nullable}`;
    }
    case 'number':
      return `a number${nullable}`;
    case 'string':
      return schema.maxLength === undefined
        ? `a string${nullable}`
        : `a string of at most ${schema.maxLength} characters${nullable}`;
    case 'boolean':
      return `true or false${nullable}`;
    case 'array':
      return `an array${nullable}`;
    case 'object':
      return `a JSON object${nullable}`;
    default:
      return 'valid';
  }
}

/** The top-level field an Ajv error is about (`/interval/0` → `interval`), or null for the root. */
function fieldOf(error: FastifySchemaValidationError): string | null {
  if (error.keyword === 'required') {
    const missing = error.params.missingProperty;
    return typeof missing === 'string' ? missing.replace(/^\./, '') : null;
  }
  const segment = error.instancePath.split('/')[1];
  if (segment === undefined || segment === '') return null;
  return segment.replace(/~1/g, '/').replace(/~0/g, '~');
}

/** True for the error fastify raises when a request part fails its schema. */
export function isValidationError(
  err: unknown,
): err is FastifyError & { validation: FastifySchemaValidationError[] } {
  return (
    err instanceof Error &&
    Array.isArray((err as FastifyError).validation) &&
    typeof (err as FastifyError).validationContext === 'string'
  );
}

/**
 * The VigilError a schema failure of `request` becomes (see the file comment for the mapping).
 * Field messages never quote the request: they come from the route's `fieldMessages` or from
 * the field's schema.
 */
export function validationProblem(
  err: FastifyError & { validation: FastifySchemaValidationError[] },
  request: FastifyRequest,
): VigilError {
  const config = request.routeOptions.config;
  const schemas = request.routeOptions.schema ?? {};
  switch (err.validationContext) {
    case 'params':
      return new VigilError(config.notFound ?? 'VIGIL_ERR_ROUTE_NOT_FOUND');
    case 'body':
    case 'querystring': {
      if (err.validationContext === 'body' && err.validation.some((e) => fieldOf(e) === null)) {
        try {
          objectBody(request.body); // throws the 400 that names what came instead
        } catch (notAnObject) {
          if (notAnObject instanceof VigilError) return notAnObject;
        }
        return new VigilError('VIGIL_ERR_BAD_REQUEST');
      }
      const schema = (err.validationContext === 'body' ? schemas.body : schemas.querystring) as
        JsonSchema | undefined;
      const fields: FieldErrors = {};
      for (const error of err.validation) {
        const field = fieldOf(error);
        if (field === null || fields[field]) continue;
        const own = config.fieldMessages?.[field];
        fields[field] = [
          own ??
            (error.keyword === 'required'
              ? `The ${field} field is required.`
              : `The ${field} must be ${expectation(schema?.properties?.[field])}.`),
        ];
      }
      return validationError(fields);
    }
    default:
      return new VigilError('VIGIL_ERR_BAD_REQUEST', 'The request is not valid.');
  }
}
