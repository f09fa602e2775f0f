import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { localJwks, mintToken } from '../../dev/local-idp.ts';

/**
 * An OpenID Connect issuer on 127.0.0.1 over real HTTP, as the service meets one: a discovery
 * document at `<issuer without its final slash>/.well-known/openid-configuration` whose `jwks_uri`
 * points at the key set, served at a path of the issuer's own choosing (Keycloak's
 * `/realms/<realm>/protocol/openid-connect/certs`, Auth0's `/.well-known/jwks.json`). The keys are
 * the local identity provider's (dev/local-idp.ts), so `mint` signs tokens it verifies.
 * Anything else answers 404. Every request path is recorded.
 */
export interface LocalIssuer {
  /** The issuer string: `http://127.0.0.1:<port><issuerPath>`. */
  issuer: string;
  /** Paths requested, in order. */
  requests: string[];
  /** An ID token of this issuer (its `iss` unless `issuer` is given), for the audience given, with `claims` over the usual. */
  mint(options: { email: string; audience: string; issuer?: string; claims?: Record<string, unknown> }): Promise<string>;
  stop(): Promise<void>;
}

export interface LocalIssuerOptions {
  /** The issuer URL's path: `/realms/x`, or `/` for an Auth0-like issuer ending in a slash. */
  issuerPath: string;
  /** Where the key set is served (and what the discovery document announces). */
  jwksPath: string;
  /** What the discovery document says its issuer is (default: the issuer itself). */
  announcedIssuer?: (issuer: string) => string;
}

export async function startLocalIssuer(options: LocalIssuerOptions): Promise<LocalIssuer> {
  const requests: string[] = [];
  let issuer = '';
  let origin = '';
  const server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', origin).pathname;
    requests.push(path);
    const json = (body: unknown) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    if (path === new URL(`${issuer.replace(/\/$/, '')}/.well-known/openid-configuration`).pathname) {
      json({
        issuer: options.announcedIssuer ? options.announcedIssuer(issuer) : issuer,
        jwks_uri: `${origin}${options.jwksPath}`,
        id_token_signing_alg_values_supported: ['RS256'],
      });
    } else if (path === options.jwksPath) {
      localJwks().then(json, () => res.writeHead(500).end());
    } else {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  issuer = `${origin}${options.issuerPath}`;
  return {
    issuer,
    requests,
    mint: async ({ email, audience, issuer: iss, claims }) =>
      (await mintToken({ issuer: iss ?? issuer, email, audience, ...(claims ? { claims } : {}) })).token,
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
