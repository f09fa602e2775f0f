import * as z from 'zod';
import * as s from './schemas.ts';
import type { Scope } from './scopes.ts';
import type { ErrorCode } from '../errors.ts';

/**
 * The route table: the one source of truth for every endpoint. The Lambda routers, the local
 * router, the API Gateway routes (infra/) and the OpenAPI document are all generated from it.
 */
export const GROUPS = ['public', 'account', 'catalog', 'servers', 'billing', 'payments', 'admin', 'dev'] as const;
export type Group = (typeof GROUPS)[number];

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
  status?: 200 | 201;
  response: z.ZodType;
  /** Accepts an `Idempotency-Key` header (creating POSTs). */
  idempotent?: boolean;
  /** Activity-log action written for this call (every mutation has one). */
  audit?: string;
  /** Not JSON: the handler returns a raw body (the docs page and its assets). */
  raw?: boolean;
  /** Left out of the OpenAPI document. */
  hidden?: boolean;
  /** The body reaches the implementation as the raw string (webhook signatures are over the raw bytes). */
  rawBody?: boolean;
  /** Exempt from the per-client rate limit (the payment provider's webhook deliveries). */
  unlimited?: boolean;
  /**
   * Error codes only this operation's own logic answers with; those that follow from the
   * definition (credential, body, parameters, cursor, Idempotency-Key) are added by
   * errorCodesOf (shared/api/contract.ts). The document lists both; tests fail on anything else.
   */
  errors?: readonly ErrorCode[];
}

const define = <const T extends Record<string, RouteDef>>(table: T): T => table;

const IdParam = z.object({ id: s.Uuid });

/** What any call to a panel may end in (shared/panel/errors.ts): refused, unreachable or busy, no answer in time. */
const PANEL = ['panel_error', 'panel_unavailable', 'panel_timeout'] as const;
/** Power, console, files and usage: the server must be active and its instance hold a client key (shared/servers/control.ts). */
const CONTROL = ['no_client_key', 'conflict', ...PANEL] as const;

export const routes = define({
  // ---- public ----
  health: {
    method: 'GET',
    path: '/v1/health',
    group: 'public',
    tag: 'Health',
    auth: 'none',
    summary: 'Liveness and instance count',
    response: s.Health,
  },
  openapi: {
    method: 'GET',
    path: '/openapi.json',
    group: 'public',
    tag: 'Health',
    auth: 'none',
    hidden: true,
    summary: 'This OpenAPI document',
    response: z.record(z.string(), z.unknown()),
  },
  docs: {
    method: 'GET',
    path: '/docs',
    group: 'public',
    tag: 'Health',
    auth: 'none',
    hidden: true,
    raw: true,
    summary: 'Interactive API reference',
    response: z.string(),
  },
  docsAsset: {
    method: 'GET',
    path: '/docs/assets/:file',
    group: 'public',
    tag: 'Health',
    auth: 'none',
    hidden: true,
    raw: true,
    summary: 'Assets of the API reference (served by the service itself, no CDN)',
    params: z.object({ file: z.string().max(64) }),
    response: z.string(),
  },

  // ---- account ----
  getAccount: {
    method: 'GET',
    path: '/v1/account',
    group: 'account',
    tag: 'Account',
    auth: 'bearer',
    scope: 'account:read',
    summary: 'The calling account',
    response: s.Account,
  },
  listActivity: {
    method: 'GET',
    path: '/v1/account/logs',
    group: 'account',
    tag: 'Account',
    auth: 'bearer',
    scope: 'account:read',
    summary: 'Activity log of the account, newest first',
    description: 'Every mutating call by any credential of the account, successful or not. Entries are kept 90 days.',
    query: s.ListQuery,
    response: s.ActivityList,
  },
  listKeys: {
    method: 'GET',
    path: '/v1/keys',
    group: 'account',
    tag: 'API keys',
    auth: 'bearer',
    scope: 'account:read',
    summary: 'Your API keys (never their secrets)',
    query: s.ListQuery,
    response: s.ApiKeyList,
  },
  createKey: {
    method: 'POST',
    path: '/v1/keys',
    group: 'account',
    tag: 'API keys',
    auth: 'bearer',
    scope: 'keys:write',
    summary: 'Create an API key; the secret is returned once',
    body: s.CreateApiKey,
    status: 201,
    response: s.ApiKeyWithSecret,
    idempotent: true,
    audit: 'keys.create',
  },
  revokeKey: {
    method: 'DELETE',
    path: '/v1/keys/:id',
    group: 'account',
    tag: 'API keys',
    auth: 'bearer',
    scope: 'keys:write',
    summary: 'Revoke an API key (effective on the next request)',
    params: IdParam,
    response: s.RevokedKey,
    audit: 'keys.revoke',
  },

  // ---- catalog ----
  listInstances: {
    method: 'GET',
    path: '/v1/instances',
    group: 'catalog',
    tag: 'Catalog',
    auth: 'bearer',
    scope: 'servers:read',
    summary: 'Deployable instances (enabled panels)',
    response: s.PublicInstanceList,
  },
  listRegions: {
    method: 'GET',
    path: '/v1/regions',
    group: 'catalog',
    tag: 'Catalog',
    auth: 'bearer',
    scope: 'servers:read',
    summary: 'Region availability (stock): nodes, free memory and disk per region',
    description: 'Read from the panels, cached for 30 seconds.',
    response: s.RegionList,
  },
  listEggs: {
    method: 'GET',
    path: '/v1/eggs',
    group: 'catalog',
    tag: 'Catalog',
    auth: 'bearer',
    scope: 'servers:read',
    summary: 'Eggs (server templates) across instances',
    description: 'Read from the panels, cached for 30 seconds.',
    response: s.EggList,
  },
  getEgg: {
    method: 'GET',
    path: '/v1/eggs/:instanceId/:eggId',
    group: 'catalog',
    tag: 'Catalog',
    auth: 'bearer',
    scope: 'servers:read',
    summary: 'One egg with its variables, rules and allowed docker images',
    params: s.EggParams,
    response: s.EggDetail,
    errors: PANEL,
  },

  // ---- servers ----
  listServers: {
    method: 'GET',
    path: '/v1/servers',
    group: 'servers',
    tag: 'Servers',
    auth: 'bearer',
    scope: 'servers:read',
    summary: 'Your servers, newest first (deleted ones included)',
    query: s.ListQuery,
    response: s.ServerList,
  },
  createServer: {
    method: 'POST',
    path: '/v1/servers',
    group: 'servers',
    tag: 'Servers',
    auth: 'bearer',
    scope: 'servers:write',
    summary: 'Deploy a server from an egg',
    description:
      'Validates against the platform limits, checks 24 hours of credit runway, fills omitted egg variables with their defaults, places it on a node and creates it on the panel. Returns the server with status active (the panel may still be installing it: see `live.installStatus` on GET).',
    body: s.CreateServer,
    status: 201,
    response: s.Server,
    idempotent: true,
    audit: 'servers.create',
    errors: ['insufficient_credit', 'limit_exceeded', 'conflict', 'no_capacity', ...PANEL],
  },
  getServer: {
    method: 'GET',
    path: '/v1/servers/:id',
    group: 'servers',
    tag: 'Servers',
    auth: 'bearer',
    scope: 'servers:read',
    summary: 'One server plus its live panel state',
    params: IdParam,
    response: s.ServerWithLive,
  },
  resizeServer: {
    method: 'PATCH',
    path: '/v1/servers/:id',
    group: 'servers',
    tag: 'Servers',
    auth: 'bearer',
    scope: 'servers:write',
    summary: 'Resize: limits applied on the panel at once, hourly price recomputed',
    params: IdParam,
    body: s.ResizeServer,
    response: s.Server,
    audit: 'servers.resize',
    errors: ['insufficient_credit', 'limit_exceeded', 'conflict', 'operation_in_progress', 'no_capacity', ...PANEL],
  },
  deleteServer: {
    method: 'DELETE',
    path: '/v1/servers/:id',
    group: 'servers',
    tag: 'Servers',
    auth: 'bearer',
    scope: 'servers:write',
    summary: 'Delete: removed from the panel; billed for the hour of deletion, never after',
    params: IdParam,
    response: s.DeletedServer,
    audit: 'servers.delete',
    errors: ['conflict', 'operation_in_progress', ...PANEL],
  },
  powerServer: {
    method: 'POST',
    path: '/v1/servers/:id/power',
    group: 'servers',
    tag: 'Server control',
    auth: 'bearer',
    scope: 'servers:write',
    summary: 'Send a power signal (start, stop, restart, kill)',
    params: IdParam,
    body: s.PowerSignal,
    response: s.PowerResult,
    audit: 'servers.power',
    errors: [...CONTROL, 'operation_in_progress'],
  },
  serverResources: {
    method: 'GET',
    path: '/v1/servers/:id/resources',
    group: 'servers',
    tag: 'Server control',
    auth: 'bearer',
    scope: 'servers:read',
    summary: 'Live usage: CPU, memory, disk, network and the power state',
    params: IdParam,
    response: s.LiveUsage,
    errors: CONTROL,
  },
  serverCommand: {
    method: 'POST',
    path: '/v1/servers/:id/command',
    group: 'servers',
    tag: 'Server control',
    auth: 'bearer',
    scope: 'servers:write',
    summary: 'Write one line to the server console (the server must be running)',
    params: IdParam,
    body: s.ConsoleCommand,
    response: s.CommandResult,
    audit: 'servers.command',
    errors: CONTROL,
  },
  serverConsole: {
    method: 'GET',
    path: '/v1/servers/:id/console',
    group: 'servers',
    tag: 'Server control',
    auth: 'bearer',
    scope: 'servers:write',
    summary: 'Console websocket credentials (token, socket)',
    description:
      'Open the socket and send `{"event":"auth","args":[token]}` first. Tokens live about 10 minutes; fetch fresh ones when the socket says `token expiring` or closes.',
    params: IdParam,
    response: s.ConsoleCredentials,
    errors: CONTROL,
  },
  listFiles: {
    method: 'GET',
    path: '/v1/servers/:id/files',
    group: 'servers',
    tag: 'Server files',
    auth: 'bearer',
    scope: 'servers:read',
    summary: 'Files in a directory (default /)',
    params: IdParam,
    query: s.DirectoryQuery,
    response: s.FileList,
    errors: CONTROL,
  },
  fileContents: {
    method: 'GET',
    path: '/v1/servers/:id/files/contents',
    group: 'servers',
    tag: 'Server files',
    auth: 'bearer',
    scope: 'servers:read',
    summary: 'Contents of a text file (the panel refuses files over 4 MiB)',
    params: IdParam,
    query: s.FileQuery,
    response: s.FileContents,
    errors: CONTROL,
  },
  writeFile: {
    method: 'POST',
    path: '/v1/servers/:id/files/write',
    group: 'servers',
    tag: 'Server files',
    auth: 'bearer',
    scope: 'servers:write',
    summary: 'Create or replace a file (content up to 512 KiB)',
    params: IdParam,
    body: s.WriteFile,
    response: s.WriteResult,
    audit: 'servers.files.write',
    errors: CONTROL,
  },
  downloadFile: {
    method: 'GET',
    path: '/v1/servers/:id/files/download',
    group: 'servers',
    tag: 'Server files',
    auth: 'bearer',
    scope: 'servers:read',
    summary: 'Signed single-use download address',
    params: IdParam,
    query: s.FileQuery,
    response: s.DownloadLink,
    errors: CONTROL,
  },
  deleteFiles: {
    method: 'POST',
    path: '/v1/servers/:id/files/delete',
    group: 'servers',
    tag: 'Server files',
    auth: 'bearer',
    scope: 'servers:write',
    summary: 'Delete files or directories',
    params: IdParam,
    body: s.DeleteFiles,
    response: s.DeleteFilesResult,
    audit: 'servers.files.delete',
    errors: CONTROL,
  },

  // ---- account: money ----
  listTransactions: {
    method: 'GET',
    path: '/v1/account/transactions',
    group: 'account',
    tag: 'Billing',
    auth: 'bearer',
    scope: 'billing:read',
    summary: 'Credit ledger, newest first',
    description:
      'Every balance change: trial, top-up, bonus, admin grant or deduction, hourly charge, refund. The balance always equals the sum of the ledger.',
    query: s.ListQuery,
    response: s.LedgerList,
  },
  getBudget: {
    method: 'GET',
    path: '/v1/account/budget',
    group: 'account',
    tag: 'Billing',
    auth: 'bearer',
    scope: 'billing:read',
    summary: 'Monthly budget: cap, spent, projected month-end, remaining',
    response: s.Budget,
  },
  putBudget: {
    method: 'PUT',
    path: '/v1/account/budget',
    group: 'account',
    tag: 'Billing',
    auth: 'bearer',
    scope: 'billing:write',
    summary: 'Set or clear the monthly cap and what happens at it',
    body: s.BudgetUpdate,
    response: s.Budget,
    audit: 'budget.update',
    errors: ['limit_exceeded'],
  },

  // ---- billing ----
  billingConfig: {
    method: 'GET',
    path: '/v1/billing/config',
    group: 'billing',
    tag: 'Billing',
    auth: 'bearer',
    scope: 'billing:read',
    summary: 'Top-up rules: currency, minimum and maximum, bonus percentage, whether payments work',
    response: s.BillingConfig,
  },
  checkout: {
    method: 'POST',
    path: '/v1/billing/checkout',
    group: 'billing',
    tag: 'Billing',
    auth: 'bearer',
    scope: 'billing:write',
    summary: 'Start a top-up: opens an invoice and a hosted payment page',
    description:
      "Redirect the customer to `url`. Only the payment provider's webhook credits the balance (amount plus the bonus), exactly once.",
    body: s.CheckoutRequest,
    status: 201,
    response: s.CheckoutResponse,
    idempotent: true,
    audit: 'billing.checkout',
    errors: ['payments_unavailable', 'payment_provider_error'],
  },
  listInvoices: {
    method: 'GET',
    path: '/v1/invoices',
    group: 'billing',
    tag: 'Billing',
    auth: 'bearer',
    scope: 'billing:read',
    summary: 'Your invoices, newest first',
    query: s.ListQuery,
    response: s.InvoiceList,
  },
  getInvoice: {
    method: 'GET',
    path: '/v1/invoices/:id',
    group: 'billing',
    tag: 'Billing',
    auth: 'bearer',
    scope: 'billing:read',
    summary: 'One invoice with its line items',
    params: IdParam,
    response: s.Invoice,
  },

  // ---- payments (the payment provider calls this) ----
  stripeWebhook: {
    method: 'POST',
    path: '/v1/webhooks/stripe',
    group: 'payments',
    tag: 'Billing',
    auth: 'none',
    rawBody: true,
    unlimited: true,
    summary: 'Stripe webhook (signature in Stripe-Signature, no bearer credential)',
    description:
      'Verifies the signature over the raw body (bad, older than 5 minutes or dated more than 5 minutes ahead: 400 `invalid_signature`, nothing changes); a signed Checkout Session event whose object is missing or malformed is 400 `validation_failed`, nothing changes. `checkout.session.completed` (paid) and `checkout.session.async_payment_succeeded` mark the invoice paid and credit the amount and the bonus once; `checkout.session.expired` and `checkout.session.async_payment_failed` void an open invoice (never a paid one). Other events are acknowledged and ignored.',
    body: s.StripeEventPayload,
    response: s.WebhookAck,
    errors: ['invalid_signature', 'payments_unavailable'],
  },

  // ---- admin ----
  adminCredit: {
    method: 'POST',
    path: '/v1/admin/users/:id/credits',
    group: 'admin',
    tag: 'Admin',
    auth: 'bearer',
    scope: 'admin',
    admin: true,
    summary: 'Grant (positive) or deduct (negative) credit',
    description:
      'A deduction may take the balance below zero; the next billing pass then suspends the servers. A grant that brings the balance above zero unsuspends them at once.',
    params: IdParam,
    body: s.AdminCredit,
    response: s.AdminCreditResult,
    idempotent: true,
    audit: 'credits.adjust',
  },
  adminListServers: {
    method: 'GET',
    path: '/v1/admin/servers',
    group: 'admin',
    tag: 'Admin',
    auth: 'bearer',
    scope: 'admin',
    admin: true,
    summary: 'All servers of all accounts, newest first',
    query: s.ListQuery,
    response: s.AdminServerList,
  },
  adminListInstances: {
    method: 'GET',
    path: '/v1/admin/instances',
    group: 'admin',
    tag: 'Admin',
    auth: 'bearer',
    scope: 'admin',
    admin: true,
    summary: 'Registered panels (keys never shown)',
    response: s.InstanceList,
  },
  adminCreateInstance: {
    method: 'POST',
    path: '/v1/admin/instances',
    group: 'admin',
    tag: 'Admin',
    auth: 'bearer',
    scope: 'admin',
    admin: true,
    summary: 'Register a panel',
    description: 'The keys go to the secret store (Secrets Manager in AWS), never to the table or a response.',
    body: s.CreateInstance,
    status: 201,
    response: s.Instance,
    idempotent: true,
    audit: 'instances.create',
  },
  adminUpdateInstance: {
    method: 'PATCH',
    path: '/v1/admin/instances/:id',
    group: 'admin',
    tag: 'Admin',
    auth: 'bearer',
    scope: 'admin',
    admin: true,
    summary: 'Change a panel: name, URL, keys, priority, enabled',
    params: IdParam,
    body: s.UpdateInstance,
    response: s.Instance,
    audit: 'instances.update',
  },
  adminDeleteInstance: {
    method: 'DELETE',
    path: '/v1/admin/instances/:id',
    group: 'admin',
    tag: 'Admin',
    auth: 'bearer',
    scope: 'admin',
    admin: true,
    summary: 'Remove a panel (refused with 409 while it hosts servers)',
    params: IdParam,
    response: s.DeletedInstance,
    audit: 'instances.delete',
    errors: ['conflict'],
  },
  adminTestInstance: {
    method: 'POST',
    path: '/v1/admin/instances/:id/test',
    group: 'admin',
    tag: 'Admin',
    auth: 'bearer',
    scope: 'admin',
    admin: true,
    summary: "Connectivity report: nodes with region tags, the client key's service user",
    description: 'Failures of the panel are reported in `checks`, not as an error status. Caches the service user id on the instance.',
    params: IdParam,
    response: s.InstanceTestReport,
    audit: 'instances.test',
    errors: ['panel_error'],
  },
  adminListUsers: {
    method: 'GET',
    path: '/v1/admin/users',
    group: 'admin',
    tag: 'Admin',
    auth: 'bearer',
    scope: 'admin',
    admin: true,
    summary: 'All accounts, newest first',
    query: s.ListQuery,
    response: s.AdminAccountList,
  },
  adminListLogs: {
    method: 'GET',
    path: '/v1/admin/logs',
    group: 'admin',
    tag: 'Admin',
    auth: 'bearer',
    scope: 'admin',
    admin: true,
    summary: 'Platform-wide audit log, newest first',
    query: s.ListQuery,
    response: s.ActivityList,
  },
  adminGetSettings: {
    method: 'GET',
    path: '/v1/admin/settings',
    group: 'admin',
    tag: 'Admin',
    auth: 'bearer',
    scope: 'admin',
    admin: true,
    summary: 'Platform settings (prices, limits, trial credit, top-up rules)',
    response: s.Settings,
  },
  adminUpdateSettings: {
    method: 'PUT',
    path: '/v1/admin/settings',
    group: 'admin',
    tag: 'Admin',
    auth: 'bearer',
    scope: 'admin',
    admin: true,
    summary: 'Change platform settings',
    description:
      'Any subset; omitted fields keep their value. Exactly what GET returns is accepted (read-only fields such as `currency` only unchanged). A PUT that changes nothing writes nothing. Each change is audit-logged with before and after.',
    body: s.SettingsUpdate,
    response: s.Settings,
    audit: 'settings.update',
    errors: ['conflict'],
  },

  // ---- local stack only (never deployed to AWS) ----
  devSession: {
    method: 'POST',
    path: '/dev/session',
    group: 'dev',
    tag: 'Local',
    auth: 'none',
    hidden: true,
    summary: 'Session token from the local identity provider',
    body: s.DevSessionRequest,
    response: s.DevSession,
  },
  devBillingRun: {
    method: 'POST',
    path: '/dev/billing/run',
    group: 'dev',
    tag: 'Local',
    auth: 'none',
    hidden: true,
    summary: 'Run the hourly billing pass as if at `at` (default now)',
    body: s.BillingRunRequest,
    response: s.BillingSummary,
  },
  devReconcile: {
    method: 'POST',
    path: '/dev/reconcile',
    group: 'dev',
    tag: 'Local',
    auth: 'none',
    hidden: true,
    summary: 'Run the reconciler (panels against records) now',
    response: s.ReconcileReport,
  },
  devCheckoutPage: {
    method: 'GET',
    path: '/dev/checkout/:invoiceId',
    group: 'dev',
    tag: 'Local',
    auth: 'none',
    hidden: true,
    raw: true,
    summary: 'Sandbox payment page (no Stripe key)',
    params: z.object({ invoiceId: s.Uuid }),
    response: z.string(),
  },
  devCheckoutScript: {
    method: 'GET',
    path: '/dev/checkout-assets/sandbox.js',
    group: 'dev',
    tag: 'Local',
    auth: 'none',
    hidden: true,
    raw: true,
    summary: 'Script of the sandbox payment page',
    response: z.string(),
  },
  devCheckoutComplete: {
    method: 'POST',
    path: '/dev/checkout/:invoiceId/complete',
    group: 'dev',
    tag: 'Local',
    auth: 'none',
    hidden: true,
    summary: 'Finish a sandbox payment: sends the signed webhook Stripe would send',
    params: z.object({ invoiceId: s.Uuid }),
    body: z.object({ outcome: z.enum(['paid', 'expired', 'failed']) }).strict(),
    response: s.WebhookAck,
  },
  devJwks: {
    method: 'GET',
    path: '/dev/oidc/.well-known/jwks.json',
    group: 'dev',
    tag: 'Local',
    auth: 'none',
    hidden: true,
    summary: 'JWKS of the local identity provider',
    response: z.object({ keys: z.array(z.record(z.string(), z.unknown())) }),
  },
});

export type Routes = typeof routes;
export type RouteId = keyof Routes;
export type RoutesOfGroup<G extends Group> = { [K in RouteId]: Routes[K]['group'] extends G ? K : never }[RouteId];

export const routeEntries = (): [RouteId, RouteDef][] => Object.entries(routes) as [RouteId, RouteDef][];

/** `/v1/keys/:id` -> `/v1/keys/{id}` (OpenAPI and API Gateway spelling). */
export const toTemplatePath = (path: string): string => path.replace(/:([A-Za-z]+)/g, '{$1}');
