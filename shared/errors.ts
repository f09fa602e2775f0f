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
  panel_already_registered: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  limit_exceeded: 422,
  plan_mismatch: 422,
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

/** What each code means to a caller: the OpenAPI document's description and example of it. */
export const ERROR_MEANING: Record<ErrorCode, string> = {
  validation_failed: 'The request is invalid; `details.issues` lists every bad field.',
  invalid_json: 'The request body is not valid JSON.',
  no_client_key: "The server's instance has no client key, so power, console, files and live usage are unavailable.",
  invalid_cursor: 'The cursor is not valid for this listing (tampered with, or from another listing or caller).',
  invalid_signature: 'The webhook signature is missing, wrong or too old.',
  unauthorized: 'The credential is missing, malformed, expired or revoked.',
  insufficient_credit: 'The balance does not cover what this would cost; top up first.',
  forbidden: 'The credential lacks the scope this needs, or the caller is not an admin.',
  not_found: 'No such resource, or it belongs to another account (answered alike).',
  method_not_allowed: 'The path exists but not with this method.',
  conflict: 'The resource is not in a state that allows this (details in the message).',
  idempotency_conflict: 'This Idempotency-Key was used with a different request.',
  operation_in_progress: 'Another change to this server is running; retry after `Retry-After` seconds.',
  panel_already_registered:
    'This panel (the same nodes, whatever the URL) is registered already; `details.instanceId` names that instance.',
  payload_too_large: 'The request body is larger than 1 MiB.',
  unsupported_media_type: 'The body must be sent as JSON with `Content-Type: application/json`.',
  limit_exceeded: 'Above a limit the platform sets (server count, memory, CPU, disk or backups per server).',
  plan_mismatch: 'The body does not match its plan (`details.issues`), or the plan is not on sale, or plans only and none given.',
  rate_limited: 'Too many requests; retry after `Retry-After` seconds.',
  internal: 'An unexpected failure; quote the request id.',
  panel_error: 'The panel refused or failed the request in a way a retry will not fix.',
  payment_provider_error: 'The payment provider failed; nothing was charged.',
  payments_unavailable: 'Payments are not configured on this platform.',
  no_capacity: "No node has room for this server; `details` gives each node's reason.",
  panel_unavailable: 'The panel is unreachable, overloaded or its call budget is spent; retry after `Retry-After` seconds.',
  panel_timeout: 'The panel did not answer in time; the change may or may not have happened (read it back).',
};

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
