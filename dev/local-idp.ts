import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';

/**
 * The local stack's identity provider: an RS256 key pair made at start, its JWKS served at
 * /dev/oidc/.well-known/jwks.json, and `POST /dev/session` minting ID-token-shaped JWTs.
 * The service verifies them exactly as it verifies Cognito's: over the JWKS URL, with jose.
 */
export const LOCAL_AUDIENCE = 'control-plane-local';
const KID = 'local-1';
const TOKEN_LIFETIME_SECONDS = 3600;

let keys: Promise<{ privateKey: CryptoKey; jwk: JWK }> | undefined;

function keyPair() {
  keys ??= generateKeyPair('RS256').then(async ({ privateKey, publicKey }) => ({
    privateKey,
    jwk: { ...(await exportJWK(publicKey)), kid: KID, alg: 'RS256', use: 'sig' },
  }));
  return keys;
}

export const localIssuer = (baseUrl: string): string => `${baseUrl}/dev/oidc`;

export async function localJwks(): Promise<{ keys: JWK[] }> {
  return { keys: [(await keyPair()).jwk] };
}

export interface MintOptions {
  issuer: string;
  email: string;
  audience?: string;
  /** Negative for a token that has already expired; null for a token without `exp`. */
  expiresInSeconds?: number | null;
  claims?: Record<string, unknown>;
}

/** Signs a token with the local provider's key. Tests use the options to mint bad tokens too. */
export async function mintToken(options: MintOptions): Promise<{ token: string; expiresAt: string }> {
  const { privateKey } = await keyPair();
  const lifetime = options.expiresInSeconds === undefined ? TOKEN_LIFETIME_SECONDS : options.expiresInSeconds;
  const exp = Math.floor(Date.now() / 1000) + (lifetime ?? 0);
  let jwt = new SignJWT({ email: options.email, email_verified: true, token_use: 'id', ...options.claims })
    .setProtectedHeader({ alg: 'RS256', kid: KID })
    .setIssuer(options.issuer)
    .setAudience(options.audience ?? LOCAL_AUDIENCE)
    .setSubject(`local|${options.email.toLowerCase()}`)
    .setIssuedAt();
  if (lifetime !== null) jwt = jwt.setExpirationTime(exp);
  return { token: await jwt.sign(privateKey), expiresAt: new Date(exp * 1000).toISOString() };
}

export const mintSessionToken = (issuer: string, email: string) => mintToken({ issuer, email });
