import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../helpers/stack.ts';
import { setAttributes } from '../helpers/db.ts';
import { routeEntries, type RouteDef, type RouteId } from '../../shared/api/routes.ts';
import { SCOPES, type Scope } from '../../shared/api/scopes.ts';
import { keys } from '../../shared/db/keys.ts';
import { prepareCreditNote } from '../../shared/credit-notes/index.ts';
import { findInvoiceItem } from '../../shared/invoices/index.ts';
import { transact } from '../../shared/db/write.ts';
import { generateApiKey, hashApiKey } from '../../shared/auth/api-key-format.ts';
import {
  businessItems,
  jsonRequest,
  requireOk,
  until,
  clip,
  describeExchange,
  digestDiff,
  example,
  pool,
  responseProblems,
  send,
  SessionTokens,
  zodJsonSchema,
  type RawRequest,
  type RawResponse,
  type Schema,
} from './support.ts';

/**
 * The access matrix, generated from the route table (so a new route is covered the day it is
 * added): every route outside the local /dev group against every kind of credential — none,
 * malformed, garbage, an unknown key with a valid checksum, an expired key, a revoked key, a key
 * without the route's scope, a non-admin on admin routes, a key holding only the route's scope,
 * the owner, an admin — and, for routes on an account's own resource (a server, a key, an
 * invoice), another account, which must get exactly the 404 an unknown id gets.
 *
 * Probes never act: reads use the real fixtures; anything that writes gets an unknown id or a
 * body its schema refuses, so "allowed" shows as 400/404 rather than as a change.
 */
// The matrix sends hundreds of refused requests from one address in a minute; the per-IP limit they
// count against is tested on its own (http-conventions), so it is lifted here.
process.env.RATE_LIMIT_PER_MINUTE = '1000000';
process.env.PANEL_TIMEOUT_MS = '3000';
process.env.PANEL_CREATE_TIMEOUT_MS = '5000';

const UNKNOWN_ID = '00000000-0000-4000-8000-000000000000';
const OWNED = /^\/v1\/(servers|keys|invoices|credit-notes|webhook-endpoints|events)\/:id(\/|$)/;

let api: TestApi;
const fx = {} as {
  a: SessionTokens;
  b: SessionTokens;
  adminSession: SessionTokens;
  aId: string;
  bId: string;
  serverId: string;
  serverIdentifier: string;
  keyId: string;
  invoiceId: string;
  creditNoteId: string;
  webhookEndpointId: string;
  eventId: string;
  instanceId: string;
  aFullKey: string;
  bFullKey: string;
  expiredKey: string;
  revokedKey: string;
};
/** Keys made on demand: `<account>:<lacking|only>:<scope>`. */
const keyCache = new Map<string, string>();

const call = (method: string, path: string, token: string | null, body?: unknown) => jsonRequest(api.baseUrl, method, path, token, body);
const must = async (method: string, path: string, token: string | null, body?: unknown) =>
  requireOk(await call(method, path, token, body), `${method} ${path}`);

const NON_ADMIN_SCOPES = SCOPES.filter((s) => s !== 'admin');

/** A key of A (non-admin) or of the admin account, lacking one scope or holding only it. */
async function scopedKey(account: 'a' | 'admin', mode: 'lacking' | 'only', scope: Scope): Promise<string> {
  const id = `${account}:${mode}:${scope}`;
  const cached = keyCache.get(id);
  if (cached) return cached;
  const held: readonly Scope[] = account === 'admin' ? SCOPES : NON_ADMIN_SCOPES;
  const scopes = mode === 'only' ? [scope] : held.filter((s) => s !== scope);
  const token = account === 'admin' ? api.adminApiKey : await fx.a.get();
  const secret = (await must('POST', '/v1/keys', token, { name: id, scopes })).secret as string;
  keyCache.set(id, secret);
  return secret;
}

beforeAll(async () => {
  // No webhook dispatcher in this process: it would take events out of the outbox (GSI2) while the
  // before/after table comparisons run, which reads as a state change by a refused request.
  api = await startTestApi({ panel: { installMs: 50, transitionMs: 20, resourcesCacheMs: 0 }, webhooks: false });
  fx.a = new SessionTokens('access-a@example.com');
  fx.b = new SessionTokens('access-b@example.com');
  fx.adminSession = new SessionTokens('admin@localhost');
  fx.instanceId = api.panel!.instanceId;
  fx.aId = (await must('GET', '/v1/account', await fx.a.get())).id;
  fx.bId = (await must('GET', '/v1/account', await fx.b.get())).id;
  await must('POST', `/v1/admin/users/${fx.aId}/credits`, api.adminApiKey, { amountCents: 50_000, note: 'access fixture' });

  // Account A's resources, built through the API.
  const a = await fx.a.get();
  const server = await must('POST', '/v1/servers', a, { name: 'a server', eggId: 1, ramMb: 1024, cpuPercent: 100, diskMb: 2048 });
  fx.serverId = server.id;
  fx.serverIdentifier = server.identifier;
  await until(async () => (await must('GET', `/v1/servers/${server.id}`, a)).live.installStatus === 'installed');
  await must('POST', `/v1/servers/${server.id}/files/write`, a, { file: 'hello.txt', content: 'hello from A' });
  fx.keyId = (await must('POST', '/v1/keys', a, { name: 'a key' })).id;
  fx.invoiceId = (await must('POST', '/v1/billing/checkout', a, { amountCents: 1000 })).invoiceId;
  // A credit note of A's, issued by the domain code a refund runs (this file runs no Stripe to refund through).
  const note = await prepareCreditNote({
    invoice: (await findInvoiceItem(fx.invoiceId))!,
    draft: { type: 'credit_note', netCents: 100, taxCents: 0, bonusCents: 0 },
    reason: 'refund',
  });
  await transact(note.writes);
  fx.creditNoteId = note.item.creditNoteId;
  fx.webhookEndpointId = (await must('POST', '/v1/webhook-endpoints', a, { url: 'http://127.0.0.1:9/hook' })).id;
  fx.eventId = (await must('GET', '/v1/events?limit=1', a)).data[0].id;

  fx.aFullKey = (await must('POST', '/v1/keys', a, { name: 'a full' })).secret;
  fx.bFullKey = (await must('POST', '/v1/keys', await fx.b.get(), { name: 'b full' })).secret;
  const expiring = await must('POST', '/v1/keys', a, { name: 'a expiring', expiresInDays: 1 });
  fx.expiredKey = expiring.secret;
  await setAttributes(keys.apiKeyHash(hashApiKey(expiring.secret)), { expiresAt: new Date(Date.now() - 60_000).toISOString() });
  const revoking = await must('POST', '/v1/keys', a, { name: 'a revoked' });
  fx.revokedKey = revoking.secret;
  await must('DELETE', `/v1/keys/${revoking.id}`, a);
  await must('GET', '/v1/account', await fx.adminSession.get());
}, 60_000);

afterAll(async () => {
  await api?.stop();
});

// ---- requests for a route -------------------------------------------------------------------------

const jsonSchema = zodJsonSchema;

const VALID_VALUES = {
  name: 'matrix probe',
  eggId: 1,
  ramMb: 1024,
  cpuPercent: 100,
  diskMb: 2048,
  signal: 'restart',
  command: 'say foreign',
  file: 'foreign.txt',
  content: 'written by another account',
  files: ['hello.txt'],
  root: '/',
  // files/chmod: an octal mode (a generated string is not one).
  mode: '644',
  amountCents: 1000,
  note: 'matrix',
  // A schedule's cron fields (the example generator's text is not a cron field).
  minute: '0',
  hour: '4',
  dayOfMonth: '*',
  month: '*',
  dayOfWeek: '*',
  // Shared access: an invitation (POST /v1/servers/:id/users) another account must not make.
  email: 'matrix-invitee@example.com',
};

/** A path parameter: A's real resources, or for `unknown` an id nothing has. */
function param(def: RouteDef, name: string, mode: 'real' | 'unknown'): string {
  const schema = def.params ? (jsonSchema(def.params).properties?.[name] as Schema | undefined) : undefined;
  if (mode === 'unknown' && schema?.format === 'uuid') return UNKNOWN_ID;
  if (name === 'id') {
    if (def.path.startsWith('/v1/servers/')) return fx.serverId;
    if (def.path.startsWith('/v1/keys/')) return fx.keyId;
    if (def.path.startsWith('/v1/invoices/')) return fx.invoiceId;
    if (def.path.startsWith('/v1/credit-notes/')) return fx.creditNoteId;
    if (def.path.startsWith('/v1/webhook-endpoints/')) return fx.webhookEndpointId;
    if (def.path.startsWith('/v1/events/')) return fx.eventId;
    if (def.path.startsWith('/v1/admin/instances/')) return fx.instanceId;
    if (def.path.startsWith('/v1/admin/users/')) return fx.aId;
  }
  if (name === 'instanceId') return fx.instanceId;
  if (name === 'invoiceId') return fx.invoiceId;
  if (name === 'eggId') return '1';
  // A schedule id no server has: the owner's probe is the panel's 404.
  if (name === 'scheduleId') return '999999';
  if (name === 'file') return 'swagger-ui.css';
  // A parameter added later: a value its schema accepts.
  return String(example(schema, {}, {}));
}

function pathOf(def: RouteDef, mode: 'real' | 'unknown'): string {
  const path = def.path.replace(/:(\w+)/g, (_m, name: string) => encodeURIComponent(param(def, name, mode)));
  if (!def.query) return path;
  const s = jsonSchema(def.query);
  const query = ((s.required ?? []) as string[]).map(
    (k) => `${k}=${encodeURIComponent(String(k === 'file' ? 'hello.txt' : example(s.properties[k], {}, {})))}`,
  );
  return query.length ? `${path}?${query.join('&')}` : path;
}

/**
 * A request that passes the auth layer but cannot act: reads with real ids; writes with an
 * unknown id and, when the route has a body, a body its schema refuses.
 */
function probe(def: RouteDef): { path: string; body?: string; headers: Record<string, string> } {
  if (def.method === 'GET') return { path: pathOf(def, 'real'), headers: {} };
  const hasUuid =
    /:\w+/.test(def.path) &&
    def.params &&
    Object.values(jsonSchema(def.params).properties ?? {}).some((p) => (p as Schema).format === 'uuid');
  // A required query (the one-click unsubscribe's signed token) filled with an example cannot act either.
  const hasQuery = Boolean(def.query && (jsonSchema(def.query).required ?? []).length > 0);
  if (!hasUuid && !def.body && !hasQuery)
    throw new Error(`${def.method} ${def.path} has neither an id, a body nor a required query: the matrix cannot probe it without acting`);
  const body = def.body ? (def.rawBody ? 'matrix probe' : JSON.stringify({ __matrix_probe__: true })) : undefined;
  return {
    path: pathOf(def, 'unknown'),
    ...(body !== undefined ? { body } : {}),
    headers: body !== undefined ? { 'content-type': 'application/json' } : {},
  };
}

/** A valid request on A's resource (or on an unknown id), for the cross-account check. */
function validRequest(def: RouteDef, mode: 'real' | 'unknown'): { path: string; body?: string; headers: Record<string, string> } {
  const body = def.body ? JSON.stringify(example(jsonSchema(def.body), {}, VALID_VALUES)) : undefined;
  return {
    path: pathOf(def, mode),
    ...(body !== undefined ? { body } : {}),
    headers: body !== undefined ? { 'content-type': 'application/json' } : {},
  };
}

// ---- the matrix -----------------------------------------------------------------------------------

type Expect = { kind: 'status'; status: number; code: string; message?: RegExp; requiredScope?: string } | { kind: 'allowed' };

interface Check {
  route: RouteId;
  def: RouteDef;
  credential: string;
  token: () => Promise<string | undefined>;
  rawAuth?: string;
  expect: Expect;
}

function matrix(): Check[] {
  const checks: Check[] = [];
  const unknownKey = generateApiKey('cp_test');
  for (const [route, def] of routeEntries()) {
    if (def.group === 'dev') continue;
    const add = (credential: string, token: () => Promise<string | undefined>, expect: Expect, rawAuth?: string) =>
      checks.push({ route, def, credential, token, expect, ...(rawAuth ? { rawAuth } : {}) });
    if (def.auth === 'none') {
      add('none', async () => undefined, { kind: 'allowed' });
      add('garbage', async () => 'not-a-real-credential', { kind: 'allowed' });
      add('unknown key', async () => unknownKey, { kind: 'allowed' });
      continue;
    }
    const unauthorized = (message?: RegExp): Expect => ({
      kind: 'status',
      status: 401,
      code: 'unauthorized',
      ...(message ? { message } : {}),
    });
    add('none', async () => undefined, unauthorized());
    add('malformed (Basic)', async () => undefined, unauthorized(), 'Basic dXNlcjpwYXNzd29yZA==');
    add('malformed (Bearer without token)', async () => undefined, unauthorized(), 'Bearer');
    add('garbage', async () => 'not-a-real-credential', unauthorized());
    add('unknown key, valid checksum', async () => unknownKey, unauthorized());
    add('expired key', async () => fx.expiredKey, unauthorized(/expired/));
    add('revoked key', async () => fx.revokedKey, unauthorized(/revoked/));
    if (def.scope) {
      const account = def.admin ? 'admin' : 'a';
      const scope = def.scope;
      add(`key lacking ${scope}`, () => scopedKey(account, 'lacking', scope), {
        kind: 'status',
        status: 403,
        code: 'forbidden',
        requiredScope: scope,
      });
      add(`key with only ${scope}`, () => scopedKey(account, 'only', scope), { kind: 'allowed' });
    }
    if (def.admin) {
      add('non-admin session', () => fx.a.get(), { kind: 'status', status: 403, code: 'forbidden' });
      add('non-admin key (all its scopes)', async () => fx.aFullKey, { kind: 'status', status: 403, code: 'forbidden' });
    } else {
      add('owner session', () => fx.a.get(), { kind: 'allowed' });
      add('owner key', async () => fx.aFullKey, { kind: 'allowed' });
    }
    add('admin key', async () => api.adminApiKey, { kind: 'allowed' });
    add('admin session', () => fx.adminSession.get(), { kind: 'allowed' });
  }
  return checks;
}

describe('the access matrix', () => {
  it('every route × every credential kind answers as the contract says', async () => {
    const checks = matrix();
    const failures: string[] = [];
    const table = new Map<string, Map<string, number>>();
    await pool(checks, 6, async (c) => {
      const token = await c.token();
      const p = probe(c.def);
      const auth = c.rawAuth ?? (token ? `Bearer ${token}` : undefined);
      const req: RawRequest = {
        method: c.def.method,
        path: p.path,
        headers: { ...p.headers, ...(auth ? { authorization: auth } : {}) },
        ...(p.body !== undefined ? { body: p.body } : {}),
      };
      const res = await send(api.baseUrl, req);
      const row = table.get(c.route) ?? new Map<string, number>();
      row.set(c.credential, res.status);
      table.set(c.route, row);
      const problems = responseProblems(res, req.method);
      if (c.expect.kind === 'allowed') {
        if (res.status === 401 || res.status === 403) problems.push(`refused (${res.status}) although allowed`);
      } else {
        const e = c.expect;
        if (res.status !== e.status || res.json?.error?.code !== e.code) problems.push(`expected ${e.status} ${e.code}`);
        if (e.message && !e.message.test(res.json?.error?.message ?? '')) problems.push(`expected a message matching ${e.message}`);
        if (e.requiredScope && res.json?.error?.details?.requiredScope !== e.requiredScope)
          problems.push(`expected details.requiredScope ${e.requiredScope}`);
      }
      if (problems.length) failures.push(`${c.route} × ${c.credential}: ${problems.join('; ')}\n    ${describeExchange(req, res)}`);
    });
    const routes = table.size;
    const histogram = new Map<number, number>();
    for (const row of table.values()) for (const status of row.values()) histogram.set(status, (histogram.get(status) ?? 0) + 1);
    const kinds = new Set(
      checks.map((c) => c.credential.replace(/ (lacking|only) .*/, ' $1 <scope>').replace(/^key (lacking|with only) .*/, 'key $1 <scope>')),
    ).size;
    console.log(
      `access matrix: ${routes} routes × up to ${kinds} credential kinds = ${checks.length} checks; statuses ${[...histogram.entries()]
        .sort(([a], [b]) => a - b)
        .map(([s, n]) => `${s}×${n}`)
        .join(' ')}`,
    );
    expect(routes).toBe(routeEntries().filter(([, d]) => d.group !== 'dev').length);
    expect(failures, `${failures.length} failure(s):\n${failures.slice(0, 40).join('\n')}`).toEqual([]);
  }, 60_000);

  it("another account's server, key or invoice is 404 exactly like an unknown id, and nothing changes", async () => {
    const owned = routeEntries().filter(([, d]) => d.group !== 'dev' && OWNED.test(d.path));
    // Every kind of account-owned resource the table has is covered.
    expect(new Set(owned.map(([, d]) => d.path.split('/')[2]))).toEqual(
      new Set(['servers', 'keys', 'invoices', 'credit-notes', 'webhook-endpoints', 'events']),
    );
    const before = await businessItems();
    const failures: string[] = [];
    let count = 0;
    for (const [route, def] of owned) {
      for (const [credential, token] of [
        ['other session', await fx.b.get()],
        ['other key', fx.bFullKey],
      ] as const) {
        const foreign = validRequest(def, 'real');
        const unknown = validRequest(def, 'unknown');
        const exchange = async (r: { path: string; body?: string; headers: Record<string, string> }) => {
          const req: RawRequest = {
            method: def.method,
            path: r.path,
            headers: { ...r.headers, authorization: `Bearer ${token}` },
            ...(r.body !== undefined ? { body: r.body } : {}),
          };
          return { req, res: await send(api.baseUrl, req) };
        };
        const [f, u] = [await exchange(foreign), await exchange(unknown)];
        count += 2;
        const problems = [...responseProblems(f.res, def.method)];
        if (f.res.status !== 404 || f.res.json?.error?.code !== 'not_found')
          problems.push("another account's resource is not 404 not_found");
        if (u.res.status !== 404) problems.push(`the unknown id is ${u.res.status}, not 404 (is the probe body valid?)`);
        const shape = (r: RawResponse) => JSON.stringify({ status: r.status, error: r.json?.error });
        if (shape(f.res) !== shape(u.res))
          problems.push(`differs from an unknown id: ${clip(shape(f.res), 200)} vs ${clip(shape(u.res), 200)}`);
        if (problems.length)
          failures.push(
            `${route} × ${credential}: ${problems.join('; ')}\n    ${describeExchange(f.req, f.res)}\n    ${describeExchange(u.req, u.res)}`,
          );
      }
    }
    console.log(`cross-account: ${owned.length} routes × 2 credentials × (foreign id, unknown id) = ${count} requests`);
    expect(failures, failures.join('\n')).toEqual([]);
    // Nothing of A's moved: the table, the file on the panel, the server, the key, the invoice.
    expect(digestDiff(before, await businessItems())).toEqual([]);
    expect(api.panel!.sim.readFile(fx.serverIdentifier, '/hello.txt')).toBe('hello from A');
    expect(api.panel!.sim.readFile(fx.serverIdentifier, '/foreign.txt')).toBeUndefined();
    const a = await fx.a.get();
    expect((await must('GET', `/v1/servers/${fx.serverId}`, a)).status).toBe('active');
    expect((await must('GET', '/v1/keys?limit=100', a)).data.find((k: { id: string }) => k.id === fx.keyId).status).toBe('active');
    expect((await must('GET', `/v1/invoices/${fx.invoiceId}`, a)).status).toBe('open');
    expect((await must('GET', `/v1/webhook-endpoints/${fx.webhookEndpointId}`, a)).enabled).toBe(true);
  }, 60_000);

  it("listings never show another account's servers, keys, invoices, ledger or activity", async () => {
    const b = await fx.b.get();
    const a = await fx.a.get();
    const aIds = [fx.serverId, fx.keyId, fx.invoiceId, fx.aId];
    for (const path of [
      '/v1/servers?limit=100',
      '/v1/keys?limit=100',
      '/v1/invoices?limit=100',
      '/v1/account/transactions?limit=100',
      '/v1/account',
      '/v1/account/budget',
    ]) {
      const res = await call('GET', path, b);
      expect(res.status, path).toBe(200);
      for (const id of aIds) expect(res.text.includes(id), `${path} shows A's ${id}`).toBe(false);
    }
    // B's activity log holds B's own calls only (its failed attempts on A's ids name the ids B sent).
    const logs = (await must('GET', '/v1/account/logs?limit=100', b)).data as { accountId: string; actorEmail: string }[];
    expect(logs.length).toBeGreaterThan(0);
    expect(logs.filter((e) => e.accountId !== fx.bId || e.actorEmail !== 'access-b@example.com')).toEqual([]);
    // And the other way round, so the check above is not vacuous.
    expect((await call('GET', '/v1/servers?limit=100', a)).text).toContain(fx.serverId);
    expect((await call('GET', '/v1/invoices?limit=100', a)).text).toContain(fx.invoiceId);
    expect((await call('GET', '/v1/account/logs?limit=100', a)).text).toContain(fx.aId);
  });

  // The per-IP limit for requests without a valid credential is tested in tests/integration/http-conventions.test.ts.
});
