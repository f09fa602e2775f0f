// Error types, response shapes and list helpers (filter/sort/paginate) shared by
// the Application and Client API handlers.
import type { IncomingMessage } from 'node:http';
import { randomUUID } from 'node:crypto';
import type { ValidationFailure } from './rules.ts';
import type { ApiKey, PanelState, User } from './state.ts';
import type { Wings } from './wings.ts';

/** What route handlers get: the simulated panel database and its Wings. */
export interface SimContext {
  state: PanelState;
  wings: Wings;
  /** panel base URL (APP_URL), e.g. http://127.0.0.1:8081 */
  baseUrl(): string;
}

export interface Reply {
  status: number;
  headers?: Record<string, string>;
  /** JSON body */
  body?: unknown;
  /** raw body (text/plain, octet-stream, html) */
  raw?: Buffer | string;
}

/** Request context handed to route handlers. */
export interface Ctx {
  req: IncomingMessage;
  method: string;
  url: URL;
  path: string;
  params: Record<string, string>;
  /** query after the panel's TrimStrings / ConvertEmptyStringsToNull middleware */
  query: Record<string, string | null>;
  /** JSON body after the same middleware (objects only; anything else -> {}) */
  body: Record<string, unknown>;
  /** query + body merged the way Laravel's `$request->all()` does (body wins) */
  input: Record<string, unknown>;
  raw: Buffer;
  user: User;
  key: ApiKey;
  routeName: string;
}

// ------------------------------------------------------------------ errors

export class PanelError extends Error {
  status: number;
  code: string;
  detail: string;
  headers: Record<string, string>;
  /** how Laravel renders it to a client that does not expect JSON */
  htmlKind: 'auth' | 'back' | 'page';
  constructor(
    status: number,
    code: string,
    detail: string,
    headers: Record<string, string> = {},
    htmlKind: 'auth' | 'back' | 'page' = 'page',
  ) {
    super(detail);
    this.status = status;
    this.code = code;
    this.detail = detail;
    this.headers = headers;
    this.htmlKind = htmlKind;
  }
}

export class ValidationError extends PanelError {
  failures: ValidationFailure[];
  constructor(failures: ValidationFailure[]) {
    super(422, 'ValidationException', 'The given data was invalid.', {}, 'back');
    this.failures = failures;
  }
}

/** A raw (non-panel-envelope) response, used for the Wings download endpoint. */
export class RawReply extends Error {
  reply: Reply;
  constructor(reply: Reply) {
    super('raw reply');
    this.reply = reply;
  }
}

export const GENERIC_500 = 'An unexpected error was encountered while processing this request, please try again.';
export const MODEL_NOT_FOUND = 'The requested resource could not be found on the server.';

export function notFound(detail = MODEL_NOT_FOUND): PanelError {
  return new PanelError(404, 'NotFoundHttpException', detail);
}

/** Every DisplayException (and subclasses) is a 400 (the panel's app/Exceptions/DisplayException.php). */
export function displayError(detail: string, code = 'DisplayException'): PanelError {
  return new PanelError(400, code, detail, {}, 'back');
}

export function forbidden(detail: string, code = 'AccessDeniedHttpException'): PanelError {
  return new PanelError(403, code, detail);
}

/**
 * Wings answered >= 400: the panel reuses Wings' status and, below 500, wraps the
 * Wings error (`DaemonConnectionException`).
 */
export function daemonError(status: number, wingsError: string): PanelError {
  const detail =
    status < 500
      ? `An error occurred on the remote host: ${wingsError}. (request id: ${randomUUID()})`
      : 'Could not establish a connection to the machine running this server. Please try again.';
  return new PanelError(status, 'DaemonConnectionException', detail);
}

export function errorEntry(code: string, status: number, detail: string, meta?: Record<string, unknown>): Record<string, unknown> {
  const entry: Record<string, unknown> = { code, status: String(status), detail };
  if (meta) entry.meta = meta;
  return entry;
}

export function errorBody(err: PanelError): { errors: Array<Record<string, unknown>> } {
  if (err instanceof ValidationError) {
    return {
      errors: err.failures.map((f) => errorEntry('ValidationException', 422, f.message, { source_field: f.field, rule: f.rule })),
    };
  }
  return { errors: [errorEntry(err.code, err.status, err.detail)] };
}

/**
 * Laravel only renders JSON when the request "expects JSON" (Accept contains
 * `/json` or `+json`, or an XHR accepting anything). Otherwise unauthenticated
 * requests are redirected to /auth/login, validation and DisplayExceptions
 * redirect back, and HTTP exceptions render an HTML error page (the panel's app/Exceptions/Handler.php).
 */
export function expectsJson(req: IncomingMessage): boolean {
  const accept = String(req.headers.accept ?? '');
  if (accept.includes('/json') || accept.includes('+json')) return true;
  const xhr = String(req.headers['x-requested-with'] ?? '') === 'XMLHttpRequest';
  const anyType = accept === '' || accept.split(',').some((a) => a.trim().split(';')[0] === '*/*' || a.trim().split(';')[0] === '*');
  return xhr && anyType;
}

export function renderError(err: PanelError, req: IncomingMessage, baseUrl: string): Reply {
  if (expectsJson(req)) {
    return { status: err.status, headers: { ...err.headers }, body: errorBody(err) };
  }
  if (err.htmlKind === 'auth') {
    return {
      status: 302,
      headers: { ...err.headers, location: `${baseUrl}/auth/login`, 'content-type': 'text/html; charset=UTF-8' },
      raw: redirectHtml(`${baseUrl}/auth/login`),
    };
  }
  if (err.htmlKind === 'back') {
    const back = String(req.headers.referer ?? `${baseUrl}/`);
    return {
      status: 302,
      headers: { ...err.headers, location: back, 'content-type': 'text/html; charset=UTF-8' },
      raw: redirectHtml(back),
    };
  }
  return {
    status: err.status,
    headers: { ...err.headers, 'content-type': 'text/html; charset=UTF-8' },
    raw: `<!DOCTYPE html><html><head><title>${err.status}</title></head><body><h1>${err.status}</h1><p>${escapeHtml(err.detail)}</p></body></html>`,
  };
}

function redirectHtml(to: string): string {
  const t = escapeHtml(to);
  return `<!DOCTYPE html>\n<html>\n    <head>\n        <meta charset="UTF-8" />\n        <meta http-equiv="refresh" content="0;url='${t}'" />\n\n        <title>Redirecting to ${t}</title>\n    </head>\n    <body>\n        Redirecting to <a href="${t}">${t}</a>.\n    </body>\n</html>`;
}

function escapeHtml(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

// ------------------------------------------------------------- envelopes

export interface Envelope {
  object: string;
  attributes: Record<string, unknown> | null;
}

export function item(object: string, attributes: Record<string, unknown>): Envelope {
  return { object, attributes };
}

export function nullResource(): Envelope {
  return { object: 'null_resource', attributes: null };
}

export function list(data: unknown[]): { object: 'list'; data: unknown[] } {
  return { object: 'list', data };
}

/** `?include=a,b` -> set of top-level include names (nested `a.b` keeps `a`). */
export function includes(ctx: Ctx): Set<string> {
  const raw = ctx.query.include;
  const out = new Set<string>();
  if (!raw) return out;
  for (const part of raw.split(',')) {
    const name = part.trim().split('.')[0];
    if (name) out.add(name);
  }
  return out;
}

// -------------------------------------------------- filter / sort / paginate

export type FilterFn<T> = (item: T, value: string) => boolean;

/** spatie partial filter: case-insensitive `LIKE %value%` */
/** spatie turns the strings `true`/`false` into booleans; PHP stringifies them as '1'/''. */
function boolString(value: string): string {
  return value === 'true' ? '1' : value === 'false' ? '' : value;
}

export function partial<T>(get: (item: T) => unknown): FilterFn<T> {
  return (it, value) =>
    String(get(it) ?? '')
      .toLowerCase()
      .includes(boolString(value).toLowerCase());
}

export function exact<T>(get: (item: T) => unknown): FilterFn<T> {
  return (it, value) => String(get(it) ?? '') === boolString(value);
}

export interface ListSpec<T> {
  filters: Record<string, FilterFn<T>>;
  /** null: the endpoint does not call allowedSorts(), `sort` is ignored */
  sorts: Record<string, (item: T) => string | number> | null;
}

/** Shared handler context: the simulated panel's data and its Wings. */
export interface RouteDef {
  method: string;
  /** e.g. /api/application/servers/{server}/build */
  path: string;
  /** Laravel route name (the state gate exempts `api:client:server.view`) */
  name: string;
  handler: (ctx: Ctx) => Reply | Promise<Reply>;
}

/**
 * spatie/laravel-query-builder 6.x semantics: unknown filters or
 * sorts are a 400, a value with commas is an OR of values, `true`/`false` become
 * booleans, empty values are ignored.
 */
export function applyQuery<T>(ctx: Ctx, items: T[], spec: ListSpec<T>): T[] {
  const requested: Array<[string, string]> = [];
  for (const [k, v] of Object.entries(ctx.query)) {
    const m = /^filter\[(.*)\]$/.exec(k);
    if (m && m[1] !== undefined) requested.push([m[1], v ?? '']);
  }
  const allowed = Object.keys(spec.filters);
  const unknown = requested.map(([k]) => k).filter((k) => !allowed.includes(k));
  if (unknown.length > 0) {
    throw new PanelError(
      400,
      'InvalidFilterQuery',
      `Requested filter(s) \`${unknown.join(', ')}\` are not allowed. Allowed filter(s) are \`${allowed.join(', ')}\`.`,
    );
  }
  let out = items;
  for (const [name, value] of requested) {
    if (value === '') continue;
    const fn = spec.filters[name];
    if (!fn) continue;
    const values = value.includes(',') ? value.split(',').filter((v) => v !== '') : [value];
    out = out.filter((it) => values.some((v) => fn(it, v)));
  }
  const sort = ctx.query.sort;
  if (sort && spec.sorts) {
    const sorts = spec.sorts;
    const parts = sort.split(',').filter((s) => s !== '');
    const allowedSorts = Object.keys(sorts);
    const unknownSorts = parts.map((p) => p.replace(/^-/, '')).filter((p) => !allowedSorts.includes(p));
    if (unknownSorts.length > 0) {
      throw new PanelError(
        400,
        'InvalidSortQuery',
        `Requested sort(s) \`${unknownSorts.join(', ')}\` is not allowed. Allowed sort(s) are \`${allowedSorts.join(', ')}\`.`,
      );
    }
    out = [...out].sort((a, b) => {
      for (const p of parts) {
        const desc = p.startsWith('-');
        const get = sorts[p.replace(/^-/, '')];
        if (!get) continue;
        const x = get(a);
        const y = get(b);
        if (x < y) return desc ? 1 : -1;
        if (x > y) return desc ? -1 : 1;
      }
      return 0;
    });
  }
  return out;
}

export interface PageOptions {
  defaultPerPage?: number;
  maxPerPage?: number;
  /** Laravel `->appends($request->query())` (only the client server list does it) */
  appendQuery?: boolean;
}

/** LengthAwarePaginator + fractal IlluminatePaginatorAdapter. */
export function paginate<T>(ctx: Ctx, items: T[], baseUrl: string, opts: PageOptions = {}): { data: T[]; meta: Record<string, unknown> } {
  let perPage = opts.defaultPerPage ?? 50;
  const rawPer = ctx.query.per_page;
  if (rawPer !== undefined && rawPer !== null && /^\d+$/.test(rawPer) && Number(rawPer) > 0) perPage = Number(rawPer);
  if (opts.maxPerPage !== undefined) perPage = Math.min(perPage, opts.maxPerPage);
  const rawPage = ctx.query.page;
  const page = rawPage && /^[+]?\d+$/.test(rawPage) && Number(rawPage) >= 1 ? Number(rawPage) : 1;
  const total = items.length;
  const totalPages = Math.max(1, Math.ceil(total / perPage));
  const data = items.slice((page - 1) * perPage, page * perPage);
  const path = `${baseUrl}${ctx.path}`;
  const link = (p: number): string => {
    const params = new URLSearchParams();
    if (opts.appendQuery) {
      for (const [k, v] of ctx.url.searchParams) if (k !== 'page') params.append(k, v);
    }
    params.set('page', String(p));
    return `${path}?${params.toString()}`;
  };
  const links: Record<string, string> = {};
  if (page > 1) links.previous = link(page - 1);
  if (page < totalPages) links.next = link(page + 1);
  return {
    data,
    meta: { pagination: { total, count: data.length, per_page: perPage, current_page: page, total_pages: totalPages, links } },
  };
}

// ---------------------------------------------------------------- formats

/** Carbon toAtomString in UTC: 2024-10-24T12:00:00+00:00 */
export function atom(d: Date): string {
  return d.toISOString().replace(/\.\d{3}Z$/, '+00:00');
}

/** Laravel default model serialization of a (second-precision) DB timestamp: 2024-10-24T12:00:00.000000Z */
export function laravelTs(d: Date): string {
  return d.toISOString().replace(/\.\d{3}Z$/, '.000000Z');
}
