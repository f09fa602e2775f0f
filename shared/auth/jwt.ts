import { createRemoteJWKSet, errors, type JWTPayload, type JWTVerifyOptions, jwtVerify } from 'jose';

/**
 * The part of session-token checking that needs `jose`, loaded by shared/auth/session.ts with the
 * first session token (a lazily loaded chunk of each bundle, infra/bundle.ts), so a cold start that
 * serves API keys does not load it. The JWKS resolver is cached here so warm invocations reuse its keys.
 */
let jwks: { url: string; resolver: ReturnType<typeof createRemoteJWKSet> } | undefined;

function resolverFor(url: string) {
  if (jwks?.url !== url) jwks = { url, resolver: createRemoteJWKSet(new URL(url), { cooldownDuration: 30_000, timeoutDuration: 3_000 }) };
  return jwks.resolver;
}

/** The verified payload, or `expired` / `invalid` for a token jose refuses; anything else throws. */
export async function verifyJwt(token: string, jwksUrl: string, options: JWTVerifyOptions): Promise<JWTPayload | 'expired' | 'invalid'> {
  try {
    return (await jwtVerify(token, resolverFor(jwksUrl), options)).payload;
  } catch (err) {
    if (err instanceof errors.JWTExpired) return 'expired';
    if (err instanceof errors.JOSEError) return 'invalid';
    throw err;
  }
}
