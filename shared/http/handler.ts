import { createHash, randomUUID } from 'node:crypto';
import middy from '@middy/core';
import httpHeaderNormalizer from '@middy/http-header-normalizer';
import httpJsonBodyParser from '@middy/http-json-body-parser';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import type * as z from 'zod';
import type { Group, RouteDef } from '../api/route-def.ts';
import type { Routes, RoutesOfGroup, RouteId } from '../api/routes.ts';
import type { Principal } from '../auth/principal.ts';
import { authenticate, bearerToken } from '../auth/authenticate.ts';
import { ANONYMOUS_CALLER, PLATFORM_CALLER, runAsCaller } from '../instances/caller.ts';
import { requestDeadline, withDeadline } from '../panel/deadline.ts';
import { touchLastUsed } from '../api-keys/last-used.ts';
import { requestCeilingOf } from '../settings/limits.ts';
import { recordActivity } from '../audit/index.ts';
import type { SharedAccessOfRoute, SharedAccess } from '../servers/share-access.ts';
import { getConfig } from '../config/env.ts';
import { errorFields, logger } from '../observability/logger.ts';
import { ApiError, isApiError, type ErrorCode } from '../errors.ts';
import { noteResponse } from '../api/contract.ts';
import { compileTable, type Matcher } from './match.ts';
import { securityHeaders } from './security-headers.ts';
import { assertWithinLimit, consumeRateLimit, rateLimitHeaders, type RateLimitState } from './rate-limit.ts';
import type { ApiKeyHashItem } from '../db/items.ts';
import {
  claimIdempotencyKey,
  completeIdempotencyKey,
  releaseIdempotencyKey,
  requestFingerprint,
  validateIdempotencyKey,
} from './idempotency.ts';

/**
 * The one request pipeline every endpoint group shares, in named stages numbered as the steps of
 * ARCHITECTURE.md §5: request id (1) → route match (2; 404/405) → `admitCaller`: credential, rate
 * limit, scope (3–4; 401/429/403) → `parseInput`: JSON body and zod validation (5; 400/413/415)
 * → `claimIdempotency` (6; replay/409) → the route's implementation (7) → `answer`: the response,
 * checked against its schema outside AWS, completing the idempotency record (8) → `settle`:
 * contract note and activity log (9). Every failure leaves as the error envelope (10); anything
 * unexpected as `internal` 500 without internals.
 */
export const MAX_BODY_BYTES = 1_048_576;

type Infer<T> = T extends z.ZodType ? z.output<T> : Record<string, never>;

export interface AuditNote {
  /** The activity-log action when the call did one of the route's several things (PATCH a server: `servers.rename`); else the route's `audit`. */
  action?: string;
  target?: string;
  details?: Record<string, unknown>;
}

export interface RouteRequest<R extends RouteDef> {
  params: Infer<R['params']>;
  query: Infer<R['query']>;
  body: Infer<R['body']>;
  principal: R['auth'] extends 'bearer' ? Principal : undefined;
  requestId: string;
  sourceIp: string | null;
  /** Scheme and host the caller used, for links in responses. */
  baseUrl: string;
  headers: Record<string, string | undefined>;
  /** The implementation may name the target of a mutation for the activity log. */
  audit: AuditNote;
  /**
   * Set when the caller acts on another account's server through a share (shared/servers/share-access.ts):
   * `principal.accountId` is then the owner's, the real caller is `sharedAccess.actorAccountId`.
   */
  sharedAccess?: SharedAccess;
}

export interface RawResponse {
  contentType: string;
  /** Text, or bytes (a PDF): API Gateway takes those base64-encoded and decodes them for the caller. */
  body: string | Uint8Array;
  cacheSeconds?: number;
  /** Sent as an attachment with this file name (Content-Disposition). */
  filename?: string;
}

export interface StatusResponse<T> {
  /** Lets an implementation answer with a status other than the route's (e.g. 200 for a replayed create). */
  statusOverride: number;
  body: T;
}

type Result<R extends RouteDef> = R['raw'] extends true ? RawResponse : z.input<R['response']> | StatusResponse<z.input<R['response']>>;

export type Implementations<G extends Group> = {
  [K in RoutesOfGroup<G>]: (req: RouteRequest<Routes[K]>) => Promise<Result<Routes[K]>>;
};

type Event = APIGatewayProxyEventV2;
type Response = APIGatewayProxyStructuredResultV2 & { statusCode: number; headers: Record<string, string> };

/** A group's own routes, as its module defines them (`serverRoutes` in shared/api/routes/servers.ts). */
export type GroupRoutes<G extends Group> = { [K in RoutesOfGroup<G>]: Routes[K] };

export interface GroupHandlerOptions {
  /**
   * The whole route table's matcher, for requests outside the group's routes: in AWS only the
   * public function gets those (API Gateway's `$default` route, as the local API sends them), and
   * only it passes this (shared/http/router.ts). The whole table tells 405 (a known path, another
   * method; with Allow) from 404; a route of another group answers 404. Without it, the group's own
   * table answers (404, or 405 on its own paths), and the table of every group stays out of the bundle.
   */
  unrouted?: () => Matcher;
  /**
   * Step 5b's check (shared/servers/share-access.ts `sharedAccessOfRoute`), passed only by the groups
   * serving routes of one server (servers, server-tools), so the permission table stays out of the
   * other functions. Without it a route acts for its caller alone: another account's server is 404.
   */
  sharedAccess?: SharedAccessOfRoute;
}

/** The handler of one group's function, given the group's own routes (its module in shared/api/routes/). */
export function createGroupHandler<G extends Group>(
  group: G,
  routes: GroupRoutes<G>,
  implementations: Implementations<G>,
  options: GroupHandlerOptions = {},
) {
  const matchOwn = compileTable(routes as Record<string, RouteDef>);
  // Compiled with the first request outside the group's routes. (In a bundle the table holds no schemas, infra/bundle.ts.)
  let matchAny: Matcher | undefined;
  const match = async (method: string, path: string) => {
    try {
      return matchOwn(method, path);
    } catch (err) {
      if (!isApiError(err) || !options.unrouted) throw err;
      matchAny ??= options.unrouted();
      const route = matchAny(method, path);
      if (route.def.group !== group) throw new ApiError('not_found', `No route for ${method} ${path}`);
      return route;
    }
  };
  const impls = implementations as unknown as Record<RouteId, (req: RouteRequest<RouteDef>) => Promise<unknown>>;

  const core = async (event: Event, context: Context): Promise<Response> => {
    const deadline = requestDeadline(Date.now(), context.getRemainingTimeInMillis?.());
    const requestId = event.requestContext?.requestId || context.awsRequestId || randomUUID();
    const sourceIp = event.requestContext?.http?.sourceIp ?? null;
    const headers = event.headers as Record<string, string | undefined>;
    const method = event.requestContext.http.method.toUpperCase();
    const path = event.rawPath || event.requestContext.http.path;
    const state: RequestState = { audit: {} };

    try {
      const matched = await match(method, path);
      state.route = matched;
      const caller = await admitCaller(matched.def, headers, sourceIp, state);
      // In a Lambda bundle the route's request schemas load with its first request (infra/bundle.ts).
      const { requestSchemas } = matched.def;
      const route = requestSchemas ? { ...matched, def: { ...matched.def, ...(await requestSchemas()) } } : matched;
      state.route = route;
      const input = parseInput(route.def, route.params, event);
      const sharedAccess = await resolveServerAccess(route, input.params, state, options.sharedAccess);
      const replay = await claimIdempotency(route.def, headers, method, path, input.body, state);
      if (replay) return json(replay.statusCode, replay.body, requestId, state.rate, { 'Idempotent-Replayed': 'true' });

      const [result] = await Promise.all([
        // Panel calls made for this request count against this account's share of the panel's budget;
        // the dev routes stand in for the platform's own schedulers (billing pass, reconciler).
        runAsCaller(route.def.group === 'dev' ? PLATFORM_CALLER : (state.principal?.accountId ?? ANONYMOUS_CALLER), () =>
          withDeadline(deadline, () =>
            impls[route.id]({
              ...input,
              // Through a share the call acts on the owner's server (the owner's credit and budget); everything
              // keyed by the caller (rate limit, panel budget share, idempotency, the activity's actor) stays the caller's.
              principal: (sharedAccess && state.principal
                ? { ...state.principal, accountId: sharedAccess.ownerAccountId }
                : state.principal) as undefined,
              requestId,
              sourceIp,
              baseUrl: baseUrlOf(event, headers),
              headers,
              audit: state.audit,
              ...(sharedAccess ? { sharedAccess } : {}),
            }),
          ),
        ),
        // Bookkeeping only: a failed lastUsedAt write must not fail the request.
        caller.keyItem
          ? touchLastUsed(caller.keyItem).catch((e) => logger.warn('lastUsedAt write failed', { requestId, ...errorFields(e) }))
          : undefined,
      ]);

      const response = await answer(route, result, requestId, state, headers['if-none-match']);
      await settle(state, response, null, requestId, sourceIp);
      return response;
    } catch (err) {
      const response = errorResponse(err, requestId, state.rate);
      if (state.idempotency) await releaseIdempotencyKey(state.idempotency.accountId, state.idempotency.key).catch(() => undefined);
      await settle(state, response, isApiError(err) ? err.code : 'internal', requestId, sourceIp);
      return response;
    }
  };

  return middy<Event, Response, Error, Context>({ timeoutEarlyInMillis: 0 })
    .use(httpHeaderNormalizer())
    .use(securityHeaders())
    .use({
      // Safety net: anything that escapes the pipeline above still leaves as the envelope.
      onError: async (request) => {
        request.response = errorResponse(request.error, request.context?.awsRequestId ?? randomUUID(), undefined);
      },
    })
    .handler(core);
}

/**
 * Step 5b, shared access: on a route of one server (`/v1/servers/:id…`), a caller holding a share of
 * another account's server acts on it when the share allows the route (shared/api/server-permissions.ts),
 * else 403; a caller without a share goes on as always (the route's own 404 for another account's server).
 */
async function resolveServerAccess(
  route: { id: RouteId; def: RouteDef },
  params: Record<string, unknown>,
  state: RequestState,
  check: SharedAccessOfRoute | undefined,
): Promise<SharedAccess | undefined> {
  if (!state.principal || !check) return undefined;
  state.sharedAccess = await check(state.principal, { id: route.id, path: route.def.path }, params?.id);
  return state.sharedAccess;
}

/** What one request has established so far; each stage of the pipeline adds to it. */
interface RequestState {
  route?: { id: RouteId; def: RouteDef };
  principal?: Principal;
  sharedAccess?: SharedAccess;
  rate?: RateLimitState;
  idempotency?: { accountId: string; key: string };
  audit: AuditNote;
}

/**
 * Steps 3–4, credential and rate limit: who calls (401), within which limits (429), with which
 * rights (403). The credential's own limit and its account's ceiling are counted in the account's
 * item by one write every few requests (shared/http/rate-limit.ts); a request without a credential,
 * or whose credential is refused, counts against its source IP, so guessing credentials is limited
 * like anything else.
 */
async function admitCaller(
  def: RouteDef,
  headers: Record<string, string | undefined>,
  sourceIp: string | null,
  state: RequestState,
): Promise<{ keyItem?: ApiKeyHashItem }> {
  const countByIp = async () => {
    state.rate = await consumeRateLimit(`ip:${sourceIp ?? 'unknown'}`);
    assertWithinLimit(state.rate);
  };
  if (def.auth !== 'bearer') {
    if (!def.unlimited) await countByIp();
    return {};
  }
  let token: string;
  let auth: Awaited<ReturnType<typeof authenticate>>;
  try {
    token = bearerToken(headers.authorization);
    auth = await authenticate(token);
  } catch (err) {
    if (isApiError(err) && (err.code === 'unauthorized' || err.code === 'forbidden')) await countByIp();
    throw err;
  }
  state.principal = auth.principal;
  // Admins count too: the ceiling protects the table and the functions from any one account
  // (an admin account that needs more gets an override like any other).
  const { accountId } = auth.principal;
  // The ceiling is read only when a claim of the counter is due (most requests spend units held).
  state.rate = await consumeRateLimit(`cred:${createHash('sha256').update(token).digest('hex').slice(0, 32)}`, undefined, {
    accountId,
    limit: () => requestCeilingOf(accountId),
  });
  assertWithinLimit(state.rate);
  authorize(def, auth.principal);
  return { keyItem: auth.keyItem };
}

/**
 * Step 6, the Idempotency-Key: a repeated request gets the stored answer (returned here, nothing
 * else runs); a first one claims the key, completed with the answer or released on failure.
 */
async function claimIdempotency(
  def: RouteDef,
  headers: Record<string, string | undefined>,
  method: string,
  path: string,
  body: unknown,
  state: RequestState,
): Promise<{ statusCode: number; body: unknown } | undefined> {
  const header = headers['idempotency-key'];
  if (!def.idempotent || header === undefined || !state.principal) return undefined;
  const key = validateIdempotencyKey(header);
  const replay = await claimIdempotencyKey(state.principal.accountId, key, requestFingerprint(method, path, body));
  if (replay) return replay;
  state.idempotency = { accountId: state.principal.accountId, key };
  return undefined;
}

/**
 * In AWS the address is API Gateway's own domain (never a client-sent X-Forwarded-Host, which would
 * let a caller steer the links in responses); locally, the Host the caller used.
 */
function baseUrlOf(event: Event, headers: Record<string, string | undefined>): string {
  const inAws = getConfig().stage === 'aws';
  const host = inAws ? event.requestContext.domainName : (headers.host ?? event.requestContext.domainName);
  return `${inAws ? 'https' : 'http'}://${host}`;
}

/**
 * Step 8, the answer: a file or text as it is (bytes base64 for API Gateway), JSON checked
 * against the route's schema outside AWS; the idempotency record gets the JSON answer without
 * secrets.
 */
async function answer(
  route: { id: RouteId; def: RouteDef },
  result: unknown,
  requestId: string,
  state: RequestState,
  ifNoneMatch: string | undefined,
): Promise<Response> {
  const { def } = route;
  if (def.raw) return rawResponse(result as RawResponse, requestId, state.rate);
  const { status, body } = unwrap(result, def.status ?? 200);
  await checkResponseShape(route.id, def, body);
  if (def.cacheSeconds) return cacheableJson(body, def.cacheSeconds, ifNoneMatch, requestId, state.rate);
  if (state.idempotency)
    await completeIdempotencyKey(state.idempotency.accountId, state.idempotency.key, { statusCode: status, body: stripSecrets(body) });
  return json(status, body, requestId, state.rate);
}

/**
 * A public answer caches may keep: a strong ETag over the exact bytes sent, so any change (a price,
 * a region filling up) is a new tag. `If-None-Match` with that tag (or `*`) gets 304 and no body.
 */
function cacheableJson(
  body: unknown,
  seconds: number,
  ifNoneMatch: string | undefined,
  requestId: string,
  rate: RateLimitState | undefined,
) {
  const text = JSON.stringify(body);
  const etag = `"${createHash('sha256').update(text).digest('base64url').slice(0, 27)}"`;
  const caching = { 'cache-control': `public, max-age=${seconds}`, etag };
  const matches = ifNoneMatch?.split(',').some((tag) => {
    const t = tag.trim();
    return t === '*' || t === etag || t === `W/${etag}`;
  });
  if (matches) {
    const { 'content-type': _type, ...headers } = json(304, null, requestId, rate, caching).headers;
    return { statusCode: 304, headers, body: '' };
  }
  return { ...json(200, body, requestId, rate, caching), body: text };
}

/** A raw route's answer (the docs page, the OpenAPI document, an invoice PDF). */
export function rawResponse(raw: RawResponse, requestId: string, rate: RateLimitState | undefined): Response {
  return {
    statusCode: 200,
    headers: {
      'content-type': raw.contentType,
      'cache-control': raw.cacheSeconds ? `public, max-age=${raw.cacheSeconds}` : 'no-store',
      'x-request-id': requestId,
      ...(rate ? rateLimitHeaders(rate) : {}),
      ...(raw.filename ? { 'content-disposition': `attachment; filename="${raw.filename}"` } : {}),
    },
    ...(typeof raw.body === 'string' ? { body: raw.body } : { body: Buffer.from(raw.body).toString('base64'), isBase64Encoded: true }),
  };
}

/**
 * Step 9, after the answer: the contract note (outside AWS: tests/setup.ts fails a test file that
 * provoked an undocumented answer) and the activity log. A failed activity write is logged for the
 * alarm, never turned into an error: after a success the change is done, and a retry would repeat it.
 */
async function settle(state: RequestState, response: Response, errorCode: ErrorCode | null, requestId: string, sourceIp: string | null) {
  if (state.route && getConfig().stage !== 'aws') {
    noteResponse(state.route.id, state.route.def, response.statusCode, errorCode, errorCode ? response.headers : undefined);
  }
  await audit(state, response.statusCode, errorCode, requestId, sourceIp).catch((e) =>
    logger.error(errorCode ? 'audit write failed' : 'audit write failed after success', { requestId, ...errorFields(e) }),
  );
}

function authorize(def: RouteDef, principal: Principal): void {
  if (def.admin && !principal.isAdmin) throw new ApiError('forbidden', 'This endpoint is for platform admins');
  if (def.scope && !principal.scopes.has(def.scope)) {
    throw new ApiError('forbidden', `This credential lacks the scope ${def.scope}`, { requiredScope: def.scope });
  }
}

const bodyParser = httpJsonBodyParser();

/** middy's JSON body parser, with its failures turned into our codes. */
function parseJsonBody(event: Event): unknown {
  const request = { event: { ...event }, context: {} } as unknown as Parameters<NonNullable<typeof bodyParser.before>>[0];
  try {
    void bodyParser.before!(request);
  } catch (err) {
    const status = (err as { statusCode?: number }).statusCode;
    if (status === 415) throw new ApiError('unsupported_media_type', 'Send the body as JSON with Content-Type: application/json');
    // The parser refuses a `__proto__` key at any depth (and a `constructor` holding a `prototype`): valid
    // JSON, but never a key this API takes (zod would drop it unseen), so a 400 that names it.
    const forbidden = (err as { cause?: { data?: unknown } }).cause?.data;
    if (status === 422 && (forbidden === '__proto__' || forbidden === 'constructor')) {
      const message = `\`${forbidden}\` is not accepted as a key${forbidden === 'constructor' ? ' of an object with a `prototype`' : ''}`;
      throw new ApiError('validation_failed', `Invalid request: body ${message}`, { issues: [{ field: 'body', message }] });
    }
    throw new ApiError('invalid_json', 'The request body is not valid JSON');
  }
  return (request.event as Event & { body: unknown }).body;
}

/** Step 5, body and validation: the path, query and body as the route's schemas parse them, every issue in one 400. */
export function parseInput(def: RouteDef, params: Record<string, string>, event: Event) {
  let body: unknown;
  if (def.body) {
    const raw = event.body ?? '';
    const size = event.isBase64Encoded ? Math.floor((raw.length * 3) / 4) : Buffer.byteLength(raw);
    if (size > MAX_BODY_BYTES) throw new ApiError('payload_too_large', `The request body exceeds ${MAX_BODY_BYTES} bytes`);
    if (raw === '')
      throw new ApiError('validation_failed', 'A request body is required', { issues: [{ field: 'body', message: 'required' }] });
    // Webhooks keep the exact bytes: their signature is computed over them.
    body = def.rawBody ? (event.isBase64Encoded ? Buffer.from(raw, 'base64').toString('utf8') : raw) : parseJsonBody(event);
  }

  const issues: { field: string; message: string; code: string }[] = [];
  const check = <S extends z.ZodType | undefined>(schema: S, value: unknown, where: string) => {
    if (!schema) return {};
    const result = schema.safeParse(value);
    if (result.success) return result.data;
    for (const issue of result.error.issues) {
      issues.push({ field: [where, ...issue.path.map(String)].join('.'), message: issue.message, code: issue.code });
    }
    return undefined;
  };
  const parsed = {
    params: check(def.params, params, 'path'),
    query: check(def.query, event.queryStringParameters ?? {}, 'query'),
    body: check(def.body, body, 'body'),
  };
  if (issues.length) {
    throw new ApiError('validation_failed', `Invalid request: ${issues.map((i) => `${i.field} ${i.message}`).join('; ')}`, { issues });
  }
  return parsed as { params: never; query: never; body: never };
}

function unwrap(result: unknown, status: number): { status: number; body: unknown } {
  if (result && typeof result === 'object' && 'statusOverride' in result && 'body' in result) {
    return { status: (result as StatusResponse<unknown>).statusOverride, body: (result as StatusResponse<unknown>).body };
  }
  return { status, body: result };
}

/** Outside AWS every response is checked against its schema, so the OpenAPI document cannot drift from the code. */
async function checkResponseShape(id: RouteId, def: RouteDef, body: unknown): Promise<void> {
  if (getConfig().stage === 'aws') return;
  const schema = def.responseSchema ? await def.responseSchema() : def.response;
  const result = schema.safeParse(body);
  if (!result.success) throw new Error(`Response of ${id} does not match its schema: ${result.error.message}`);
}

/** Secrets are shown once and never stored, not even in an idempotency record. */
function stripSecrets(body: unknown): unknown {
  if (body && typeof body === 'object' && 'secret' in body) {
    const { secret: _secret, ...rest } = body as Record<string, unknown>;
    return rest;
  }
  return body;
}

function json(
  statusCode: number,
  body: unknown,
  requestId: string,
  rate: RateLimitState | undefined,
  extra: Record<string, string> = {},
): Response {
  return {
    statusCode,
    headers: {
      'content-type': 'application/json; charset=utf-8',
      'cache-control': 'no-store',
      'x-request-id': requestId,
      ...(rate ? rateLimitHeaders(rate) : {}),
      ...extra,
    },
    body: JSON.stringify(body),
  };
}

/** Step 10, any failure as the error envelope; the caller releases the idempotency claim. */
export function errorResponse(err: unknown, requestId: string, rate: RateLimitState | undefined): Response {
  if (isApiError(err)) {
    const error = { code: err.code, message: err.message, ...(err.details === undefined ? {} : { details: err.details }) };
    return json(err.statusCode, { error }, requestId, rate, err.headers);
  }
  logger.error('unhandled error', { requestId, ...errorFields(err) });
  return json(500, { error: { code: 'internal', message: `Internal error; quote request id ${requestId}` } }, requestId, rate);
}

async function audit(
  state: RequestState,
  status: number,
  errorCode: ErrorCode | null,
  requestId: string,
  sourceIp: string | null,
): Promise<void> {
  const action = state.route?.def.audit;
  const principal = state.principal;
  if (!action || !principal) return;
  const entry = {
    actorEmail: principal.email,
    credential: principal.credential,
    action: state.audit.action ?? action,
    target: state.audit.target ?? null,
    result: status < 400 ? ('success' as const) : ('failure' as const),
    status,
    errorCode,
    sourceIp,
    requestId,
    ...(state.audit.details ? { details: state.audit.details } : {}),
  };
  const shared = state.sharedAccess;
  // Through a share: in the owner's log (their server, the real actor and credential) and in the caller's own.
  await Promise.all([
    recordActivity({ ...entry, accountId: principal.accountId }),
    shared
      ? recordActivity({
          ...entry,
          accountId: shared.ownerAccountId,
          details: { ...entry.details, sharedAccess: { actorAccountId: principal.accountId } },
        })
      : undefined,
  ]);
}
