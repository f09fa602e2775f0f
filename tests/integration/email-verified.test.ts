import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, expectEnvelope, type TestApi } from '../helpers/stack.ts';
import { LOCAL_ISSUER } from '../../dev/stack.ts';
import { mintToken } from '../../dev/local-idp.ts';
import { getRaw } from '../helpers/db.ts';
import { keys } from '../../shared/db/keys.ts';
import { resetConfig } from '../../shared/config/env.ts';
import { isEmailVerifiedClaim } from '../../shared/auth/session.ts';

/** Only verified e-mails count: accounts are created, and admin granted, only for them. */
let api: TestApi;
const BOSS = 'boss@example.com';

beforeAll(async () => {
  process.env.ADMIN_EMAILS = `admin@localhost,${BOSS}`;
  api = await startTestApi();
});
afterAll(async () => api?.stop());

const token = async (email: string, emailVerified: unknown, omit = false) =>
  (await mintToken({ issuer: LOCAL_ISSUER, email, claims: omit ? { email_verified: undefined } : { email_verified: emailVerified } }))
    .token;

const subjectItem = (email: string) => getRaw(keys.subject(LOCAL_ISSUER, `local|${email}`));

describe('email_verified', () => {
  it.each([
    [true, true],
    ['true', true],
    [false, false],
    ['false', false],
    ['TRUE', false],
    [1, false],
    [null, false],
    [undefined, false],
  ])('claim %j counts as verified: %s', (value, verified) => {
    expect(isEmailVerifiedClaim(value)).toBe(verified);
  });

  it('an admin address with email_verified false is not admin, cannot create an account, and changes nothing', async () => {
    const unverified = await token(BOSS, false);
    const admin = await api.call('GET', '/v1/admin/users', { token: unverified });
    expectEnvelope(admin, 403, 'forbidden');
    expect(admin.body.error.message).toMatch(/verified/);
    const me = await api.call('GET', '/v1/account', { token: unverified });
    expectEnvelope(me, 403, 'forbidden');
    const key = await api.call('POST', '/v1/keys', { token: unverified, body: { name: 'sneaky' } });
    expectEnvelope(key, 403, 'forbidden');
    expect(await subjectItem(BOSS)).toBeUndefined();
  });

  it.each([
    ['absent', undefined, true],
    ['the string "false"', 'false', false],
    ['the number 1', 1, false],
    ['the string "yes"', 'yes', false],
  ])('email_verified %s is refused with 403 and creates no account', async (_label, value, omit) => {
    const email = `unverified-${String(value)}@example.com`;
    const res = await api.call('GET', '/v1/account', { token: await token(email, value, omit as boolean) });
    expectEnvelope(res, 403, 'forbidden');
    expect(await subjectItem(email)).toBeUndefined();
  });

  it('email_verified "true" (Cognito string) creates the account and grants admin to an admin address', async () => {
    const verified = await token(BOSS, 'true');
    const me = await api.call('GET', '/v1/account', { token: verified });
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({ email: BOSS, isAdmin: true });
    expect((await api.call('GET', '/v1/admin/users', { token: verified })).status).toBe(200);
    expect(await subjectItem(BOSS)).toMatchObject({ email: BOSS });
  });

  it('an existing account is refused once its e-mail is no longer verified', async () => {
    const email = 'carol-verified@example.com';
    expect((await api.call('GET', '/v1/account', { token: await token(email, true) })).status).toBe(200);
    const before = await getRaw(keys.subject(LOCAL_ISSUER, `local|${email}`));
    expectEnvelope(await api.call('GET', '/v1/account', { token: await token(email, false) }), 403, 'forbidden');
    expect(await subjectItem(email)).toEqual(before);
  });

  it('removing an address from ADMIN_EMAILS takes effect at once for session tokens and API keys', async () => {
    const session = await token(BOSS, true);
    const created = await api.call('POST', '/v1/keys', { token: session, body: { name: 'boss key' } });
    expect(created.status).toBe(201);
    expect((await api.call('GET', '/v1/admin/users', { token: created.body.secret })).status).toBe(200);

    const previous = process.env.ADMIN_EMAILS;
    process.env.ADMIN_EMAILS = 'admin@localhost';
    resetConfig();
    try {
      expectEnvelope(await api.call('GET', '/v1/admin/users', { token: session }), 403, 'forbidden');
      expectEnvelope(await api.call('GET', '/v1/admin/users', { token: created.body.secret }), 403, 'forbidden');
      expect((await api.call('GET', '/v1/account', { token: session })).body.isAdmin).toBe(false);
    } finally {
      process.env.ADMIN_EMAILS = previous;
      resetConfig();
    }
  });

  it('the local identity provider issues email_verified true', async () => {
    const res = await api.call('POST', '/dev/session', { token: null, body: { email: 'dave-local@example.com' } });
    expect(res.status).toBe(200);
    const payload = JSON.parse(Buffer.from(res.body.token.split('.')[1], 'base64url').toString('utf8'));
    expect(payload.email_verified).toBe(true);
    expect((await api.call('GET', '/v1/account', { token: res.body.token })).status).toBe(200);
  });
});
