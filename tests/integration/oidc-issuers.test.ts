import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handler as authorizer } from '../../functions/authorizer/handler.ts';
import { resetConfig } from '../../shared/config/env.ts';
import { expectEnvelope, startTestApi, type TestApi } from '../helpers/stack.ts';
import { startLocalIssuer, type LocalIssuer } from '../helpers/oidc-issuer.ts';

/**
 * The API as deployed with an external issuer (infra/stacks/api-stack.ts: OIDC_ISSUER exactly as
 * configured, OIDC_AUDIENCE, no OIDC_JWKS_URL), through the whole pipeline and the admin routes'
 * authorizer: session tokens of a Keycloak-like issuer (keys at its own path, found through
 * discovery) and of an Auth0-like one (issuer ending in `/`) sign in; another issuer does not.
 */
const AUDIENCE = 'control-plane';

let api: TestApi;
let keycloak: LocalIssuer;
let auth0: LocalIssuer;
let localEnv: Record<string, string | undefined>;

/** Deploys the API (in this process) against this issuer, as the stack's environment would. */
function trust(issuer: string): void {
  Object.assign(process.env, { OIDC_ISSUER: issuer, OIDC_AUDIENCE: AUDIENCE });
  delete process.env.OIDC_JWKS_URL;
  delete process.env.OIDC_TOKEN_USE;
  resetConfig();
}

beforeAll(async () => {
  api = await startTestApi({ webhooks: false, repairs: false });
  localEnv = { OIDC_ISSUER: process.env.OIDC_ISSUER, OIDC_JWKS_URL: process.env.OIDC_JWKS_URL, OIDC_AUDIENCE: process.env.OIDC_AUDIENCE };
  keycloak = await startLocalIssuer({ issuerPath: '/realms/acme', jwksPath: '/realms/acme/protocol/openid-connect/certs' });
  auth0 = await startLocalIssuer({ issuerPath: '/', jwksPath: '/.well-known/jwks.json' });
});
afterAll(async () => {
  Object.assign(process.env, localEnv);
  resetConfig();
  await Promise.all([keycloak?.stop(), auth0?.stop()]);
  await api?.stop();
});

describe('an external OpenID Connect issuer', () => {
  it('signs in with a Keycloak-like issuer whose keys are not at /.well-known/jwks.json', async () => {
    trust(keycloak.issuer);
    const token = await keycloak.mint({ email: 'kim@example.com', audience: AUDIENCE });
    const me = await api.call('GET', '/v1/account', { token });
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({ email: 'kim@example.com', isAdmin: false });
    expect(keycloak.requests).not.toContain('/realms/acme/.well-known/jwks.json');
    expect(keycloak.requests).toContain('/realms/acme/protocol/openid-connect/certs');
  });

  it('signs in with an issuer that ends in a slash, and lets its admin through the admin authorizer', async () => {
    trust(auth0.issuer);
    const user = await auth0.mint({ email: 'abe@example.com', audience: AUDIENCE });
    expect((await api.call('GET', '/v1/account', { token: user })).body).toMatchObject({ email: 'abe@example.com' });
    const admin = await auth0.mint({ email: 'admin@localhost', audience: AUDIENCE }); // ADMIN_EMAILS of tests/setup.ts
    const result = await authorizer({
      type: 'REQUEST',
      routeArn: 'arn:aws:execute-api:eu-west-1:123456789012:abc/$default/GET/v1/admin/users',
      identitySource: [`Bearer ${admin}`],
      headers: { authorization: `Bearer ${admin}` },
      requestContext: { requestId: 'req-1', http: { sourceIp: '198.51.100.7', path: '/v1/admin/users', method: 'GET' } },
    });
    expect(result).toMatchObject({ isAuthorized: true, context: { credentialKind: 'session' } });
  });

  it('refuses a token of another issuer with 401 in the envelope', async () => {
    trust(keycloak.issuer);
    for (const issuer of [auth0.issuer, `${keycloak.issuer}/`]) {
      const token = await keycloak.mint({ email: 'kim@example.com', audience: AUDIENCE, issuer });
      expectEnvelope(await api.call('GET', '/v1/account', { token }), 401, 'unauthorized');
    }
  });
});
