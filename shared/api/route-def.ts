import type * as z from 'zod';
import type { Scope } from './scopes.ts';
import type { ErrorCode } from '../errors.ts';

/**
 * What a route is, without any route: the shape the per-group route modules (routes/<group>.ts)
 * define their entries in, and the error sets they share. Types and constants only, so that a
 * module can name a route's shape without loading a schema.
 */
export const GROUPS = [
  'public',
  'account',
  'catalog',
  'servers',
  'server-tools',
  'server-history',
  'billing',
  'payments',
  'admin',
  'admin-panels',
  'admin-storefront',
  'dev',
] as const;
export type Group = (typeof GROUPS)[number];

/** The groups whose routes are all under /v1/admin, behind the edge's admin authorizer (infra checks both ways). */
export const ADMIN_GROUPS: readonly Group[] = ['admin', 'admin-panels', 'admin-storefront'];

export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export interface RouteDef {
  method: Method;
  /** Express-style path: `/v1/keys/:id`. */
  path: string;
  group: Group;
  summary: string;
  description?: string;
  tag: string;
  /** `none`: public; `bearer`: API key or session token. */
  auth: 'none' | 'bearer';
  scope?: Scope;
  /** Also needs an admin account (ADMIN_EMAILS). */
  admin?: boolean;
  params?: z.ZodObject;
  query?: z.ZodObject;
  body?: z.ZodType;
  status?: 200 | 201 | 202;
  response: z.ZodType;
  /** Accepts an `Idempotency-Key` header (creating POSTs). */
  idempotent?: boolean;
  /** Activity-log action written for this call (every mutation has one). */
  audit?: string;
  /** Not JSON: the handler returns a raw body (the docs page and its assets). */
  raw?: boolean;
  /** The media type a raw route's document entry states (default `application/json`): the invoice PDF's `application/pdf`. */
  mediaType?: string;
  /** Left out of the OpenAPI document. */
  hidden?: boolean;
  /** The body reaches the implementation as the raw string (webhook signatures are over the raw bytes). */
  rawBody?: boolean;
  /** Exempt from the per-client rate limit (the payment provider's webhook deliveries). */
  unlimited?: boolean;
  /**
   * A public read that caches may keep this many seconds: the answer carries `Cache-Control:
   * public, max-age=N` and an `ETag`, and a GET whose `If-None-Match` names that tag gets 304
   * with no body (shared/http/handler.ts). Only for answers that are the same for every caller.
   */
  cacheSeconds?: number;
  /**
   * Error codes only this operation's own logic answers with; those that follow from the
   * definition (credential, body, parameters, cursor, Idempotency-Key) are added by
   * errorCodesOf (shared/api/contract.ts). The document lists both; tests fail on anything else.
   */
  errors?: readonly ErrorCode[];
  /**
   * Set only in a Lambda bundle, whose route modules are generated without their schemas
   * (infra/bundle.ts, `lazyRouteSchemas`): loads the route's request schemas on its first
   * request, and its response schema (checked outside AWS only), from the schema modules' chunks.
   */
  requestSchemas?: () => Promise<Pick<RouteDef, 'params' | 'query' | 'body'>>;
  responseSchema?: () => Promise<z.ZodType>;
}

export const define = <const T extends Record<string, RouteDef>>(table: T): T => table;

/** What any call to a panel may end in (shared/panel/errors.ts): refused, unreachable or busy, no answer in time. */
export const PANEL = ['panel_error', 'panel_unavailable', 'panel_timeout'] as const;
/** Power, console, files and usage: the server must be active and its instance hold a client key (shared/servers/control.ts). */
export const CONTROL = ['no_client_key', 'conflict', ...PANEL] as const;

/** `/v1/keys/:id` -> `/v1/keys/{id}` (OpenAPI and API Gateway spelling). */
export const toTemplatePath = (path: string): string => path.replace(/:([A-Za-z]+)/g, '{$1}');
