import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifySessionToken } from '../../shared/auth/session.ts';
import { discoveryUrlOf } from '../../shared/auth/jwt.ts';
import { readConfig, type OidcConfig } from '../../shared/config/env.ts';
import { startLocalIssuer, type LocalIssuer } from '../helpers/oidc-issuer.ts';

/**
 * Session tokens of any OpenID Connect issuer (not only Cognito): with no OIDC_JWKS_URL the keys
 * are found through the issuer's discovery document (`jwks_uri`), and the issuer is compared
 * exactly as configured. Real issuers on 127.0.0.1 (tests/helpers/oidc-issuer.ts): one serving
 * its keys at Keycloak's path, one whose issuer ends in `/` (Auth0), one shaped like Cognito.
 */
const AUDIENCE = 'control-plane';
const EMAIL = 'ann@example.com';
const TENANT = '9188040d-6c67-4c5b-b112-36a304b66dad';

let keycloak: LocalIssuer;
let auth0: LocalIssuer;
let cognito: LocalIssuer;
let entra: LocalIssuer;
/** Its discovery document names another issuer than the one it is fetched for. */
let impostor: LocalIssuer;

beforeAll(async () => {
  [keycloak, auth0, cognito, entra, impostor] = await Promise.all([
    startLocalIssuer({ issuerPath: '/realms/x', jwksPath: '/realms/x/protocol/openid-connect/certs' }),
    startLocalIssuer({ issuerPath: '/', jwksPath: '/.well-known/jwks.json' }),
    startLocalIssuer({ issuerPath: '/eu-west-1_Test', jwksPath: '/eu-west-1_Test/.well-known/jwks.json' }),
    startLocalIssuer({ issuerPath: `/${TENANT}/v2.0`, jwksPath: `/${TENANT}/discovery/v2.0/keys` }),
    startLocalIssuer({
      issuerPath: '/realms/y',
      jwksPath: '/realms/y/protocol/openid-connect/certs',
      announcedIssuer: () => 'https://idp.attacker.example/realms/y',
    }),
  ]);
});
afterAll(() => Promise.all([keycloak, auth0, cognito, entra, impostor].map((issuer) => issuer?.stop())));

/** The configuration an external issuer's deployment gives the functions: no OIDC_JWKS_URL. */
const configOf = (issuer: string): OidcConfig => readConfig({ TABLE_NAME: 't', OIDC_ISSUER: issuer, OIDC_AUDIENCE: AUDIENCE }).oidc!;

describe('keys through discovery (OIDC_JWKS_URL unset)', () => {
  it('keeps the issuer exactly as configured and finds no key URL by guessing', () => {
    const config = configOf('https://tenant.auth0.com/');
    expect(config.issuer).toBe('https://tenant.auth0.com/');
    expect(config.jwksUrl).toBeUndefined();
    // OIDC Discovery §4: the final slash goes before the well-known path, and only there.
    expect(discoveryUrlOf('https://tenant.auth0.com/')).toBe('https://tenant.auth0.com/.well-known/openid-configuration');
    expect(discoveryUrlOf('https://kc.example/realms/x')).toBe('https://kc.example/realms/x/.well-known/openid-configuration');
  });

  it('accepts a token of an issuer that serves its keys at a Keycloak-like path, reading discovery once', async () => {
    const config = configOf(keycloak.issuer);
    keycloak.requests.length = 0;
    for (let i = 0; i < 3; i++) {
      const claims = await verifySessionToken(await keycloak.mint({ email: EMAIL, audience: AUDIENCE }), config);
      expect(claims).toMatchObject({ issuer: keycloak.issuer, email: EMAIL, emailVerified: true });
    }
    expect(keycloak.requests).toEqual(['/realms/x/.well-known/openid-configuration', '/realms/x/protocol/openid-connect/certs']);
  });

  it('accepts a token whose issuer ends in a slash, and refuses the same issuer without it', async () => {
    expect(auth0.issuer).toMatch(/\/$/);
    const config = configOf(auth0.issuer);
    await expect(verifySessionToken(await auth0.mint({ email: EMAIL, audience: AUDIENCE }), config)).resolves.toMatchObject({
      issuer: auth0.issuer,
      email: EMAIL,
    });
    const withoutSlash = await auth0.mint({ email: EMAIL, audience: AUDIENCE, issuer: auth0.issuer.replace(/\/$/, '') });
    await expect(verifySessionToken(withoutSlash, config)).rejects.toMatchObject({ code: 'unauthorized' });
  });

  it('accepts a Cognito-shaped issuer through its discovery document too', async () => {
    const config = configOf(cognito.issuer);
    await expect(verifySessionToken(await cognito.mint({ email: EMAIL, audience: AUDIENCE }), config)).resolves.toMatchObject({
      issuer: cognito.issuer,
    });
    expect(cognito.requests).toContain('/eu-west-1_Test/.well-known/jwks.json');
  });

  it("reads an Entra ID work account's address as verified from xms_edov, only when email_verified is absent", async () => {
    const config = configOf(entra.issuer);
    const verifiedOf = async (claims: Record<string, unknown>) =>
      (await verifySessionToken(await entra.mint({ email: EMAIL, audience: AUDIENCE, claims }), config)).emailVerified;
    expect(await verifiedOf({ email_verified: undefined, xms_edov: true })).toBe(true);
    expect(await verifiedOf({ email_verified: undefined })).toBe(false);
    expect(await verifiedOf({ email_verified: undefined, xms_edov: false })).toBe(false);
    expect(await verifiedOf({ email_verified: false, xms_edov: true })).toBe(false);
    expect(entra.requests).toContain(`/${TENANT}/discovery/v2.0/keys`);
  });

  it('refuses a token of another issuer, signed with the same keys', async () => {
    const config = configOf(keycloak.issuer);
    for (const iss of [auth0.issuer, `${keycloak.issuer}/`, 'https://evil.example/realms/x']) {
      const token = await keycloak.mint({ email: EMAIL, audience: AUDIENCE, issuer: iss });
      await expect(verifySessionToken(token, config), iss).rejects.toMatchObject({ code: 'unauthorized' });
    }
  });

  it('refuses every token when the discovery document names another issuer, and asks again next time', async () => {
    const config = configOf(impostor.issuer);
    impostor.requests.length = 0;
    const token = await impostor.mint({ email: EMAIL, audience: AUDIENCE });
    await expect(verifySessionToken(token, config)).rejects.toMatchObject({ code: 'unauthorized' });
    await expect(verifySessionToken(token, config)).rejects.toMatchObject({ code: 'unauthorized' });
    // Its keys were never fetched; the failed discovery was not kept.
    expect(impostor.requests).toEqual(['/realms/y/.well-known/openid-configuration', '/realms/y/.well-known/openid-configuration']);
  });

  it('refuses tokens when the issuer serves no discovery document', async () => {
    // The Keycloak-like server answers 404 at the root's well-known path: an issuer configured as its origin has none.
    const origin = new URL(keycloak.issuer).origin;
    const token = await keycloak.mint({ email: EMAIL, audience: AUDIENCE, issuer: origin });
    await expect(verifySessionToken(token, configOf(origin))).rejects.toMatchObject({ code: 'unauthorized' });
  });
});
