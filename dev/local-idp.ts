import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { compactVerify, exportJWK, generateKeyPair, importJWK, SignJWT, type CryptoKey, type JWK, type JWTPayload } from 'jose';

/**
 * The local stack's identity provider: an RS256 key pair made at start, its JWKS served at
 * /dev/oidc/.well-known/jwks.json, and `POST /dev/session` minting ID-token-shaped JWTs.
 * The service verifies them exactly as it verifies Cognito's: over the JWKS URL, with jose.
 * With a key file (`npm start` keeps it in `DATA_DIR`, mode 0600) the key pair survives a restart,
 * and so do the session tokens it signed; without one (tests, `LOCAL_IN_MEMORY`) it lives in memory.
 * The dashboard signs in against it the standard way (OIDC code + PKCE): dev/local-oidc.ts.
 */
export const LOCAL_AUDIENCE = 'control-plane-local';
const KID = 'local-1';
const TOKEN_LIFETIME_SECONDS = 3600;

let keys: Promise<{ privateKey: CryptoKey; jwk: JWK }> | undefined;
let keyFile: string | undefined;

/** Keep the key pair in this file (read if it exists, written once otherwise). */
export function keepLocalIdpKeyIn(path: string): void {
  keyFile = path;
  keys = undefined;
}

const publicJwk = ({ d: _d, p: _p, q: _q, dp: _dp, dq: _dq, qi: _qi, ...pub }: JWK): JWK => ({
  ...pub,
  kid: KID,
  alg: 'RS256',
  use: 'sig',
});

async function loadOrCreate(): Promise<{ privateKey: CryptoKey; jwk: JWK }> {
  if (keyFile && existsSync(keyFile)) {
    const stored = JSON.parse(readFileSync(keyFile, 'utf8')) as JWK;
    return { privateKey: (await importJWK(stored, 'RS256')) as CryptoKey, jwk: publicJwk(stored) };
  }
  const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: Boolean(keyFile) });
  if (keyFile) mkdirSync(dirname(keyFile), { recursive: true });
  if (keyFile) writeFileSync(keyFile, JSON.stringify(await exportJWK(privateKey)), { mode: 0o600 });
  return { privateKey, jwk: publicJwk(await exportJWK(publicKey)) };
}

function keyPair() {
  keys ??= loadOrCreate();
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

/**
 * How long the tokens of the sign-in (dev/local-oidc.ts) live: `LOCAL_IDP_TOKEN_SECONDS` (whole
 * seconds, at least 1), or an hour. Tests shorten it to watch the dashboard renew its token.
 */
export function signInTokenSeconds(): number {
  const value = Number(process.env.LOCAL_IDP_TOKEN_SECONDS);
  return Number.isInteger(value) && value > 0 ? value : TOKEN_LIFETIME_SECONDS;
}

/**
 * The claims of a token this provider signed (its signature checked, its expiry not: an expired ID
 * token is still a fine `id_token_hint` at sign-out), or undefined for any other string.
 */
export async function readOwnToken(token: string): Promise<JWTPayload | undefined> {
  try {
    const key = await importJWK((await keyPair()).jwk, 'RS256');
    const { payload, protectedHeader } = await compactVerify(token, key, { algorithms: ['RS256'] });
    if (protectedHeader.kid !== KID) return undefined;
    return JSON.parse(new TextDecoder().decode(payload)) as JWTPayload;
  } catch {
    return undefined;
  }
}

export const mintSessionToken = (issuer: string, email: string) => mintToken({ issuer, email });
