import { getConfig } from '../config/env.ts';
import { scopesOfAccount } from '../api/scopes.ts';
import * as accessPatterns from '../db/access-patterns.ts';
import type { ApiKeyHashItem } from '../db/items.ts';
import { ApiError } from '../errors.ts';
import { checksumValid, hashApiKey, hasOurPrefix } from './api-key-format.ts';
import { ensureAccountForSubject, isAdminEmail } from '../accounts/index.ts';
import { verifySessionToken } from './session.ts';
import type { Principal } from './principal.ts';

const unauthorized = (message: string) => new ApiError('unauthorized', message);

export function bearerToken(authorization: string | undefined): string {
  if (!authorization) throw unauthorized('Missing credential: send Authorization: Bearer <API key or session token>');
  const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
  if (!match) throw unauthorized('Malformed Authorization header: expected Bearer <token>');
  return match[1]!;
}

const looksLikeJwt = (token: string): boolean => token.split('.').length === 3;

export interface Authenticated {
  principal: Principal;
  /** The API key's lookup item, for the throttled lastUsedAt write. */
  keyItem?: ApiKeyHashItem;
}

/**
 * Resolves the bearer credential to a principal: one read for an API key, none for a session
 * token of a known subject (its signature is checked against the cached JWKS) beyond the subject lookup.
 */
export async function authenticate(token: string, now = Date.now()): Promise<Authenticated> {
  if (looksLikeJwt(token)) {
    const claims = await verifySessionToken(token, getConfig().oidc);
    // Only a verified address counts: no account is created, and no existing account is reached,
    // with a token whose provider does not vouch for the e-mail (refused before any table access).
    if (!claims.emailVerified) {
      throw new ApiError('forbidden', 'The e-mail address of the session token must be verified (email_verified: true)');
    }
    const account = await ensureAccountForSubject(claims.issuer, claims.subject, claims.email);
    // Admin is decided on every request (nothing caches a principal): the token's verified e-mail
    // must be the one recorded on the account (which its API keys inherit) and be in ADMIN_EMAILS.
    const isAdmin = claims.email.toLowerCase() === account.email && isAdminEmail(account.email);
    return {
      principal: {
        accountId: account.accountId,
        email: account.email,
        isAdmin,
        scopes: new Set(scopesOfAccount(isAdmin)),
        credential: { kind: 'session', id: `session:${claims.subject}` },
      },
    };
  }

  if (hasOurPrefix(token) && !checksumValid(token)) throw unauthorized('The API key is not valid');
  const item = await accessPatterns.apiKeyByHash(hashApiKey(token));
  if (!item) throw unauthorized('The API key is not valid');
  if (item.revokedAt) throw unauthorized('The API key has been revoked');
  if (item.expiresAt && Date.parse(item.expiresAt) <= now) throw unauthorized('The API key has expired');
  // The account's e-mail recorded at creation (only ever from a verified session token), copied
  // onto the key's lookup item; ADMIN_EMAILS is checked against it on every request.
  const email = item.email;
  const isAdmin = isAdminEmail(email);
  // A key keeps the scopes it was given, but never more than its account holds today.
  const held = new Set(scopesOfAccount(isAdmin));
  const scopes = new Set(item.scopes.filter((s) => held.has(s)));
  return {
    principal: { accountId: item.accountId, email, isAdmin, scopes, credential: { kind: 'api_key', id: item.keyId } },
    keyItem: item,
  };
}
