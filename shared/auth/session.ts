import type { JWTPayload } from 'jose';
import type { OidcConfig } from '../config/env.ts';
import { ApiError } from '../errors.ts';
import { verifyJwt } from './jwt.ts';

/**
 * Session tokens: OIDC JWTs from the identity provider (Cognito in AWS, the local provider in the
 * local stack). The signature and standard claims are checked by `jose` in ./jwt.ts.
 */
export interface SessionClaims {
  issuer: string;
  subject: string;
  email: string;
  /**
   * The provider vouches for the address: `email_verified` is boolean true, or the string "true"
   * (Cognito sends strings in some tokens). Entra ID never sends `email_verified` for work
   * accounts; there its optional claim `xms_edov` (the address's domain owner is verified) counts,
   * only when `email_verified` is absent. Anything else, absent included, is unverified.
   */
  emailVerified: boolean;
}

export const isEmailVerifiedClaim = (value: unknown): boolean => value === true || value === 'true';

const emailVerifiedOf = (payload: JWTPayload): boolean =>
  payload.email_verified === undefined ? isEmailVerifiedClaim(payload.xms_edov) : isEmailVerifiedClaim(payload.email_verified);

const unauthorized = (message: string) => new ApiError('unauthorized', message);

export async function verifySessionToken(token: string, oidc: OidcConfig | undefined): Promise<SessionClaims> {
  if (!oidc) throw unauthorized('Session tokens are not accepted here: no identity provider is configured');
  const payload: JWTPayload | 'expired' | 'invalid' = await verifyJwt(token, oidc, {
    issuer: oidc.issuer,
    audience: oidc.audience,
    algorithms: oidc.algorithms,
    requiredClaims: ['exp', 'sub'],
    clockTolerance: 5,
  });
  if (payload === 'expired') throw unauthorized('The session token has expired');
  if (payload === 'invalid') throw unauthorized('The session token is not valid');
  // Cognito: the ID token carries `aud`, the access token `client_id`; both carry `token_use`.
  if (oidc.tokenUse && payload.token_use !== oidc.tokenUse) throw unauthorized('The session token is not valid');
  if (oidc.clientIds.length && !oidc.clientIds.includes(String(payload.client_id ?? payload.aud))) {
    throw unauthorized('The session token is not valid');
  }
  const email = typeof payload.email === 'string' ? payload.email : undefined;
  if (!email) throw unauthorized('The session token carries no email claim');
  return { issuer: oidc.issuer, subject: payload.sub!, email, emailVerified: emailVerifiedOf(payload) };
}
