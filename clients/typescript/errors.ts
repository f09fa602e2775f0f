import type { components, operations } from './schema.ts';

/** The body a status code of `R` (an operation's `responses`) carries, for the 4xx and 5xx ones only. */
type ErrorBodies<R> = {
  [S in keyof R]: `${S & (number | string)}` extends `4${string}` | `5${string}` | 'default'
    ? R[S] extends { content: { 'application/json': infer Body } }
      ? Body
      : never
    : never;
}[keyof R];
/** What an operation can fail with: `OperationError<'createServer'>['error']['code']` is the codes the document lists for it. */
export type OperationError<Id extends keyof operations> = ErrorBodies<operations[Id]['responses']>;
/** The body of every failure, whatever the operation or status: `{ error: { code, message, details? } }`. */
export type ErrorEnvelope = { [Id in keyof operations]: OperationError<Id> }[keyof operations];
/** Every error code the document lists. */
export type ErrorCode = ErrorEnvelope['error']['code'];
/** A named schema of the document: `Schema<'Server'>`. */
export type Schema<Name extends keyof components['schemas']> = components['schemas'][Name];

/** One bad field: `body.ramMb`, `query.limit`, `path.id`, … and what is wrong with it. */
export interface FieldIssue {
  field: string;
  message: string;
}

/** Why a node could not take the server (`no_capacity`). */
export interface CapacityRejection {
  instanceId: string;
  nodeId: number;
  nodeName: string;
  region: string | null;
  /** The document lists the reasons once, on the quote's rejected nodes. */
  reason: components['schemas']['Quote']['placement']['rejected'][number]['reason'];
  freeMemoryMb: number;
  freeDiskMb: number;
}

/**
 * The `details` of each error code whose details the API documents (docs/api.md, the error table
 * of the OpenAPI document). The document states them in prose only (its schema says `details` is
 * any object), so they are written here by hand; a code not listed has `details: unknown`.
 * Fields a code sets only in some of its cases are optional.
 */
export interface ErrorDetailsByCode {
  /** Every invalid field. */
  validation_failed: { issues: FieldIssue[] };
  /** The request that could not be placed and each node's reason. */
  no_capacity: {
    request: { ramMb: number; diskMb: number; region?: string | null; instanceId?: string };
    candidates: CapacityRejection[];
  };
  /**
   * What the change needs and what the balance holds. A server that may not run because the
   * balance is at or below zero gives `balanceCents` only.
   */
  insufficient_credit: {
    balanceCents: number;
    requiredCents?: number;
    hourlyCentsAfter?: number;
    hourlyMillicentsAfter?: number;
    runwayHours?: number;
  };
  /** Which ceiling refused: the credential's own (`client`) or the account's credentials together (`account`). */
  rate_limited: { limit: number; retryAfterSeconds: number; scope: 'client' | 'account' };
  /** Which limit: platform resource caps (`issues`), the server count, the key or endpoint count (`limit`), or the monthly budget. */
  limit_exceeded: {
    issues?: FieldIssue[];
    serverCount?: number;
    maxServersPerAccount?: number;
    limit?: number;
    monthlyCapCents?: number;
    spentCents?: number;
    projectedCents?: number;
  };
  /** The panels that did not answer, when to try again, and what the panel said (a panel call refused). */
  panel_unavailable: {
    instances?: { instanceId: string; retryAfterSeconds: number }[];
    retryAfterSeconds?: number;
    panelStatus?: number | null;
  };
  /** The scope the credential lacks (and the event type, for a webhook endpoint's `events`). */
  forbidden: { requiredScope?: string; eventType?: string };
}

/** The details of `C`: typed for the codes in ErrorDetailsByCode, `unknown` for the rest. */
export type ErrorDetails<C extends string> = C extends keyof ErrorDetailsByCode ? ErrorDetailsByCode[C] : unknown;

/**
 * The error envelope as a union discriminated by `code`, so that checking the code types the
 * details: `if (e.error.code === 'no_capacity') e.error.details?.candidates`.
 */
export type TypedErrorEnvelope<C extends ErrorCode = ErrorCode> = {
  [K in C]: { error: { code: K; message: string; details?: ErrorDetails<K> } };
}[C];

/** The error a call returned, with its details typed by code (no check is made: the service is trusted to send what it documents). */
export function typedError(error: ErrorEnvelope): TypedErrorEnvelope;
export function typedError(error: ErrorEnvelope | undefined): TypedErrorEnvelope | undefined;
export function typedError(error: ErrorEnvelope | undefined): TypedErrorEnvelope | undefined {
  return error as TypedErrorEnvelope | undefined;
}

/**
 * What the helpers (`paginate`, `waitFor`) throw when the API answers with an error: the status,
 * the code, the message, the typed details and the request id to quote.
 */
export class ControlPlaneError extends Error {
  readonly status: number;
  readonly code: ErrorCode | 'unexpected_response';
  readonly details: unknown;
  readonly requestId: string | null;
  readonly body: TypedErrorEnvelope | undefined;

  constructor(response: Response, body: unknown) {
    const envelope = isEnvelope(body) ? (body as TypedErrorEnvelope) : undefined;
    super(envelope ? `${response.status} ${envelope.error.code}: ${envelope.error.message}` : `Unexpected response ${response.status}`);
    this.name = 'ControlPlaneError';
    this.status = response.status;
    this.code = envelope?.error.code ?? 'unexpected_response';
    this.details = envelope?.error.details;
    this.requestId = response.headers.get('x-request-id');
    this.body = envelope;
  }

  /** True when this is code `C`, typing `details` accordingly. */
  is<C extends ErrorCode>(code: C): this is ControlPlaneError & { code: C; details: ErrorDetails<C> | undefined } {
    return this.code === code;
  }
}

function isEnvelope(body: unknown): boolean {
  const error = (body as { error?: { code?: unknown; message?: unknown } } | null)?.error;
  return typeof error?.code === 'string' && typeof error.message === 'string';
}
