import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import SwaggerParser from '@apidevtools/swagger-parser';
import { startTestApi, expectEnvelope, type TestApi } from '../helpers/stack.ts';
import { queryPartition } from '../helpers/db.ts';
import { keys } from '../../shared/db/keys.ts';
import { routeEntries, toTemplatePath } from '../../shared/api/routes.ts';

let api: TestApi;
let accountId: string;
beforeAll(async () => {
  api = await startTestApi();
  accountId = (await api.call('GET', '/v1/account')).body.id;
});
afterAll(async () => api?.stop());

const keyCount = async () => (await queryPartition(keys.apiKeyPrefix(accountId))).length;

describe('routing and envelopes', () => {
  it('unknown routes and wrong methods answer the envelope with 404 and 405', async () => {
    expectEnvelope(await api.call('GET', '/v1/nope'), 404, 'not_found');
    expectEnvelope(await api.call('GET', '/'), 404, 'not_found');
    const res = await api.call('PATCH', '/v1/account');
    expectEnvelope(res, 405, 'method_not_allowed');
    expect(res.headers.get('allow')).toBe('GET');
  });

  it('paths match exactly, like API Gateway: no trailing-slash, double-slash or case folding', async () => {
    expect((await api.call('GET', '/v1/account')).status).toBe(200);
    for (const path of ['/v1/account/', '/v1//account', '//v1/account', '/V1/ACCOUNT', '/v1/Account']) {
      expectEnvelope(await api.call('GET', path), 404, 'not_found');
    }
  });

  it('every response carries a request id and the security headers', async () => {
    for (const res of [
      await api.call('GET', '/v1/health'),
      await api.call('GET', '/v1/nope'),
      await api.call('GET', '/v1/account', { token: null }),
    ]) {
      expect(res.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      expect(res.headers.get('strict-transport-security')).toContain('max-age=');
      expect(res.headers.get('x-frame-options')).toBe('DENY');
      // The docs page's own script and styles, nothing else (shared/http/security-headers.ts).
      expect(res.headers.get('content-security-policy')).toBe(
        "default-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'",
      );
      expect(res.headers.get('cross-origin-resource-policy')).toBe('same-origin');
      expect(res.headers.get('referrer-policy')).toBe('no-referrer');
    }
  });

  it('health needs no credential and counts instances', async () => {
    const res = await api.call('GET', '/v1/health', { token: null });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'ok', version: '1.0.0', instances: { total: 0, enabled: 0 } });
  });
});

describe('bad input changes nothing', () => {
  it('malformed JSON is 400 invalid_json', async () => {
    const before = await keyCount();
    expectEnvelope(
      await api.call('POST', '/v1/keys', { rawBody: '{"name": "x",', headers: { 'content-type': 'application/json' } }),
      400,
      'invalid_json',
    );
    // Valid JSON, but a key no body takes: a 400 that names it, not "not valid JSON".
    const proto = await api.call('POST', '/v1/keys', {
      rawBody: '{"__proto__": {"x": 1}, "name": "a"}',
      headers: { 'content-type': 'application/json' },
    });
    expectEnvelope(proto, 400, 'validation_failed');
    expect(proto.body.error.details.issues).toEqual([{ field: 'body', message: '`__proto__` is not accepted as a key' }]);
    expect(await keyCount()).toBe(before);
  });

  it('a body that is not JSON is 415, a missing body 400', async () => {
    expectEnvelope(
      await api.call('POST', '/v1/keys', { rawBody: 'name=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } }),
      415,
      'unsupported_media_type',
    );
    expectEnvelope(await api.call('POST', '/v1/keys', { headers: { 'content-type': 'application/json' } }), 400, 'validation_failed');
  });

  it('validation lists every bad field', async () => {
    const before = await keyCount();
    const res = await api.call('POST', '/v1/keys', { body: { name: '', expiresInDays: 'soon', scopes: ['root'], extra: true } });
    expectEnvelope(res, 400, 'validation_failed');
    const fields = res.body.error.details.issues.map((i: { field: string }) => i.field).sort();
    expect(fields).toEqual(['body', 'body.expiresInDays', 'body.name', 'body.scopes.0']);
    expect(await keyCount()).toBe(before);
  });

  it('bad path and query values are 400 with the field named', async () => {
    const res = await api.call('DELETE', '/v1/keys/not-a-uuid');
    expectEnvelope(res, 400, 'validation_failed');
    expect(res.body.error.details.issues[0].field).toBe('path.id');
    const q = await api.call('GET', '/v1/keys?limit=1000');
    expectEnvelope(q, 400, 'validation_failed');
    expect(q.body.error.details.issues[0].field).toBe('query.limit');
  });

  it('oversized bodies are 413', async () => {
    const res = await api.call('POST', '/v1/keys', { body: { name: 'x'.repeat(1_100_000) } });
    expectEnvelope(res, 413, 'payload_too_large');
  });

  it('a tampered or foreign cursor is refused', async () => {
    for (let i = 0; i < 3; i++) await api.call('POST', '/v1/keys', { body: { name: `page-${i}` } });
    const first = await api.call('GET', '/v1/keys?limit=2');
    expect(first.body.nextCursor).toBeTypeOf('string');
    const cursor: string = first.body.nextCursor;
    expectEnvelope(await api.call('GET', `/v1/keys?limit=2&cursor=${cursor.slice(0, -2)}xx`), 400, 'invalid_cursor');
    // The same cursor on another listing, and by another account.
    expectEnvelope(await api.call('GET', `/v1/account/logs?cursor=${cursor}`), 400, 'invalid_cursor');
    const other = await api.session('eve@example.com');
    expectEnvelope(await api.call('GET', `/v1/keys?cursor=${cursor}`, { token: other }), 400, 'invalid_cursor');
  });
});

describe('pagination', () => {
  it('pages through a listing exactly once, newest first', async () => {
    for (let i = 0; i < 5; i++) await api.call('POST', '/v1/keys', { body: { name: `walk-${i}` } });
    const all = (await api.call('GET', '/v1/keys?limit=100')).body.data.map((k: { id: string }) => k.id);
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const res = await api.call('GET', `/v1/keys?limit=3${cursor ? `&cursor=${cursor}` : ''}`);
      expect(res.body.data.length).toBeLessThanOrEqual(3);
      seen.push(...res.body.data.map((k: { id: string }) => k.id));
      cursor = res.body.nextCursor;
    } while (cursor);
    expect(seen).toEqual(all);
    expect(new Set(seen).size).toBe(seen.length);
  });

  it('merges the sharded admin listing of accounts without losing or repeating one', async () => {
    const emails = Array.from({ length: 13 }, (_, i) => `walker${i}@example.com`);
    for (const email of emails) await api.call('GET', '/v1/account', { token: await api.session(email) });
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res = await api.call('GET', `/v1/admin/users?limit=4${cursor ? `&cursor=${cursor}` : ''}`);
      expect(res.status).toBe(200);
      seen.push(...res.body.data.map((a: { email: string }) => a.email));
      cursor = res.body.nextCursor;
      pages++;
    } while (cursor && pages < 50);
    for (const email of emails) expect(seen.filter((e) => e === email)).toHaveLength(1);
    expect(new Set(seen).size).toBe(seen.length);
    const createdAt = (await api.call('GET', '/v1/admin/users?limit=100')).body.data.map((a: { createdAt: string }) => a.createdAt);
    expect([...createdAt].sort().reverse()).toEqual(createdAt);
  });
});

describe('rate limit', () => {
  it('the 241st request of a minute from two concurrent clients sharing a key gets 429', async () => {
    const key = (await api.call('POST', '/v1/keys', { body: { name: 'busy' } })).body.secret;
    const client = async (n: number) => {
      const statuses: number[] = [];
      for (let i = 0; i < n; i++) statuses.push((await api.call('GET', '/v1/account', { token: key })).status);
      return statuses;
    };
    // Inside one fixed window: the stack's clock holds a fresh minute for the burst.
    const [a, b, last] = await api.clock.inFreshMinute(async () => {
      const [a, b] = await Promise.all([client(120), client(120)]);
      return [a, b, await api.call('GET', '/v1/account', { token: key })] as const;
    });
    expect([...a, ...b].every((s) => s === 200)).toBe(true);
    expectEnvelope(last, 429, 'rate_limited');
    expect(Number(last.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(last.headers.get('ratelimit-remaining')).toBe('0');
    expect(last.headers.get('ratelimit-limit')).toBe('240');
    // Another credential has its own budget.
    const other = await api.call('GET', '/v1/account');
    expect(other.status).toBe(200);
    expect(Number(other.headers.get('ratelimit-remaining'))).toBeGreaterThan(0);
  });
});

describe('Idempotency-Key', () => {
  it('replays the first response for the same request and refuses a different one', async () => {
    const before = await keyCount();
    const headers = { 'idempotency-key': 'create-key-0001' };
    const first = await api.call('POST', '/v1/keys', { body: { name: 'once' }, headers });
    expect(first.status).toBe(201);
    const replay = await api.call('POST', '/v1/keys', { body: { name: 'once' }, headers });
    expect(replay.status).toBe(201);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.body.id).toBe(first.body.id);
    expect(replay.body.secret).toBeUndefined();
    expect(await keyCount()).toBe(before + 1);
    expectEnvelope(await api.call('POST', '/v1/keys', { body: { name: 'twice' }, headers }), 409, 'idempotency_conflict');
    expect(await keyCount()).toBe(before + 1);
  });

  it('a failed request leaves the key free for a corrected retry', async () => {
    const headers = { 'idempotency-key': 'create-key-0002' };
    expectEnvelope(await api.call('POST', '/v1/keys', { body: { name: 'x', scopes: ['nope'] }, headers }), 400, 'validation_failed');
    expect((await api.call('POST', '/v1/keys', { body: { name: 'x' }, headers })).status).toBe(201);
  });
});

describe('OpenAPI document and docs', () => {
  it('is OpenAPI 3.1.0, version 1.0.0, valid, and lists every public route with its scope and errors', async () => {
    const res = await api.call('GET', '/openapi.json', { token: null });
    expect(res.status).toBe(200);
    expect(res.body.openapi).toBe('3.1.0');
    expect(res.body.info.version).toBe('1.0.0');
    await SwaggerParser.validate(structuredClone(res.body));
    expect(res.body.components.securitySchemes.bearer).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(res.body.components.securitySchemes.adminBearer).toMatchObject({ type: 'http', scheme: 'bearer' });
    for (const [id, def] of routeEntries()) {
      const op = res.body.paths[toTemplatePath(def.path)]?.[def.method.toLowerCase()];
      if (def.hidden || def.group === 'dev') {
        expect(op).toBeUndefined();
        continue;
      }
      expect(op, id).toBeDefined();
      expect(op.operationId).toBe(id);
      if (def.auth === 'bearer') {
        // Admin routes have their own scheme: in AWS an authorizer guards them at the edge.
        expect(op.security).toEqual([{ [def.path.startsWith('/v1/admin') ? 'adminBearer' : 'bearer']: [] }]);
        expect(op['x-required-scope']).toBe(def.scope);
        expect(op.responses['401']).toBeDefined();
        expect(op.responses['403']).toBeDefined();
      }
      // Every operation is rate limited but the payment provider's webhook, which is exempt.
      expect(op.responses['429'] !== undefined, id).toBe(!def.unlimited);
    }
  });

  it('serves the interactive reference and its assets itself', async () => {
    const page = await api.call('GET', '/docs', { token: null });
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toContain('text/html');
    const assets = [...page.text.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
    expect(assets.length).toBe(3);
    for (const asset of assets) {
      expect(asset.startsWith('/docs/assets/')).toBe(true);
      const res = await fetch(`${api.baseUrl}${asset}`);
      expect(res.status).toBe(200);
      expect((await res.text()).length).toBeGreaterThan(20);
    }
    expectEnvelope(await api.call('GET', '/docs/assets/..%2Fpackage.json', { token: null }), 404, 'not_found');
  });
});

// Last: it spends this file's per-IP budget, which the public routes above share.
describe('rate limit for requests without a valid credential', () => {
  it('missing and failed credentials count against the source IP: guessing is limited too', async () => {
    // Inside one fixed window: the stack's clock holds a fresh minute for the guesses.
    const [statuses, limited] = await api.clock.inFreshMinute(async () => {
      const statuses: number[] = [];
      for (let i = 0; i < 250; i++) {
        // No credential, a malformed one, and a different made-up key every time.
        const token = i % 3 === 0 ? null : i % 3 === 1 ? 'garbage' : `cp_test_${String(i).padStart(38, 'x')}`;
        statuses.push((await api.call('GET', '/v1/account', { token })).status);
      }
      return [statuses, await api.call('GET', '/v1/account', { token: 'still-guessing' })] as const;
    });
    expect(statuses.slice(0, 200).every((s) => s === 401)).toBe(true);
    expect(statuses.at(-1)).toBe(429);
    expectEnvelope(limited, 429, 'rate_limited');
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    // A valid credential has its own budget and still works.
    expect((await api.call('GET', '/v1/account')).status).toBe(200);
  });
});
