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

export async function mintSessionToken(issuer: string, email: string): Promise<{ token: string; expiresAt: string }> {
  const { privateKey } = await keyPair();
  const exp = Math.floor(Date.now() / 1000) + TOKEN_LIFETIME_SECONDS;
  const token = await new SignJWT({ email, email_verified: true, token_use: 'id' })
    .setProtectedHeader({ alg: 'RS256', kid: KID })
    .setIssuer(issuer)
    .setAudience(LOCAL_AUDIENCE)
    .setSubject(`local|${email.toLowerCase()}`)
    .setIssuedAt()
    .setExpirationTime(exp)
    .sign(privateKey);
  return { token, expiresAt: new Date(exp * 1000).toISOString() };
}
