import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import type { Metafile } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureTable } from '../../dev/dynamodb.ts';
import { buildLambda, chunkSizes, FUNCTIONS_DIR } from '../../infra/bundle.ts';
import { handler as sourceHandler } from '../../functions/account/handler.ts';
import { ensureAccountForSubject } from '../../shared/accounts/index.ts';
import { scopesOfAccount } from '../../shared/api/scopes.ts';
import { createApiKey } from '../../shared/api-keys/index.ts';

/**
 * The account function's bundle as deployed, whose route module is generated without schemas
 * (infra/bundle.ts, `lazyRouteSchemas`: a route's request schemas load with its first request),
 * against the same handler from source, which builds them at load: no zod at start, and the same
 * answer to every request, bad input above all (same error envelope, same field messages).
 * The bundle runs in a Node process of its own, as in Lambda, against the tests' DynamoDB Local.
 */
const run = promisify(execFile);

let dir: string;
let meta: Metafile;
let secret: string;

beforeAll(async () => {
  await ensureTable(process.env.DYNAMODB_ENDPOINT!, process.env.TABLE_NAME!);
  dir = await mkdtemp(join(tmpdir(), 'lazy-schemas-'));
  meta = await buildLambda(join(FUNCTIONS_DIR, 'account', 'handler.ts'), dir);
  const account = await ensureAccountForSubject('https://issuer.example', 'lazy-schemas-subject', 'lazy-schemas@example.com');
  const principal = { accountId: account.accountId, email: account.email, scopes: new Set(scopesOfAccount(false)) };
  ({ secret } = await createApiKey(principal, { name: 'bundle test' }));
}, 180_000);

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

interface Req {
  method: string;
  path: string;
  query?: Record<string, string>;
  body?: string;
}

const eventOf = (r: Req) => ({
  version: '2.0',
  routeKey: '$default',
  rawPath: r.path,
  rawQueryString: new URLSearchParams(r.query ?? {}).toString(),
  headers: {
    authorization: `Bearer ${secret}`,
    host: 'api.example.com',
    ...(r.body === undefined ? {} : { 'content-type': 'application/json' }),
  },
  ...(r.query ? { queryStringParameters: r.query } : {}),
  ...(r.body === undefined ? {} : { body: r.body }),
  isBase64Encoded: false,
  requestContext: {
    requestId: 'lazy-schemas',
    domainName: 'api.example.com',
    http: { method: r.method, path: r.path, sourceIp: '198.51.100.9', protocol: 'HTTP/1.1', userAgent: 'test' },
  },
});

const context = { awsRequestId: 'lazy-schemas', getRemainingTimeInMillis: () => 30_000 };

/** Each request through the bundled handler, one after another, in a fresh Node process. */
async function throughBundle(requests: Req[]): Promise<{ statusCode: number; body: string }[]> {
  const script = `
    const { handler } = await import(${JSON.stringify(pathToFileURL(join(dir, 'index.mjs')).href)});
    const out = [];
    for (const event of ${JSON.stringify(requests.map(eventOf))}) {
      const r = await handler(event, { awsRequestId: 'lazy-schemas', getRemainingTimeInMillis: () => 30000 });
      out.push({ statusCode: r.statusCode, body: r.body });
    }
    console.log(JSON.stringify(out));`;
  const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], { env: process.env, timeout: 60_000 });
  return JSON.parse(stdout.trim().split('\n').at(-1)!);
}

const inputsOf = (files: string[]) => files.flatMap((f) => Object.keys(meta.outputs[f]!.inputs));

describe('account bundle: request schemas loaded per route', () => {
  it('loads neither zod nor any schema at start; both sit in chunks a request loads', () => {
    const { startFiles, lazyFiles } = chunkSizes(meta);
    const start = inputsOf(startFiles);
    expect(start.filter((p) => p.includes('node_modules/zod/'))).toEqual([]);
    // The route module at start is the generated one; the one written with its schemas is not.
    expect(start).toContain(`lazy-route-schemas:${join(FUNCTIONS_DIR, '..', 'shared', 'api', 'routes', 'account.ts')}`);
    const written = start.filter((p) => !p.startsWith('lazy-route-schemas:'));
    expect(written.filter((p) => p.includes('shared/api/schemas/') || /shared\/api\/routes\/[a-z-]+\.ts$/.test(p))).toEqual([]);
    const lazy = inputsOf(lazyFiles);
    expect(lazy.some((p) => p.includes('node_modules/zod/'))).toBe(true);
    expect(lazy).toContain('shared/api/schemas/keys.ts');
  });

  it('answers bad input, and good, exactly as the handler built from source does', async () => {
    const requests: Req[] = [
      // Bad input: body, query and path, alone and together; no body; not JSON.
      { method: 'POST', path: '/v1/keys', body: JSON.stringify({ name: '', scopes: ['nope'], expiresInDays: 0, extra: 1 }) },
      { method: 'POST', path: '/v1/keys' },
      { method: 'POST', path: '/v1/keys', body: '{"name":' },
      { method: 'GET', path: '/v1/keys', query: { limit: 'abc' } },
      { method: 'GET', path: '/v1/keys', query: { limit: '0', cursor: 'x'.repeat(5000) } },
      { method: 'PATCH', path: '/v1/keys/not-a-uuid', body: JSON.stringify({ labels: { 'Bad Key!': 'x'.repeat(70) } }) },
      { method: 'DELETE', path: '/v1/keys/not-a-uuid' },
      { method: 'POST', path: '/v1/webhook-endpoints', body: JSON.stringify({ url: 'ftp://example.com', events: ['no.such'] }) },
      { method: 'PUT', path: '/v1/account/budget', body: JSON.stringify({ monthlyCapCents: -5 }) },
      // Good input: a route with no request schema, and one with a query.
      { method: 'GET', path: '/v1/account' },
      { method: 'GET', path: '/v1/keys', query: { limit: '1' } },
      // Outside the function's routes.
      { method: 'GET', path: '/v1/nowhere' },
    ];
    const bundled = await throughBundle(requests);
    const fromSource = [];
    for (const r of requests) {
      const res = await sourceHandler(eventOf(r) as never, context as never);
      fromSource.push({ statusCode: res.statusCode, body: res.body ?? '' });
    }
    const view = (rs: { statusCode: number; body: string }[]) =>
      rs.map((r, i) => ({
        request: `${requests[i]!.method} ${requests[i]!.path}`,
        status: r.statusCode,
        body: JSON.parse(r.body || 'null'),
      }));
    const expected = view(fromSource);
    // The bad requests are refused with the validation envelope and its field messages.
    expect(expected.slice(0, 9).map((r) => r.status)).toEqual([400, 400, 400, 400, 400, 400, 400, 400, 400]);
    expect(expected[0]!.body.error.code).toBe('validation_failed');
    expect(expected[0]!.body.error.details.issues.length).toBeGreaterThan(2);
    expect(expected.slice(9, 11).map((r) => r.status)).toEqual([200, 200]);
    // A listed key carries its lastUsedAt, which the first listing may have just written: compare the rest.
    const withoutLastUsed = (rs: ReturnType<typeof view>) =>
      rs.map((r) =>
        r.body?.data ? { ...r, body: { ...r.body, data: r.body.data.map(({ lastUsedAt: _, ...k }: Record<string, unknown>) => k) } } : r,
      );
    expect(withoutLastUsed(view(bundled))).toEqual(withoutLastUsed(expected));
  });
});
