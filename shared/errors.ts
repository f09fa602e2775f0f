/**
 * Every failure the API reports is an ApiError: a stable machine code, an HTTP status,
 * a message safe to show to the caller and optional details. Anything else that escapes a
 * handler becomes `internal` 500 with no details (shared/http/handler.ts maps it to the response).
 */
export const ERROR_STATUS = {
  validation_failed: 400,
  invalid_json: 400,
  no_client_key: 400,
  invalid_cursor: 400,
  invalid_signature: 400,
  unauthorized: 401,
  insufficient_credit: 402,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  idempotency_conflict: 409,
  operation_in_progress: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  limit_exceeded: 422,
  rate_limited: 429,
  internal: 500,
  panel_error: 502,
  payment_provider_error: 502,
  payments_unavailable: 503,
  no_capacity: 503,
  panel_unavailable: 503,
  panel_timeout: 504,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly statusCode: number;
  readonly details: unknown;
  readonly headers: Record<string, string>;

  constructor(code: ErrorCode, message: string, details?: unknown, headers: Record<string, string> = {}) {
    super(message);
    this.name = 'ApiError';
    this.code = code;
    this.statusCode = ERROR_STATUS[code];
    this.details = details;
    this.headers = headers;
  }
}

export const isApiError = (value: unknown): value is ApiError => value instanceof ApiError;

export const notFound = (what = 'Resource'): ApiError => new ApiError('not_found', `${what} not found`);
