/**
 * Every error Vigil raises, one table: stable code → HTTP status and default message
 * (CONTRACT §4). Tests assert codes, not wording. Across a thread or gRPC boundary an error
 * travels as plain data (`VigilErrorData`).
 */

export const ERRORS = {
  VIGIL_ERR_UNAUTHENTICATED: { status: 401, message: 'Unauthenticated.' },
  VIGIL_ERR_API_DISABLED: { status: 403, message: 'API access is disabled for this account.' },
  VIGIL_ERR_CHECK_NOT_FOUND: { status: 404, message: 'Check not found.' },
  VIGIL_ERR_MONITOR_NOT_FOUND: { status: 404, message: 'Monitor not found.' },
  VIGIL_ERR_USER_NOT_FOUND: { status: 404, message: 'User not found.' },
  VIGIL_ERR_WEBHOOK_NOT_FOUND: { status: 404, message: 'Webhook not found.' },
  VIGIL_ERR_WEBHOOK_PENDING: { status: 409, message: 'The webhook is still being delivered.' },
  VIGIL_ERR_ROUTE_NOT_FOUND: { status: 404, message: 'Not found.' },
  VIGIL_ERR_METHOD_NOT_ALLOWED: { status: 405, message: 'Method not allowed.' },
  VIGIL_ERR_BAD_REQUEST: { status: 400, message: 'The request body must be a JSON object.' },
  VIGIL_ERR_EMAIL_TAKEN: { status: 409, message: 'A user with this email already exists.' },
  VIGIL_ERR_VALIDATION: { status: 422, message: 'The given data was invalid.' },
  VIGIL_ERR_PAYLOAD_TOO_LARGE: { status: 413, message: 'The request body is larger than 64 KiB.' },
  VIGIL_ERR_UNSUPPORTED_MEDIA_TYPE: { status: 415, message: 'The request body must be JSON.' },
  VIGIL_ERR_RATE_LIMITED: { status: 429, message: 'Too many requests.' },
  VIGIL_ERR_INTERNAL: { status: 500, message: 'Server error.' },
  VIGIL_ERR_UNAVAILABLE: { status: 503, message: 'The service is not ready.' },
  VIGIL_ERR_CONFIG: { status: 400, message: 'Invalid configuration.' },
  VIGIL_ERR_DATA_DIR_LOCKED: { status: 409, message: 'The data directory is in use.' },
  VIGIL_ERR_PROBE_UNAUTHENTICATED: { status: 401, message: 'Probe token rejected.' },
  VIGIL_ERR_PROTOCOL_VERSION: { status: 400, message: 'Unsupported probe protocol version.' },
} as const;

export type ErrorCode = keyof typeof ERRORS;

import type { FieldErrors } from '../domain/validate.js';

export type { FieldErrors };

/** An error as plain data, for crossing thread, process and gRPC boundaries. */
export interface VigilErrorData {
  code: ErrorCode;
  message: string;
  retryable: boolean;
}

/**
 * An error of Vigil's own. `status` is the HTTP status from the table; `fields` carries
 * field-level messages for VIGIL_ERR_VALIDATION.
 */
export class VigilError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly fields: FieldErrors | undefined;
  readonly retryable: boolean;

  constructor(
    code: ErrorCode,
    message?: string,
    opts: { fields?: FieldErrors; retryable?: boolean; cause?: unknown } = {},
  ) {
    super(message ?? ERRORS[code].message, { cause: opts.cause });
    this.name = 'VigilError';
    this.code = code;
    this.status = ERRORS[code].status;
    this.fields = opts.fields;
    this.retryable = opts.retryable ?? false;
  }

  toData(): VigilErrorData {
    return { code: this.code, message: this.message, retryable: this.retryable };
  }
}

/**
 * A 422 with field errors; the message is the first field message, like the API examples
 * (`The interval 30 is not available on the free plan.`).
 */
export function validationError(fields: FieldErrors): VigilError {
  const first = Object.values(fields)[0]?.[0];
  return new VigilError('VIGIL_ERR_VALIDATION', first, { fields });
}
