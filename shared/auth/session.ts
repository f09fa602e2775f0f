import { createRemoteJWKSet, jwtVerify, errors, type JWTPayload } from 'jose';
import type { OidcConfig } from '../config/env.ts';
import { ApiError } from '../errors.ts';

/**
 * Session tokens: OIDC JWTs from the identity provider (Cognito in AWS, the local provider in the
 * local stack). The JWKS resolver is cached at module scope so warm invocations reuse its keys.
 */
let jwks: { url: string; resolver: ReturnType<typeof createRemoteJWKSet> } | undefined;

function resolverFor(url: string) {
  if (jwks?.url !== url) jwks = { url, resolver: createRemoteJWKSet(new URL(url), { cooldownDuration: 30_000, timeoutDuration: 3_000 }) };
  return jwks.resolver;
}

export interface SessionClaims {
  issuer: string;
  subject: string;
  email: string;
  /**
   * The provider vouches for the address: `email_verified` is boolean true, or the string "true"
   * (Cognito sends strings in some tokens). Anything else, absent included, is unverified.
   */
  emailVerified: boolean;
}

export const isEmailVerifiedClaim = (value: unknown): boolean => value === true || value === 'true';

const unauthorized = (message: string) => new ApiError('unauthorized', message);

export async function verifySessionToken(token: string, oidc: OidcConfig | undefined): Promise<SessionClaims> {
  if (!oidc) throw unauthorized('Session tokens are not accepted here: no identity provider is configured');
  let payload: JWTPayload;
  try {
    ({ payload } = await jwtVerify(token, resolverFor(oidc.jwksUrl), {
      issuer: oidc.issuer,
      audience: oidc.audience,
      algorithms: oidc.algorithms,
      requiredClaims: ['exp', 'sub'],
      clockTolerance: 5,
    }));
  } catch (err) {
    if (err instanceof errors.JWTExpired) throw unauthorized('The session token has expired');
    if (err instanceof errors.JOSEError) throw unauthorized('The session token is not valid');
    throw err;
  }
  // Cognito: the ID token carries `aud`, the access token `client_id`; both carry `token_use`.
  if (oidc.tokenUse && payload.token_use !== oidc.tokenUse) throw unauthorized('The session token is not valid');
  if (oidc.clientIds.length && !oidc.clientIds.includes(String(payload.client_id ?? payload.aud))) {
    throw unauthorized('The session token is not valid');
  }
  const email = typeof payload.email === 'string' ? payload.email : undefined;
  if (!email) throw unauthorized('The session token carries no email claim');
  return { issuer: oidc.issuer, subject: payload.sub!, email, emailVerified: isEmailVerifiedClaim(payload.email_verified) };
}
