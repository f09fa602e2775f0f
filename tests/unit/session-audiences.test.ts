import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { localJwks, mintToken } from '../../dev/local-idp.ts';
import { verifySessionToken } from '../../shared/auth/session.ts';
import { readConfig, type OidcConfig } from '../../shared/config/env.ts';

/**
 * In AWS the API accepts the ID tokens of two app clients: its own (programs signing in through
 * the user pools API) and the dashboard's (code + PKCE on the hosted UI). infra/stacks/api-stack.ts
 * gives both ids in OIDC_AUDIENCE and OIDC_CLIENT_IDS, comma-separated; a token of any other client fails.
 * The JWKS is served on 127.0.0.1, as the issuer would serve it.
 */
const ISSUER = 'https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_Test';
let server: Server;
let oidc: OidcConfig;

beforeAll(async () => {
  const jwks = JSON.stringify(await localJwks());
  server = createServer((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(jwks));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  oidc = readConfig({
    TABLE_NAME: 't',
    OIDC_ISSUER: ISSUER,
    OIDC_JWKS_URL: `http://127.0.0.1:${port}/jwks.json`,
    OIDC_AUDIENCE: 'api-client,dashboard-client',
    OIDC_TOKEN_USE: 'id',
    OIDC_CLIENT_IDS: 'api-client,dashboard-client',
  }).oidc!;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

const tokenFor = async (audience: string) => (await mintToken({ issuer: ISSUER, email: 'ann@example.com', audience })).token;

describe('session tokens of several app clients (OIDC_AUDIENCE as a list)', () => {
  it('reads OIDC_AUDIENCE as a comma-separated list (one value, or none, as before)', () => {
    expect(oidc.audience).toEqual(['api-client', 'dashboard-client']);
    expect(oidc.clientIds).toEqual(['api-client', 'dashboard-client']);
    expect(readConfig({ TABLE_NAME: 't', OIDC_ISSUER: ISSUER, OIDC_AUDIENCE: 'control-plane' }).oidc!.audience).toEqual(['control-plane']);
    expect(readConfig({ TABLE_NAME: 't', OIDC_ISSUER: ISSUER }).oidc!.audience).toBeUndefined();
  });

  it("accepts the API client's and the dashboard client's ID tokens", async () => {
    for (const audience of ['api-client', 'dashboard-client']) {
      await expect(verifySessionToken(await tokenFor(audience), oidc)).resolves.toMatchObject({ email: 'ann@example.com', issuer: ISSUER });
    }
  });

  it("refuses another client's token", async () => {
    await expect(verifySessionToken(await tokenFor('another-client'), oidc)).rejects.toMatchObject({ code: 'unauthorized' });
  });
});
