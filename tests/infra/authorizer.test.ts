import { beforeAll, describe, expect, it } from 'vitest';
import { ensureTable } from '../../dev/dynamodb.ts';
import { handler } from '../../functions/authorizer/handler.ts';
import { ensureAccountForSubject } from '../../shared/accounts/index.ts';
import { scopesOfAccount } from '../../shared/api/scopes.ts';
import { createApiKey, revokeApiKey } from '../../shared/api-keys/index.ts';
import { rateCounterOf } from '../../shared/http/rate-claim.ts';
import { getRaw } from '../helpers/db.ts';

/**
 * The admin routes' Lambda authorizer (functions/authorizer/handler.ts) against DynamoDB Local:
 * the same `authenticate` as the pipeline, answered in API Gateway's simple response format.
 * (Session tokens go through the same `authenticate`; the JWT path is covered by the pipeline's tests.)
 */
const event = (authorization?: string) => ({
  type: 'REQUEST',
  routeArn: 'arn:aws:execute-api:eu-west-1:123456789012:abc/$default/GET/v1/admin/users',
  identitySource: authorization ? [authorization] : null,
  headers: authorization ? { authorization } : {},
  requestContext: { requestId: 'req-1', http: { sourceIp: '198.51.100.7', path: '/v1/admin/users', method: 'GET' } },
});

async function keyFor(email: string, subject: string) {
  const account = await ensureAccountForSubject('https://issuer.example', subject, email);
  const isAdmin = email === 'admin@localhost'; // ADMIN_EMAILS of tests/setup.ts
  const principal = { accountId: account.accountId, email: account.email, scopes: new Set(scopesOfAccount(isAdmin)) };
  return { accountId: account.accountId, ...(await createApiKey(principal, { name: 'edge test' })) };
}

let admin: Awaited<ReturnType<typeof keyFor>>;
let user: Awaited<ReturnType<typeof keyFor>>;

beforeAll(async () => {
  await ensureTable(process.env.DYNAMODB_ENDPOINT!, process.env.TABLE_NAME!);
  admin = await keyFor('admin@localhost', 'admin-subject');
  user = await keyFor('someone@example.com', 'user-subject');
});

describe('admin authorizer (API Gateway simple responses)', () => {
  it("authorizes an admin's API key, with ids (never the credential) in the context", async () => {
    const result = await handler(event(`Bearer ${admin.secret}`));
    expect(result).toEqual({
      isAuthorized: true,
      context: { accountId: admin.accountId, credentialKind: 'api_key', credentialId: admin.key.id },
    });
    expect(JSON.stringify(result)).not.toContain(admin.secret);
  });

  it('refuses a valid key of an account that is not an admin', async () => {
    expect(await handler(event(`Bearer ${user.secret}`))).toEqual({ isAuthorized: false });
  });

  it('refuses a missing, malformed, unknown, tampered or revoked credential', async () => {
    expect(await handler(event())).toEqual({ isAuthorized: false });
    expect(await handler(event(`Basic ${admin.secret}`))).toEqual({ isAuthorized: false });
    expect(await handler(event('Bearer not-a-key'))).toEqual({ isAuthorized: false });
    const tampered = `${admin.secret.slice(0, -1)}${admin.secret.endsWith('A') ? 'B' : 'A'}`;
    expect(await handler(event(`Bearer ${tampered}`))).toEqual({ isAuthorized: false });
    expect(await handler(event('Bearer a.b.c'))).toEqual({ isAuthorized: false }); // a "JWT" with no issuer configured

    const revocable = await keyFor('admin@localhost', 'admin-subject');
    expect((await handler(event(`Bearer ${revocable.secret}`))).isAuthorized).toBe(true);
    await revokeApiKey(revocable.accountId, revocable.key.id);
    expect(await handler(event(`Bearer ${revocable.secret}`))).toEqual({ isAuthorized: false });
  });

  it("counts refused credentials against the caller's address, as the pipeline does", async () => {
    const now = Date.now();
    const windowStart = Math.floor(now / 60_000) * 60;
    const counter = rateCounterOf('ip:203.0.113.9', windowStart);
    const before = Number((await getRaw(counter.Key))?.[`h${counter.minute}`] ?? 0);
    const refused = { ...event('Bearer not-a-key'), requestContext: { requestId: 'r', http: { sourceIp: '203.0.113.9' } } };
    await handler(refused);
    await handler(refused);
    const after = Number((await getRaw(counter.Key))?.[`h${counter.minute}`] ?? 0);
    // Two refusals, unless the minute turned between the reads (then the new window holds them).
    // The counter holds the units the process claimed for them: 1, then 2 (shared/http/rate-limit.ts).
    if (Math.floor(Date.now() / 60_000) * 60 === windowStart) expect(after - before).toBe(3);
    // An accepted admin is not counted here (the admin function's pipeline counts its request).
    const ok = { ...event(`Bearer ${admin.secret}`), requestContext: { requestId: 'r', http: { sourceIp: '203.0.113.10' } } };
    expect((await handler(ok)).isAuthorized).toBe(true);
    expect(await getRaw(rateCounterOf('ip:203.0.113.10', windowStart).Key)).toBeUndefined();
  });
});
