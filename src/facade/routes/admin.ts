/**
 * The operator route behind `vigil users …` (CONTRACT §1) while a service runs on the data
 * dir: the CLI cannot open the locked store itself, so it asks the running process.
 *
 * ```
 * POST /_admin/users
 * x-vigil-admin-token: <adminToken>        (required; compared in constant time)
 * Content-Type: application/json
 *
 * { "op": <op>, "args": { … } }            ("args" may be omitted for "list")
 * ```
 *
 * | op             | args (camelCase, as UserAdmin)                                          | 200 body      |
 * |----------------|-------------------------------------------------------------------------|---------------|
 * | `create`       | `{ email: string, plan?: string, webhookUrl?: string\|null, apiEnabled?: boolean }` | UserView   |
 * | `list`         | none                                                                    | UserView[]    |
 * | `show`         | `{ email: string }`                                                     | UserView      |
 * | `set`          | `{ email: string, plan?: string, webhookUrl?: string\|null }` (absent = unchanged) | UserView |
 * | `api`          | `{ email: string, enabled: boolean }`                                   | UserView      |
 * | `rotate-token` | `{ email: string }`                                                     | UserView      |
 *
 * UserView is `{"id","email","plan","api_token","api_enabled","webhook_url"}` — exactly what
 * the CLI prints. Unknown keys in `args` are ignored.
 *
 * Errors are `{ "code": <VIGIL_ERR_*>, "message": string }` (plus `"errors": {field: [msg]}` on
 * 422) with the code's status: 401 `VIGIL_ERR_UNAUTHENTICATED` (token missing or wrong, or the
 * service was started with an empty admin token), 400 `VIGIL_ERR_BAD_REQUEST` (body not a JSON
 * object), 422 `VIGIL_ERR_VALIDATION` (unknown op, missing or mistyped args, bad values),
 * 404 `VIGIL_ERR_USER_NOT_FOUND`, 409 `VIGIL_ERR_EMAIL_TAKEN`, 413, 415, 500 `VIGIL_ERR_INTERNAL`.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { VigilError, validationError, type FieldErrors } from '../../common/errors.js';
import { ADMIN_OPS, applyAdminAction, type AdminAction } from '../../common/admin-ops.js';
import type { UserAdmin, UserView } from '../../common/service.js';
import { JSON_TYPE, logProblem, problemOf } from '../plugins/errors.js';
import { objectBody } from '../plugins/validation.js';

/** Path of the operator route. */
export const ADMIN_USERS_PATH = '/_admin/users';

/** Header carrying the admin token. */
export const ADMIN_TOKEN_HEADER = 'x-vigil-admin-token';

/** The operations of `POST /_admin/users`, one per `vigil users` subcommand. */
export { ADMIN_OPS };

/** One of {@link ADMIN_OPS}. */
export type AdminOp = (typeof ADMIN_OPS)[number];

/** Body of `POST /_admin/users`. */
export interface AdminRequest {
  op: AdminOp;
  args?: Record<string, unknown>;
}

/** Error body of the admin route. */
export interface AdminErrorBody {
  code: string;
  message: string;
  errors?: FieldErrors;
}

/** Options of {@link adminRoutes}. */
export interface AdminRouteOptions extends Record<string, unknown> {
  admin: UserAdmin;
  /** Shared secret of the CLI and the running service; empty disables the route. */
  adminToken: string;
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}

/** Constant-time equality that does not leak the expected token's length either. */
function tokenMatches(presented: string, expected: string): boolean {
  return timingSafeEqual(digest(presented), digest(expected)) && expected !== '';
}

function isOp(value: unknown): value is AdminOp {
  return typeof value === 'string' && (ADMIN_OPS as readonly string[]).includes(value);
}

/** Typed readers for `args`, collecting field errors instead of failing on the first. */
class Args {
  readonly errors: FieldErrors = {};
  constructor(private readonly raw: Record<string, unknown>) {}

  private fail(field: string, message: string): void {
    (this.errors[field] ??= []).push(message);
  }

  has(field: string): boolean {
    return this.raw[field] !== undefined;
  }

  string(field: string): string {
    const value = this.raw[field];
    if (typeof value === 'string' && value !== '') return value;
    this.fail(field, `The ${field} field is required and must be a string.`);
    return '';
  }

  optionalString(field: string): string | undefined {
    const value = this.raw[field];
    if (value === undefined || typeof value === 'string') return value;
    this.fail(field, `The ${field} field must be a string.`);
    return undefined;
  }

  optionalNullableString(field: string): string | null | undefined {
    const value = this.raw[field];
    if (value === undefined || value === null || typeof value === 'string') return value;
    this.fail(field, `The ${field} field must be a string or null.`);
    return undefined;
  }

  boolean(field: string, required: boolean): boolean | undefined {
    const value = this.raw[field];
    if (typeof value === 'boolean') return value;
    if (value === undefined && !required) return undefined;
    this.fail(
      field,
      `The ${field} field ${required ? 'is required and ' : ''}must be true or false.`,
    );
    return undefined;
  }

  /** Throws the collected 422, if any. */
  done(): void {
    if (Object.keys(this.errors).length > 0) throw validationError(this.errors);
  }
}

/** Validates one operation's raw `args` and runs it against the UserAdmin. */
export async function runAdminOp(
  admin: UserAdmin,
  op: AdminOp,
  raw: Record<string, unknown>,
): Promise<UserView | UserView[]> {
  const args = new Args(raw);
  let action: AdminAction;
  switch (op) {
    case 'list':
      action = { op, args: {} };
      break;
    case 'create': {
      const create: Extract<AdminAction, { op: 'create' }>['args'] = {
        email: args.string('email'),
      };
      const plan = args.optionalString('plan');
      const webhookUrl = args.optionalNullableString('webhookUrl');
      const apiEnabled = args.boolean('apiEnabled', false);
      if (plan !== undefined) create.plan = plan;
      if (webhookUrl !== undefined) create.webhookUrl = webhookUrl;
      if (apiEnabled !== undefined) create.apiEnabled = apiEnabled;
      action = { op, args: create };
      break;
    }
    case 'set': {
      // Only present keys are passed: an absent key means "leave unchanged".
      const set: Extract<AdminAction, { op: 'set' }>['args'] = { email: args.string('email') };
      const plan = args.optionalString('plan');
      const webhookUrl = args.optionalNullableString('webhookUrl');
      if (plan !== undefined) set.plan = plan;
      if (webhookUrl !== undefined) set.webhookUrl = webhookUrl;
      action = { op, args: set };
      break;
    }
    case 'api':
      action = {
        op,
        args: { email: args.string('email'), enabled: args.boolean('enabled', true) === true },
      };
      break;
    case 'show':
    case 'rotate-token':
      action = { op, args: { email: args.string('email') } };
      break;
  }
  args.done();
  return applyAdminAction(admin, action);
}

async function sendAdminError(
  err: unknown,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<FastifyReply> {
  const problem = problemOf(err);
  logProblem(problem, err, request);
  const body: AdminErrorBody = { code: problem.code, message: problem.message };
  if (problem.fields) body.errors = problem.fields;
  return reply.code(problem.status).type(JSON_TYPE).send(body);
}

/**
 * Route plugin for `POST /_admin/users` (see the file comment). Register it in its own
 * context: it sets an error handler with the `{code, message}` body.
 */
export const adminRoutes: FastifyPluginAsync<AdminRouteOptions> = async (app, opts) => {
  const { admin, adminToken } = opts;
  app.setErrorHandler(sendAdminError);

  app.addHook('onRequest', async (request) => {
    const presented = request.headers[ADMIN_TOKEN_HEADER];
    if (typeof presented !== 'string' || !tokenMatches(presented, adminToken)) {
      throw new VigilError('VIGIL_ERR_UNAUTHENTICATED');
    }
  });

  // Operator surface, not part of the public API: kept out of the OpenAPI document.
  app.post(ADMIN_USERS_PATH, { schema: { hide: true } }, async (request) => {
    const body = objectBody(request.body);
    const { op } = body;
    if (!isOp(op)) {
      throw validationError({ op: [`The op field must be one of: ${ADMIN_OPS.join(', ')}.`] });
    }
    const args = body.args ?? {};
    if (typeof args !== 'object' || args === null || Array.isArray(args)) {
      throw validationError({ args: ['The args field must be a JSON object.'] });
    }
    return runAdminOp(admin, op, args as Record<string, unknown>);
  });
};
