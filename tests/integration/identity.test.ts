import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SignJWT, generateKeyPair } from 'jose';
import { startTestApi, expectEnvelope, type TestApi } from '../helpers/stack.ts';
import { LOCAL_ISSUER } from '../../dev/stack.ts';
import { LOCAL_AUDIENCE, mintSessionToken, mintToken } from '../../dev/local-idp.ts';
import { queryPartition, setAttributes } from '../helpers/db.ts';
import { keys } from '../../shared/db/keys.ts';
import { hashApiKey } from '../../shared/auth/api-key-format.ts';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(async () => api?.stop());

describe('credentials', () => {
  it('refuses a missing, malformed or unknown credential with 401 in the envelope', async () => {
    expectEnvelope(await api.call('GET', '/v1/account', { token: null }), 401, 'unauthorized');
    expectEnvelope(await api.call('GET', '/v1/account', { token: null, headers: { authorization: 'Basic abc' } }), 401, 'unauthorized');
    expectEnvelope(await api.call('GET', '/v1/account', { token: 'cp_test_notarealkeyatallxxxxxxxxxxxxxxxxxxxxx' }), 401, 'unauthorized');
    expectEnvelope(await api.call('GET', '/v1/account', { token: 'some-operator-string-that-is-unknown' }), 401, 'unauthorized');
  });

  it('refuses a key whose checksum is wrong without reading the table', async () => {
    const last = api.adminApiKey.at(-1) === 'a' ? 'b' : 'a';
    const tampered = `${api.adminApiKey.slice(0, -1)}${last}`;
    const res = await api.call('GET', '/v1/account', { token: tampered });
    expectEnvelope(res, 401, 'unauthorized');
  });

  it('accepts the admin key and reports isAdmin', async () => {
    const res = await api.call('GET', '/v1/account');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ email: 'admin@localhost', isAdmin: true, trialGranted: true, balanceCents: 500, balanceUsd: 5 });
  });
});

describe('API keys', () => {
  it('returns the secret once, stores only its hash, lists it without the secret', async () => {
    const created = await api.call('POST', '/v1/keys', { body: { name: 'deploy bot' } });
    expect(created.status).toBe(201);
    const secret: string = created.body.secret;
    expect(secret).toMatch(/^cp_test_[0-9A-Za-z]{38}$/);
    expect(created.body.scopes).toContain('admin');

    const stored = await queryPartition(keys.apiKeyPrefix((await api.call('GET', '/v1/account')).body.id));
    const record = stored.find((i) => i.keyId === created.body.id)!;
    expect(record.hash).toBe(hashApiKey(secret));
    expect(JSON.stringify(stored)).not.toContain(secret);

    const listed = await api.call('GET', '/v1/keys');
    expect(listed.text).not.toContain(secret);
    expect(listed.body.data.map((k: { id: string }) => k.id)).toContain(created.body.id);

    const me = await api.call('GET', '/v1/account', { token: secret });
    expect(me.status).toBe(200);
  });

  it('revocation takes effect on the next request, and revoking twice is harmless', async () => {
    const created = await api.call('POST', '/v1/keys', { body: { name: 'short-lived' } });
    const secret = created.body.secret;
    expect((await api.call('GET', '/v1/account', { token: secret })).status).toBe(200);
    const revoked = await api.call('DELETE', `/v1/keys/${created.body.id}`);
    expect(revoked.status).toBe(200);
    expect(revoked.body).toMatchObject({ id: created.body.id, revoked: true });
    expectEnvelope(await api.call('GET', '/v1/account', { token: secret }), 401, 'unauthorized');
    const again = await api.call('DELETE', `/v1/keys/${created.body.id}`);
    expect(again.body.revokedAt).toBe(revoked.body.revokedAt);
    const listed = await api.call('GET', '/v1/keys');
    expect(listed.body.data.find((k: { id: string }) => k.id === created.body.id).status).toBe('revoked');
  });

  it('an expired key is refused', async () => {
    const created = await api.call('POST', '/v1/keys', { body: { name: 'expiring', expiresInDays: 1 } });
    expect(Date.parse(created.body.expiresAt) - Date.now()).toBeGreaterThan(86_000_000);
    expect((await api.call('GET', '/v1/account', { token: created.body.secret })).status).toBe(200);
    // Move the stored expiry into the past, as if a day had gone by.
    await setAttributes(keys.apiKeyHash(hashApiKey(created.body.secret)), { expiresAt: new Date(Date.now() - 1000).toISOString() });
    const res = await api.call('GET', '/v1/account', { token: created.body.secret });
    expectEnvelope(res, 401, 'unauthorized');
    expect(res.body.error.message).toMatch(/expired/);
  });

  it("another account's key is 404, like an unknown one", async () => {
    const token = await api.session('mallory@example.com');
    const created = await api.call('POST', '/v1/keys', { body: { name: 'admin key' } });
    expectEnvelope(await api.call('DELETE', `/v1/keys/${created.body.id}`, { token }), 404, 'not_found');
    expectEnvelope(await api.call('DELETE', '/v1/keys/00000000-0000-4000-8000-000000000000', { token }), 404, 'not_found');
    expect((await api.call('GET', '/v1/account', { token: created.body.secret })).status).toBe(200);
  });

  it('records lastUsedAt, throttled', async () => {
    const created = await api.call('POST', '/v1/keys', { body: { name: 'usage' } });
    await api.call('GET', '/v1/account', { token: created.body.secret });
    const first = (await api.call('GET', '/v1/keys')).body.data.find((k: { id: string }) => k.id === created.body.id).lastUsedAt;
    expect(first).not.toBeNull();
    await api.call('GET', '/v1/account', { token: created.body.secret });
    const second = (await api.call('GET', '/v1/keys')).body.data.find((k: { id: string }) => k.id === created.body.id).lastUsedAt;
    expect(second).toBe(first);
  });
});

describe('scopes', () => {
  it('a key without a scope is refused with 403, and cannot mint a broader key', async () => {
    const reader = await api.call('POST', '/v1/keys', { body: { name: 'reader', scopes: ['account:read'] } });
    expect(reader.body.scopes).toEqual(['account:read']);
    expect((await api.call('GET', '/v1/account', { token: reader.body.secret })).status).toBe(200);
    const res = await api.call('POST', '/v1/keys', { token: reader.body.secret, body: { name: 'x' } });
    expectEnvelope(res, 403, 'forbidden');
    expect(res.body.error.details).toEqual({ requiredScope: 'keys:write' });
    expectEnvelope(await api.call('GET', '/v1/admin/settings', { token: reader.body.secret }), 403, 'forbidden');
  });

  it("a key holds at most its creator's scopes", async () => {
    const token = await api.session('carol@example.com');
    const res = await api.call('POST', '/v1/keys', { token, body: { name: 'sneaky', scopes: ['admin'] } });
    expectEnvelope(res, 403, 'forbidden');
    const ok = await api.call('POST', '/v1/keys', { token, body: { name: 'default' } });
    expect(ok.body.scopes).not.toContain('admin');
    expect(ok.body.scopes).toContain('billing:write');
  });

  it('invoices and checkout scopes are separate: a billing:read key cannot write billing', async () => {
    const key = await api.call('POST', '/v1/keys', { body: { name: 'bookkeeper', scopes: ['billing:read'] } });
    expect(key.body.scopes).toEqual(['billing:read']);
    expectEnvelope(await api.call('GET', '/v1/account', { token: key.body.secret }), 403, 'forbidden');
  });

  it('non-admins get 403 on every admin endpoint', async () => {
    const token = await api.session('dave@example.com');
    for (const [method, path] of [
      ['GET', '/v1/admin/users'],
      ['GET', '/v1/admin/logs'],
      ['GET', '/v1/admin/settings'],
      ['PUT', '/v1/admin/settings'],
    ] as const) {
      expectEnvelope(
        await api.call(method, path, { token, body: method === 'PUT' ? { trialCreditCents: 1 } : undefined }),
        403,
        'forbidden',
      );
    }
  });
});

describe('session tokens', () => {
  it('the first token of a subject creates the account and grants the trial credit once', async () => {
    const token = await api.session('erin@example.com');
    const [a, b, c] = await Promise.all([1, 2, 3].map(() => api.call('GET', '/v1/account', { token })));
    expect(new Set([a!.body.id, b!.body.id, c!.body.id]).size).toBe(1);
    expect(a!.body).toMatchObject({ email: 'erin@example.com', balanceCents: 500, trialGranted: true, isAdmin: false });
    const ledger = await queryPartition(keys.ledgerPrefix(a!.body.id));
    expect(ledger).toHaveLength(1);
    expect(ledger[0]).toMatchObject({ type: 'trial', amountCents: 500, balanceAfterCents: 500, granted: true });
    const again = await api.call('GET', '/v1/account', { token: await api.session('erin@example.com') });
    expect(again.body.balanceCents).toBe(500);
  });

  it('refuses a token signed by a key the service does not trust', async () => {
    const { privateKey } = await generateKeyPair('RS256');
    const forged = await new SignJWT({ email: 'admin@localhost', token_use: 'id' })
      .setProtectedHeader({ alg: 'RS256', kid: 'local-1' })
      .setIssuer(LOCAL_ISSUER)
      .setAudience(LOCAL_AUDIENCE)
      .setSubject('local|admin@localhost')
      .setIssuedAt()
      .setExpirationTime('5m')
      .sign(privateKey);
    expectEnvelope(await api.call('GET', '/v1/account', { token: forged }), 401, 'unauthorized');
  });

  it('refuses expired tokens, other audiences, other issuers, alg none and tokens without exp', async () => {
    const { token: good } = await mintSessionToken(LOCAL_ISSUER, 'frank@example.com');
    expect((await api.call('GET', '/v1/account', { token: good })).status).toBe(200);

    const [header, payload] = good.split('.');
    const claims = JSON.parse(Buffer.from(payload!, 'base64url').toString());
    const unsigned = (p: object) =>
      `${Buffer.from(JSON.stringify({ alg: 'none' })).toString('base64url')}.${Buffer.from(JSON.stringify(p)).toString('base64url')}.`;
    expectEnvelope(await api.call('GET', '/v1/account', { token: unsigned(claims) }), 401, 'unauthorized');
    // Same signature, edited claims: the signature no longer matches.
    const edited = `${header}.${Buffer.from(JSON.stringify({ ...claims, email: 'admin@localhost' })).toString('base64url')}.${good.split('.')[2]}`;
    expectEnvelope(await api.call('GET', '/v1/account', { token: edited }), 401, 'unauthorized');

    const bad = [
      await mintToken({ issuer: LOCAL_ISSUER, email: 'frank@example.com', expiresInSeconds: -60 }),
      await mintToken({ issuer: LOCAL_ISSUER, email: 'frank@example.com', audience: 'another-app' }),
      await mintToken({ issuer: 'https://evil.example', email: 'frank@example.com' }),
      await mintToken({ issuer: LOCAL_ISSUER, email: 'frank@example.com', expiresInSeconds: null }),
      await mintToken({ issuer: LOCAL_ISSUER, email: 'frank@example.com', claims: { token_use: 'access' } }),
    ];
    for (const { token } of bad) expectEnvelope(await api.call('GET', '/v1/account', { token }), 401, 'unauthorized');
    const expired = await api.call('GET', '/v1/account', { token: bad[0]!.token });
    expect(expired.body.error.message).toMatch(/expired/);
  });
});
