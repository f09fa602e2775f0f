import { createHash, randomBytes } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { decodeJwt } from 'jose';
import { startTestApi, type TestApi } from '../helpers/stack.ts';
import { LOCAL_AUDIENCE } from '../../dev/local-idp.ts';
import { LOCAL_ISSUER } from '../../dev/stack.ts';

/**
 * The local identity provider's sign-in (dev/local-oidc.ts) over real HTTP, by hand, as
 * oidc-client-ts does it: discovery, the authorize form, the code with PKCE, the token endpoint, the
 * refresh grant with rotation, sign-out; and each refusal the specs ask for (RFC 6749, RFC 7636,
 * OIDC Core).
 */
let api: TestApi;
let oidc: string;
let callback: string;
beforeAll(async () => {
  api = await startTestApi({ panel: false });
  oidc = `${api.baseUrl}/dev/oidc`;
  callback = `${api.baseUrl}/app/callback`;
});
afterAll(async () => api?.stop());
afterEach(() => {
  vi.useRealTimers();
});

const pkce = () => {
  const verifier = randomBytes(48).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
};

function authorizeParams(overrides: Record<string, string | undefined> = {}): URLSearchParams {
  const base: Record<string, string | undefined> = {
    client_id: LOCAL_AUDIENCE,
    redirect_uri: callback,
    response_type: 'code',
    scope: 'openid email profile',
    state: 'state-123',
    nonce: 'nonce-456',
    code_challenge_method: 'S256',
    ...overrides,
  };
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(base)) if (v !== undefined) params.set(k, v);
  return params;
}

/** The hidden fields of the sign-in form, as the browser would post them back. */
function hiddenFields(html: string): URLSearchParams {
  const fields = new URLSearchParams();
  for (const [, name, value] of html.matchAll(/<input type="hidden" name="([^"]*)" value="([^"]*)">/g)) {
    fields.append(
      name!,
      value!.replaceAll('&quot;', '"').replaceAll('&lt;', '<').replaceAll('&gt;', '>').replaceAll('&#39;', "'").replaceAll('&amp;', '&'),
    );
  }
  return fields;
}

const postForm = (url: string, body: URLSearchParams) =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body, redirect: 'manual' });

/** The authorize form fetched and posted with `email`; answers the redirect's parameters. */
async function signIn(email: string, overrides: Record<string, string | undefined> = {}) {
  const { verifier, challenge } = pkce();
  const form = await fetch(`${oidc}/authorize?${authorizeParams({ code_challenge: challenge, ...overrides })}`);
  expect(form.status).toBe(200);
  const fields = hiddenFields(await form.text());
  fields.set('email', email);
  const res = await postForm(`${oidc}/authorize`, fields);
  expect(res.status).toBe(302);
  const location = new URL(res.headers.get('location')!);
  expect(`${location.origin}${location.pathname}`).toBe(callback);
  return { verifier, code: location.searchParams.get('code')!, state: location.searchParams.get('state'), location };
}

const exchange = (fields: Record<string, string>) => postForm(`${oidc}/token`, new URLSearchParams(fields));

const codeGrant = (code: string, verifier: string, overrides: Record<string, string> = {}) =>
  exchange({
    grant_type: 'authorization_code',
    code,
    redirect_uri: callback,
    client_id: LOCAL_AUDIENCE,
    code_verifier: verifier,
    ...overrides,
  });

async function expectTokenError(res: Response, error: string) {
  const body = (await res.json()) as { error: string; error_description?: string };
  expect(res.status, JSON.stringify(body)).toBe(400);
  expect(body.error).toBe(error);
  expect(typeof body.error_description).toBe('string');
  expect(res.headers.get('cache-control')).toBe('no-store');
}

describe('discovery', () => {
  it('states the endpoints oidc-client-ts uses, code with S256 only, and the issuer the tokens carry', async () => {
    const res = await fetch(`${oidc}/.well-known/openid-configuration`);
    expect(res.status).toBe(200);
    const doc = (await res.json()) as Record<string, unknown>;
    expect(doc).toMatchObject({
      issuer: LOCAL_ISSUER,
      authorization_endpoint: `${oidc}/authorize`,
      token_endpoint: `${oidc}/token`,
      end_session_endpoint: `${oidc}/logout`,
      jwks_uri: `${oidc}/.well-known/jwks.json`,
      response_types_supported: ['code'],
      grant_types_supported: ['authorization_code', 'refresh_token'],
      code_challenge_methods_supported: ['S256'],
      id_token_signing_alg_values_supported: ['RS256'],
      scopes_supported: ['openid', 'email', 'profile'],
    });
    // The JWKS it points at is served (by the API's dev routes).
    const jwks = (await (await fetch(doc.jwks_uri as string)).json()) as { keys: unknown[] };
    expect(jwks.keys).toHaveLength(1);
  });
});

describe('code + PKCE', () => {
  it('signs in by the form: a code and the state come back, the ID token opens the API as the e-mail typed', async () => {
    const form = await fetch(`${oidc}/authorize?${authorizeParams({ code_challenge: pkce().challenge })}`);
    const html = await form.text();
    expect(form.headers.get('content-type')).toMatch(/^text\/html/);
    expect(form.headers.get('content-security-policy')).toMatch(/script-src 'self'/);
    expect(form.headers.get('content-security-policy')).not.toMatch(/unsafe-inline/);
    expect(html).not.toMatch(/<script|<style|style="/);
    // The e-mail field has a visible label.
    expect(html).toMatch(/<label for="email">E-mail address<\/label>/);
    expect(html).toMatch(/<input type="email" id="email" name="email"/);
    expect(html).toMatch(/treated as verified/);

    const email = `Oidc.Player+${Date.now()}@example.com`;
    const { code, state, verifier, location } = await signIn(email);
    expect(code).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(state).toBe('state-123');
    expect(location.searchParams.get('iss')).toBe(LOCAL_ISSUER);

    const res = await codeGrant(code, verifier);
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    const tokens = (await res.json()) as Record<string, unknown>;
    expect(tokens).toMatchObject({ token_type: 'Bearer', expires_in: 3600, scope: 'openid email profile' });
    expect(typeof tokens.refresh_token).toBe('string');
    const claims = decodeJwt(tokens.id_token as string);
    expect(claims).toMatchObject({
      iss: LOCAL_ISSUER,
      aud: LOCAL_AUDIENCE,
      sub: `local|${email.toLowerCase()}`,
      email,
      email_verified: true,
      nonce: 'nonce-456',
    });
    expect(claims.exp! - claims.iat!).toBe(3600);

    const account = await api.call('GET', '/v1/account', { token: tokens.id_token as string });
    expect(account.status, account.text).toBe(200);
    // The service keeps addresses in lower case.
    expect(account.body.email).toBe(email.toLowerCase());
  });

  it('shows a bad e-mail address on the form again, with the error, and no code', async () => {
    const form = await fetch(`${oidc}/authorize?${authorizeParams({ code_challenge: pkce().challenge })}`);
    const fields = hiddenFields(await form.text());
    fields.set('email', 'not an address');
    const res = await postForm(`${oidc}/authorize`, fields);
    expect(res.status).toBe(400);
    expect(res.headers.get('location')).toBeNull();
    const html = await res.text();
    expect(html).toMatch(/<p id="email-error" class="error" role="alert">Enter an e-mail address/);
    expect(html).toMatch(/aria-invalid="true"/);
    expect(html).toMatch(/<label for="email">/);
    // The request is still there to try again.
    expect(hiddenFields(html).get('code_challenge')).toBe(fields.get('code_challenge'));
  });

  it('accepts an address without a dotted domain, as the service does (admin@localhost)', async () => {
    const { code, verifier } = await signIn('admin@localhost');
    const tokens = (await (await codeGrant(code, verifier)).json()) as { id_token: string };
    const account = await api.call('GET', '/v1/account', { token: tokens.id_token });
    expect(account.body).toMatchObject({ email: 'admin@localhost', isAdmin: true });
  });

  it('refuses a wrong verifier, and the code is spent by the attempt', async () => {
    const { code, verifier } = await signIn('pkce@example.com');
    await expectTokenError(await codeGrant(code, pkce().verifier), 'invalid_grant');
    await expectTokenError(await codeGrant(code, verifier), 'invalid_grant');
  });

  it('refuses a missing or malformed verifier as an invalid request', async () => {
    const { code } = await signIn('pkce2@example.com');
    await expectTokenError(
      await exchange({ grant_type: 'authorization_code', code, redirect_uri: callback, client_id: LOCAL_AUDIENCE }),
      'invalid_request',
    );
    await expectTokenError(await codeGrant(code, 'short'), 'invalid_request');
  });

  it('refuses a code used twice', async () => {
    const { code, verifier } = await signIn('twice@example.com');
    const first = await codeGrant(code, verifier);
    expect(first.status).toBe(200);
    const { refresh_token } = (await first.json()) as { refresh_token: string };
    await expectTokenError(await codeGrant(code, verifier), 'invalid_grant');
    // What the code gave is revoked with it (RFC 6749 §4.1.2).
    await expectTokenError(await exchange({ grant_type: 'refresh_token', refresh_token, client_id: LOCAL_AUDIENCE }), 'invalid_grant');
  });

  it('refuses a code past its 60 seconds', async () => {
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() });
    const { code, verifier } = await signIn('late@example.com');
    vi.setSystemTime(Date.now() + 61_000);
    await expectTokenError(await codeGrant(code, verifier), 'invalid_grant');
  });

  it('accepts a code just inside its 60 seconds', async () => {
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() });
    const { code, verifier } = await signIn('intime@example.com');
    vi.setSystemTime(Date.now() + 55_000);
    const res = await codeGrant(code, verifier);
    expect(res.status).toBe(200);
  });

  it('refuses a redirect_uri at the token endpoint other than the authorization request’s', async () => {
    const { code, verifier } = await signIn('redirect@example.com');
    await expectTokenError(await codeGrant(code, verifier, { redirect_uri: `${api.baseUrl}/app/other` }), 'invalid_grant');
  });

  it('refuses an unknown client at the token endpoint', async () => {
    const { code, verifier } = await signIn('client@example.com');
    await expectTokenError(await codeGrant(code, verifier, { client_id: 'someone-else' }), 'invalid_client');
    // The code was not spent by a request from no known client.
    expect((await codeGrant(code, verifier)).status).toBe(200);
  });

  it('refuses an unknown grant type and a request that is not a form', async () => {
    await expectTokenError(await exchange({ grant_type: 'password', client_id: LOCAL_AUDIENCE }), 'unsupported_grant_type');
    await expectTokenError(await exchange({ client_id: LOCAL_AUDIENCE }), 'invalid_request');
    const json = await fetch(`${oidc}/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ grant_type: 'authorization_code' }),
    });
    await expectTokenError(json, 'invalid_request');
  });
});

describe('authorize refusals', () => {
  /** A redirect back with `error` and the state. */
  async function expectRedirectedError(params: URLSearchParams, error: string) {
    const res = await fetch(`${oidc}/authorize?${params}`, { redirect: 'manual' });
    expect(res.status).toBe(302);
    const location = new URL(res.headers.get('location')!);
    expect(`${location.origin}${location.pathname}`).toBe(callback);
    expect(location.searchParams.get('error')).toBe(error);
    expect(location.searchParams.get('state')).toBe('state-123');
    expect(location.searchParams.get('code')).toBeNull();
  }

  it('requires a code challenge (PKCE)', async () => {
    await expectRedirectedError(authorizeParams(), 'invalid_request');
  });

  it('refuses the plain method, and a challenge without a method (plain by default)', async () => {
    const { verifier } = pkce();
    await expectRedirectedError(authorizeParams({ code_challenge: verifier, code_challenge_method: 'plain' }), 'invalid_request');
    await expectRedirectedError(authorizeParams({ code_challenge: pkce().challenge, code_challenge_method: undefined }), 'invalid_request');
  });

  it('refuses a response type other than code, and a request without openid', async () => {
    await expectRedirectedError(authorizeParams({ code_challenge: pkce().challenge, response_type: 'token' }), 'unsupported_response_type');
    await expectRedirectedError(authorizeParams({ code_challenge: pkce().challenge, scope: 'email' }), 'invalid_scope');
  });

  it('refuses the same at the form post: no code for a request that lost its challenge', async () => {
    const fields = authorizeParams({ code_challenge: pkce().challenge });
    fields.delete('code_challenge');
    fields.set('email', 'post@example.com');
    const res = await postForm(`${oidc}/authorize`, fields);
    expect(res.status).toBe(302);
    expect(new URL(res.headers.get('location')!).searchParams.get('error')).toBe('invalid_request');
  });

  for (const [what, redirect] of [
    ['another origin', 'https://evil.example/app/callback'],
    ['another port', 'http://127.0.0.1:1/app/callback'],
    ['another path', '/app/elsewhere'],
    ['a query added', '/app/callback?x=1'],
  ] as const) {
    it(`shows an error page for a redirect_uri on ${what}, and never redirects there`, async () => {
      const target = redirect.startsWith('/') ? `${api.baseUrl}${redirect}` : redirect;
      const params = authorizeParams({ code_challenge: pkce().challenge, redirect_uri: target });
      const res = await fetch(`${oidc}/authorize?${params}`, { redirect: 'manual' });
      expect(res.status).toBe(400);
      expect(res.headers.get('location')).toBeNull();
      expect(await res.text()).toMatch(/role="alert">The redirect_uri/);
      // Nor after the form: the post is checked the same way.
      params.set('email', 'x@example.com');
      const post = await postForm(`${oidc}/authorize`, params);
      expect(post.status).toBe(400);
      expect(post.headers.get('location')).toBeNull();
    });
  }

  it('shows an error page for an unknown client, and never redirects', async () => {
    const res = await fetch(`${oidc}/authorize?${authorizeParams({ code_challenge: pkce().challenge, client_id: 'someone-else' })}`, {
      redirect: 'manual',
    });
    expect(res.status).toBe(400);
    expect(res.headers.get('location')).toBeNull();
    expect(await res.text()).toMatch(/Unknown client/);
  });
});

describe('refresh', () => {
  it('gives a new ID token that works, rotates the refresh token and refuses the old one', async () => {
    const email = 'renew@example.com';
    const { code, verifier } = await signIn(email);
    const first = (await (await codeGrant(code, verifier)).json()) as { id_token: string; refresh_token: string };
    // A second later, so the new token's iat differs.
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() + 2_000 });
    const res = await exchange({
      grant_type: 'refresh_token',
      refresh_token: first.refresh_token,
      client_id: LOCAL_AUDIENCE,
      scope: 'openid email profile',
    });
    vi.useRealTimers();
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    const second = (await res.json()) as { id_token: string; refresh_token: string; token_type: string };
    expect(second.token_type).toBe('Bearer');
    expect(second.id_token).not.toBe(first.id_token);
    expect(second.refresh_token).not.toBe(first.refresh_token);
    const before = decodeJwt(first.id_token);
    const after = decodeJwt(second.id_token);
    // The same sign-in (what oidc-client-ts compares), a later token, no nonce.
    expect(after).toMatchObject({ sub: before.sub, aud: before.aud, iss: before.iss, auth_time: before.auth_time, sid: before.sid, email });
    expect(after.iat!).toBeGreaterThan(before.iat!);
    expect(after.nonce).toBeUndefined();
    const account = await api.call('GET', '/v1/account', { token: second.id_token });
    expect(account.status).toBe(200);
    expect(account.body.email).toBe(email);

    await expectTokenError(
      await exchange({ grant_type: 'refresh_token', refresh_token: first.refresh_token, client_id: LOCAL_AUDIENCE }),
      'invalid_grant',
    );
    // The new one works, once.
    const third = await exchange({ grant_type: 'refresh_token', refresh_token: second.refresh_token, client_id: LOCAL_AUDIENCE });
    expect(third.status).toBe(200);
  });

  it('refuses a refresh for another client, or asking for more scope than granted', async () => {
    const { code, verifier } = await signIn('scope@example.com', { scope: 'openid email' });
    const tokens = (await (await codeGrant(code, verifier)).json()) as { refresh_token: string; scope: string };
    expect(tokens.scope).toBe('openid email');
    await expectTokenError(
      await exchange({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_id: 'other' }),
      'invalid_client',
    );
    await expectTokenError(
      await exchange({
        grant_type: 'refresh_token',
        refresh_token: tokens.refresh_token,
        client_id: LOCAL_AUDIENCE,
        scope: 'openid email profile',
      }),
      'invalid_scope',
    );
    await expectTokenError(
      await exchange({ grant_type: 'refresh_token', refresh_token: 'made-up', client_id: LOCAL_AUDIENCE }),
      'invalid_grant',
    );
  });

  it('uses LOCAL_IDP_TOKEN_SECONDS for the lifetime of the tokens', async () => {
    process.env.LOCAL_IDP_TOKEN_SECONDS = '65';
    try {
      const { code, verifier } = await signIn('short@example.com');
      const tokens = (await (await codeGrant(code, verifier)).json()) as { id_token: string; expires_in: number };
      expect(tokens.expires_in).toBe(65);
      const claims = decodeJwt(tokens.id_token);
      expect(claims.exp! - claims.iat!).toBe(65);
    } finally {
      delete process.env.LOCAL_IDP_TOKEN_SECONDS;
    }
  });
});

describe('sign-out', () => {
  const logout = (params: Record<string, string>) => fetch(`${oidc}/logout?${new URLSearchParams(params)}`, { redirect: 'manual' });

  it('returns to the dashboard, passing the state back, and ends the sign-in’s refresh tokens', async () => {
    const { code, verifier } = await signIn('bye@example.com');
    const tokens = (await (await codeGrant(code, verifier)).json()) as { id_token: string; refresh_token: string };
    const res = await logout({
      id_token_hint: tokens.id_token,
      post_logout_redirect_uri: `${api.baseUrl}/app/`,
      client_id: LOCAL_AUDIENCE,
      logout_uri: `${api.baseUrl}/app/`,
      state: 'bye-state',
    });
    expect(res.status).toBe(302);
    expect(res.headers.get('location')).toBe(`${api.baseUrl}/app/?state=bye-state`);
    await expectTokenError(
      await exchange({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_id: LOCAL_AUDIENCE }),
      'invalid_grant',
    );
  });

  it('reads Cognito’s logout_uri too', async () => {
    const res = await logout({ client_id: LOCAL_AUDIENCE, logout_uri: `${api.baseUrl}/app/` });
    expect(res.status).toBe(302);
    expect(res.headers.get('location')).toBe(`${api.baseUrl}/app/`);
  });

  for (const target of ['https://evil.example/app/', 'http://127.0.0.1:1/app/', '/app/servers', '/elsewhere']) {
    it(`redirects nowhere but the dashboard: ${target} gets a signed-out page`, async () => {
      const url = target.startsWith('/') ? `${api.baseUrl}${target}` : target;
      const res = await logout({ post_logout_redirect_uri: url });
      expect(res.status).toBe(200);
      expect(res.headers.get('location')).toBeNull();
      const html = await res.text();
      expect(html).toMatch(/<h1>Signed out<\/h1>/);
      expect(html).toMatch(/not an address of this dashboard/);
    });
  }

  it('shows the signed-out page without a return address', async () => {
    const res = await logout({});
    expect(res.status).toBe(200);
    expect(await res.text()).toMatch(/You are signed out/);
  });
});
