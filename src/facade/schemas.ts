/**
 * The wire shapes of `/webapi` as JSON Schema (TypeBox): the objects of CONTRACT §3, the error
 * body of CONTRACT §4 and the request parts several routes share. Fastify validates requests
 * and serializes responses with them, and @fastify/swagger turns them into the OpenAPI
 * document (`GET /webapi/openapi.json`).
 *
 * Schemas describe types; value rules (the plan's intervals, the allowed thresholds) stay in
 * the service, which phrases them (CONTRACT §4). Numbers in a body must be JSON numbers:
 * `"60"` is refused with a 422, and every numeric body field says so. Request bodies allow
 * unknown fields (CONTRACT §3: they are ignored), so none sets `additionalProperties: false`.
 *
 * Models with an `$id` are shared: {@link SHARED_SCHEMAS} are added to the root instance and
 * referenced by id (`Type.Ref`), which makes them `components.schemas` in the document.
 */
import {
  Type,
  type Static,
  type TNull,
  type TSchema,
  type TUnion,
  type TUnsafe,
} from '@sinclair/typebox';
import { CHECK_NAMES, PLANS } from '../domain/check.js';
import { EVENT_TITLES } from '../domain/events.js';

/** `T` or null (OpenAPI 3.0 output: `nullable: true`, by @fastify/swagger's conversion). */
export function Nullable<T extends TSchema>(
  schema: T,
  opts: { description?: string; examples?: unknown[] } = {},
): TUnion<[T, TNull]> {
  return Type.Union([schema, Type.Null()], opts);
}

/** A string from a fixed list, as a plain `enum` (OpenAPI 3.0 has no `const`). */
export function StringEnum<const T extends readonly string[]>(
  values: T,
  opts: { description?: string; default?: T[number] } = {},
): TUnsafe<T[number]> {
  return Type.Unsafe<T[number]>({ type: 'string', enum: [...values], ...opts });
}

/**
 * A string from a fixed list, or null. Written as a type list with `null` in the enum: the one
 * form that allows null both for Ajv and, once converted, for OpenAPI 3.0.3 (where `nullable`
 * does not add null to an `enum`).
 */
export function NullableStringEnum<const T extends readonly string[]>(
  values: T,
  opts: { description?: string } = {},
): TUnsafe<T[number] | null> {
  return Type.Unsafe<T[number] | null>({
    type: ['string', 'null'],
    enum: [...values, null],
    ...opts,
  });
}

const TIMESTAMP_PATTERN = '^[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}$';

/** `YYYY-MM-DD HH:MM:SS`, UTC (spec §2). */
export function Timestamp(description: string) {
  return Type.String({
    pattern: TIMESTAMP_PATTERN,
    description: `${description} \`YYYY-MM-DD HH:MM:SS\`, UTC.`,
    examples: ['2025-03-14 09:26:53'],
  });
}

/**
 * A {@link Timestamp} or null. The description goes on the union only, so that the OpenAPI 3.0
 * conversion can fold it into one `nullable` string schema.
 */
export function NullableTimestamp(description: string) {
  return Nullable(Type.String({ pattern: TIMESTAMP_PATTERN }), {
    description: `${description} \`YYYY-MM-DD HH:MM:SS\`, UTC.`,
  });
}

/** A resource id: a positive integer within 2^53. */
export function Id(description: string) {
  return Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description });
}

// ---- error body (CONTRACT §4) ----

/** `{"message"}`, plus `"errors": {field: [messages]}` on a 422. */
export const ErrorBody = Type.Object(
  {
    message: Type.String({
      description: 'What went wrong, for a person. Never a stack trace or a secret.',
      examples: ['The interval 30 is not available on the free plan.'],
    }),
    errors: Type.Optional(
      Type.Record(Type.String(), Type.Array(Type.String()), {
        description:
          '422 only: messages per request field (body field or query parameter), e.g. ' +
          '`{"interval": ["The interval 30 is not available on the free plan."]}`.',
      }),
    ),
  },
  { $id: 'ErrorBody', title: 'ErrorBody', description: 'Every error answer (CONTRACT §4).' },
);
export type ErrorBody = Static<typeof ErrorBody>;

// ---- resources (CONTRACT §3) ----

const percent = (window: string) =>
  Nullable(Type.Number({ minimum: 0, maximum: 100 }), {
    description: `Percent of successful runs in the last ${window}; null with no run in it.`,
  });

/** The check object (CONTRACT §3; uptime percentages: issue 6). */
export const Check = Type.Object(
  {
    id: Id('The check id, used in `/webapi/checks/{id}`.'),
    monitor_id: Id('The monitor the check belongs to.'),
    name: StringEnum(CHECK_NAMES, { description: 'The kind of check (spec §1).' }),
    enabled: Type.Boolean({ description: 'A disabled check does not run.' }),
    interval: Type.Integer({ description: 'Seconds between runs.', examples: [300] }),
    notification_threshold: Type.Integer({
      description:
        'Seconds a site must stay down after detection before the Down webhook is sent ' +
        '(uptime checks; 0 = at verification).',
      examples: [0],
    }),
    status: NullableStringEnum(['ok', 'nok'], {
      description: 'Result of the latest run; null before the first run.',
    }),
    last_check_at: NullableTimestamp('When the latest run happened; null before the first.'),
    last_location: Nullable(Type.String(), {
      description: 'Probe location of the latest run; null before the first run.',
    }),
    last_error: Nullable(Type.String(), {
      description:
        'Why the latest run failed, in words (`503 - Service Unavailable`, `Certificate ' +
        'expired on …`, `Cannot connect: …`); null when it passed or never ran.',
    }),
    uptime: Type.Object(
      { '24h': percent('24 hours'), '7d': percent('7 days'), '30d': percent('30 days') },
      { description: 'Percent of successful runs (0–100) per window; null with no run in it.' },
    ),
    expiry_threshold_days: Type.Optional(
      Nullable(Type.Integer(), {
        description:
          'certificate_health checks only (absent on uptime checks): send "Expires soon" this ' +
          'many days before expiry; null = never.',
      }),
    ),
  },
  { $id: 'Check', title: 'Check', description: 'A check of a monitor (CONTRACT §3).' },
);

/** The monitor object (CONTRACT §3). */
export const Monitor = Type.Object(
  {
    id: Id('The monitor id, used in `/webapi/monitors/{id}`.'),
    url: Type.String({ description: 'The watched http:// or https:// URL.' }),
    alias: Type.String({ description: 'Display name; the URL’s host unless one was given.' }),
    checks: Type.Array(Type.Ref(Check), {
      description: 'uptime, and certificate_health for https:// URLs.',
    }),
  },
  { $id: 'Monitor', title: 'Monitor', description: 'A watched website and its checks.' },
);

/** `GET` / `PUT /webapi/account` (CONTRACT §3). */
export const Account = Type.Object(
  {
    id: Id('The account id.'),
    email: Type.String(),
    plan: StringEnum(PLANS, { description: 'Decides the allowed intervals (CONTRACT §2).' }),
    webhook_url: Nullable(Type.String(), { description: 'Where webhooks go; null = nowhere.' }),
    api_enabled: Type.Boolean({ description: 'Always true in an answer: else it is a 403.' }),
  },
  { $id: 'Account', title: 'Account', description: 'The account the token belongs to.' },
);

/** One run of a check (issue 6). */
export const CheckResult = Type.Object(
  {
    checked_at: Timestamp('When the run started.'),
    location: Type.String({ description: 'Name of the probe location that ran it.' }),
    status: StringEnum(['ok', 'nok']),
    http_status_code: Type.Integer({
      description: 'Final HTTP status; 0 when no HTTP answer came (and on certificate checks).',
    }),
    response_time_ms: Type.Number({ minimum: 0, description: 'Milliseconds.' }),
    error: Nullable(Type.String(), {
      description: 'Why the run failed (`503 - Service Unavailable`, `0 - Connection refused`…).',
    }),
  },
  { $id: 'CheckResult', title: 'CheckResult', description: 'One run of a check.' },
);

/** One POST of a webhook (issue 4). */
export const WebhookAttempt = Type.Object(
  {
    id: Id('`X-Service-Webhook` of this POST.'),
    try: Type.Integer({ minimum: 1, description: '`X-Service-Current-Try`.' }),
    at: Timestamp('When it was sent.'),
    url: Type.String({ description: 'Where it was sent.' }),
    status: Nullable(Type.Integer(), { description: 'HTTP status answered; null when none came.' }),
    error: Nullable(Type.String(), { description: 'Why it failed, or null.' }),
    duration_ms: Type.Number({ minimum: 0 }),
  },
  { $id: 'WebhookAttempt', title: 'WebhookAttempt', description: 'One POST of a webhook.' },
);

/** A webhook event with its attempts (issue 4). */
export const Webhook = Type.Object(
  {
    id: Id('The webhook id, used in `/webapi/webhooks/{id}/redeliver`.'),
    type: StringEnum(Object.values(EVENT_TITLES), { description: 'Webhook type (spec §6).' }),
    monitor_id: Id('The monitor it is about.'),
    check_id: Id('The check it is about.'),
    status: StringEnum(['pending', 'delivered', 'failed'], {
      description: 'pending until answered 200 (delivered) or given up after 3 days (failed).',
    }),
    created_at: Timestamp('When the event happened.'),
    next_attempt_at: NullableTimestamp('When the next try is due (pending only); else null.'),
    parent_webhook: Nullable(Type.Integer({ minimum: 1 }), {
      description: '`X-Service-Parent-Webhook`: id of the first POST; null before any.',
    }),
    body: Type.Unknown({
      description: 'The signed body, parsed: `{"check": {…}, "monitor": {…}}` (spec §6).',
    }),
    signature: Type.String({ description: '`X-Service-Signature` sent with every try.' }),
    attempts: Type.Array(Type.Ref(WebhookAttempt)),
  },
  { $id: 'Webhook', title: 'Webhook', description: 'A webhook event and its deliveries.' },
);

/** A page of webhooks, newest first (issue 4). */
export const WebhookPage = Type.Object(
  {
    data: Type.Array(Type.Ref(Webhook)),
    page: Type.Integer({ minimum: 1 }),
    per_page: Type.Integer({ minimum: 1 }),
    total: Type.Integer({ minimum: 0, description: 'Webhooks matching the filter, all pages.' }),
  },
  { $id: 'WebhookPage', title: 'WebhookPage', description: 'A page of webhooks, newest first.' },
);

/** Shared models, added to the root instance once (see {@link registerSchemas}). */
export const SHARED_SCHEMAS = [
  ErrorBody,
  Check,
  Monitor,
  Account,
  CheckResult,
  WebhookAttempt,
  Webhook,
  WebhookPage,
] as const;

// ---- request parts ----

/** Path parameters of the `/{id}` routes. */
export const IdParams = Type.Object({
  id: Type.Integer({
    minimum: 1,
    maximum: Number.MAX_SAFE_INTEGER,
    description:
      'A positive integer in plain decimal. Anything else (`abc`, `0`, `01`, `1.5`) names no ' +
      'resource and is a 404, like an unknown id or another user’s.',
  }),
});
export type IdParams = Static<typeof IdParams>;

/** Note shared by every numeric body field (CONTRACT §4, issue 6). */
export const NUMBER_NOTE = 'A JSON number: a string such as "60" is refused with a 422.';

// ---- responses ----

/** Success body of the spec's actions: always `[]` (spec §4). */
export const EmptyArray = Type.Array(Type.Unknown(), {
  maxItems: 0,
  description: 'Always `[]` (spec §4).',
});

/** Rate limit headers on every `/webapi` response (CONTRACT §4). */
const RATE_HEADERS = {
  'x-ratelimit-limit': { type: 'integer', description: 'Requests allowed per minute.' },
  'x-ratelimit-remaining': { type: 'integer', description: 'Requests left in this minute.' },
  'x-ratelimit-reset': { type: 'integer', description: 'Seconds until the window resets.' },
} as const;

/** When each error status happens; routes may say it more precisely. */
const ERROR_DESCRIPTIONS = {
  400: 'The body is not JSON, or not a JSON object.',
  401: 'No token, or an unknown one: `{"message":"Unauthenticated."}`.',
  403: 'The token is valid but the account’s API access is deactivated.',
  404: 'Not found.',
  409: 'Conflict.',
  413: 'The body is larger than 64 KiB.',
  415: 'The body is not JSON: send `Content-Type: application/json`.',
  422: 'A body field or query parameter has a wrong type or value; `errors` names each field.',
  429:
    'Too many requests: over the per-token limit (default 120 a minute), or too many failed ' +
    'authentications from this address. `Retry-After` says when to try again.',
  500: '`{"message":"Server error."}`; the cause is logged, never returned.',
  503: 'Not ready.',
} as const satisfies Partial<Record<number, string>>;

/** An HTTP error status a route documents. */
export type ErrorStatus = keyof typeof ERROR_DESCRIPTIONS;

/** Statuses every authenticated `/webapi` route can answer. */
export const AUTH_ERRORS = [401, 403, 429, 500] as const satisfies readonly ErrorStatus[];

/** Statuses of a route that reads a JSON body. */
export const BODY_ERRORS = [400, 413, 415, 422] as const satisfies readonly ErrorStatus[];

/**
 * Statuses of a route that takes no body (`…/disable`, `DELETE`…) but, being a POST or DELETE,
 * reads one if sent, up to the limit, and drops it.
 */
export const BODYLESS_ERRORS = [400, 413, 415] as const satisfies readonly ErrorStatus[];

/** How {@link BODYLESS_ERRORS} come about. */
export const BODYLESS_TEXT = {
  400: 'The Content-Length header does not match the body.',
  415:
    'The Content-Type header is not a valid media type. Any valid one is accepted: the body ' +
    'is ignored.',
} as const;

/**
 * The `response` part of a route schema: the success status with its schema, and the error
 * statuses with the {@link ErrorBody} schema. `overrides` words an error status for the route
 * (e.g. which resource a 404 is about). `rateLimited: false` leaves out the X-RateLimit-*
 * headers (the operations routes, outside the limiter).
 */
export function responses(
  success: Record<number, TSchema>,
  errors: readonly ErrorStatus[],
  opts: { overrides?: Partial<Record<ErrorStatus, string>>; rateLimited?: boolean } = {},
): Record<number, TSchema> {
  const headers = opts.rateLimited === false ? undefined : RATE_HEADERS;
  const out: Record<number, TSchema> = {};
  for (const [status, schema] of Object.entries(success)) {
    out[Number(status)] = headers ? { ...schema, headers } : schema;
  }
  for (const status of [...new Set(errors)].sort((a, b) => a - b)) {
    const description: string = opts.overrides?.[status] ?? ERROR_DESCRIPTIONS[status];
    const schema: Record<string, unknown> = { ...Type.Ref(ErrorBody), description };
    if (headers) {
      schema.headers =
        status === 429
          ? { ...headers, 'retry-after': { type: 'integer', description: 'Seconds to wait.' } }
          : headers;
    }
    out[status] = schema as TSchema;
  }
  return out;
}
