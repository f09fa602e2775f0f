import { ERROR_STATUS, type ErrorCode } from '../errors.ts';
import type { RouteDef } from './routes.ts';

/**
 * What each operation may answer, in one place: the OpenAPI document lists exactly these
 * statuses and codes (shared/openapi/document.ts), and outside AWS the request pipeline notes
 * every response that falls outside them (shared/http/handler.ts), which fails the test file that
 * provoked it (tests/setup.ts). So the document cannot promise less than the code does.
 *
 * The codes every operation of a kind shares follow from the route's definition (credential,
 * body, path parameters, cursor, Idempotency-Key); what only the operation's own logic throws is
 * listed in its `errors` in the route table (shared/api/routes.ts).
 */
export function errorCodesOf(def: RouteDef): ErrorCode[] {
  const codes = new Set<ErrorCode>(['internal']);
  if (!def.unlimited) codes.add('rate_limited');
  if (def.auth === 'bearer') {
    codes.add('unauthorized');
    codes.add('forbidden');
  }
  if (def.body || def.query || def.params || def.idempotent) codes.add('validation_failed');
  if (def.body) codes.add('payload_too_large');
  if (def.body && !def.rawBody) {
    codes.add('invalid_json');
    codes.add('unsupported_media_type');
  }
  if (def.query && 'cursor' in def.query.shape) codes.add('invalid_cursor');
  if (def.params) codes.add('not_found');
  if (def.idempotent) {
    codes.add('idempotency_conflict');
    codes.add('conflict');
  }
  for (const code of def.errors ?? []) codes.add(code);
  return [...codes].sort((a, b) => ERROR_STATUS[a] - ERROR_STATUS[b] || a.localeCompare(b));
}

/** The error statuses of an operation, each with its codes, in status order. */
export function errorStatusesOf(def: RouteDef): Map<number, ErrorCode[]> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of errorCodesOf(def)) {
    const status = ERROR_STATUS[code];
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  return byStatus;
}

/** The codes whose answers say when to come back (`Retry-After`); the document and the check below share it. */
export const RETRY_AFTER_CODES: ReadonlySet<ErrorCode> = new Set(['rate_limited', 'operation_in_progress', 'panel_unavailable']);

/** A response an operation gave that its document does not list. */
export interface ContractBreach {
  route: string;
  status: number;
  code: string | null;
  /** Set when the status and code are listed but a documented header is missing. */
  missingHeader?: string;
}

const breaches: ContractBreach[] = [];

/** Notes a response outside the operation's documented statuses and codes (checked outside AWS only). */
export function noteResponse(
  routeId: string,
  def: RouteDef,
  status: number,
  code: string | null,
  headers: Record<string, string> = {},
): void {
  const documented =
    code === null
      ? status === (def.status ?? 200) || (status === 304 && def.cacheSeconds !== undefined)
      : code in ERROR_STATUS && ERROR_STATUS[code as ErrorCode] === status && errorCodesOf(def).includes(code as ErrorCode);
  const missingHeader = documented && RETRY_AFTER_CODES.has(code as ErrorCode) && !headers['Retry-After'] ? 'Retry-After' : undefined;
  if ((!documented || missingHeader) && !breaches.some((b) => b.route === routeId && b.status === status && b.code === code)) {
    breaches.push({ route: routeId, status, code, ...(missingHeader ? { missingHeader } : {}) });
  }
}

/** Every undocumented response noted in this process so far (and forgets them). */
export function takeContractBreaches(): ContractBreach[] {
  return breaches.splice(0);
}
