import type { createRemoteJWKSet, JWTPayload, JWTVerifyOptions } from 'jose';
import { errorFields, logger } from '../observability/logger.ts';
import { loadJose } from '../packages.ts';

/**
 * The part of session-token checking that needs `jose` (loaded with the first session token,
 * shared/packages.ts). The issuer's keys: at the JWKS URL given (OIDC_JWKS_URL: Cognito's, the local stack's), else at
 * the `jwks_uri` of the issuer's discovery document (`<issuer>/.well-known/openid-configuration`),
 * which Keycloak, Okta, Entra ID, Auth0 and Google serve at paths of their own. Discovery runs
 * with the first session token and its answer is kept for the life of the process, as is the key
 * set (jose fetches it again for a key id it does not know, at most every 30 s).
 */
export interface KeySource {
  /** Compared exactly, a trailing slash included (Auth0's issuers end in one). */
  issuer: string;
  jwksUrl: string | undefined;
}

type KeySet = ReturnType<typeof createRemoteJWKSet>;

/** OIDC Discovery 1.0 §4: a terminating `/` of the issuer is removed before the well-known path. */
export const discoveryUrlOf = (issuer: string): string => `${issuer.replace(/\/$/, '')}/.well-known/openid-configuration`;

const TIMEOUT_MS = 3_000;

/** The issuer's discovery document is unusable: no token of it can be verified until that is fixed. */
class DiscoveryError extends Error {}

let cached: { source: string; keySet: Promise<KeySet> } | undefined;

async function discoverJwksUrl(issuer: string): Promise<URL> {
  const url = discoveryUrlOf(issuer);
  let doc: { issuer?: unknown; jwks_uri?: unknown } | undefined;
  try {
    const res = await fetch(url, { headers: { accept: 'application/json' }, signal: AbortSignal.timeout(TIMEOUT_MS) });
    if (!res.ok) throw new DiscoveryError(`${url} answered ${res.status}`);
    doc = (await res.json()) as typeof doc;
  } catch (err) {
    throw err instanceof DiscoveryError ? err : new DiscoveryError(`${url}: ${(err as Error).message}`);
  }
  // §4.3: the document must name the very issuer it was fetched for, else it speaks for another.
  if (doc?.issuer !== issuer) {
    throw new DiscoveryError(`${url} names issuer ${JSON.stringify(doc?.issuer)}, not the configured ${JSON.stringify(issuer)}`);
  }
  const jwksUri = typeof doc.jwks_uri === 'string' && URL.canParse(doc.jwks_uri) ? new URL(doc.jwks_uri) : undefined;
  // Keys over TLS, unless the issuer itself is plain HTTP (a local one).
  const allowed = new URL(issuer).protocol === 'http:' ? ['https:', 'http:'] : ['https:'];
  if (!jwksUri || !allowed.includes(jwksUri.protocol)) {
    throw new DiscoveryError(`${url} has no usable jwks_uri (${JSON.stringify(doc.jwks_uri)})`);
  }
  return jwksUri;
}

/** The key set of the source: one per process, its discovery shared by concurrent first tokens. */
function keySetOf(source: KeySource): Promise<KeySet> {
  const id = `${source.issuer}\n${source.jwksUrl ?? ''}`;
  if (cached?.source !== id) {
    const keySet = Promise.all([loadJose(), source.jwksUrl ? new URL(source.jwksUrl) : discoverJwksUrl(source.issuer)]).then(([j, url]) =>
      j.createRemoteJWKSet(url, { cooldownDuration: 30_000, timeoutDuration: TIMEOUT_MS }),
    );
    // A failed discovery is not kept: the next session token tries again.
    keySet.catch(() => {
      if (cached?.keySet === keySet) cached = undefined;
    });
    cached = { source: id, keySet };
  }
  return cached.keySet;
}

/** The verified payload, or `expired` / `invalid` for a token jose refuses; anything else throws. */
export async function verifyJwt(token: string, source: KeySource, options: JWTVerifyOptions): Promise<JWTPayload | 'expired' | 'invalid'> {
  const { errors, jwtVerify } = await loadJose();
  try {
    return (await jwtVerify(token, await keySetOf(source), options)).payload;
  } catch (err) {
    if (err instanceof errors.JWTExpired) return 'expired';
    if (err instanceof errors.JOSEError) return 'invalid';
    // The issuer cannot be asked (unreachable, or its document is wrong): the token cannot be
    // verified, so it is refused like one whose key set cannot be fetched, and the operator told.
    if (err instanceof DiscoveryError) {
      logger.error('oidc discovery failed: session tokens are refused', { issuer: source.issuer, ...errorFields(err) });
      return 'invalid';
    }
    throw err;
  }
}
