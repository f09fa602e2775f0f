import { createHash, randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Email } from '../shared/api/schemas/common.ts';
import { contentSecurityPolicy, DASHBOARD_HEADERS } from '../web/security-headers.ts';
import type { Preroute } from './local-api.ts';
import { LOCAL_AUDIENCE, mintToken, readOwnToken, signInTokenSeconds } from './local-idp.ts';

/**
 * The local identity provider's sign-in, the standard way: OpenID Connect authorization code with
 * PKCE (RFC 6749, RFC 7636, OIDC Core), what the dashboard's oidc-client-ts does against Cognito's
 * hosted UI in AWS. Under `/dev/oidc`: discovery, `authorize` (a sign-in form: any e-mail address,
 * treated as verified), `token` (code and refresh grants) and `logout`. The ID token is the
 * session token the API verifies (signed by dev/local-idp.ts's key, its JWKS at
 * `/dev/oidc/.well-known/jwks.json`, which the API's dev group serves). One public client, the
 * dashboard, whose only redirect is `/app/callback` on the stack's own origin. Codes and refresh
 * tokens live in memory: a restart signs everyone out at their next renewal. Local stack only,
 * never deployed to AWS.
 */
export const OIDC_PATH = '/dev/oidc';

export interface LocalOidcOptions {
  /** The stack's origin (`http://127.0.0.1:3000`): the dashboard's, the only one redirected to. */
  baseUrl: string;
  /** The `iss` of the tokens, the API's OIDC_ISSUER (`local-idp`), not the discovery URL. */
  issuer: string;
  /** The one client, the dashboard (LOCAL_AUDIENCE). */
  clientId?: string;
  /** ID token lifetime; default `LOCAL_IDP_TOKEN_SECONDS` or an hour, read at each token. */
  tokenSeconds?: number;
  /** Authorization code lifetime (60 s). */
  codeSeconds?: number;
  /** Refresh token lifetime (a day); each use rotates it. */
  refreshSeconds?: number;
}

const SCOPES = ['openid', 'email', 'profile'];
const MAX_BODY = 16 * 1024;
const CHALLENGE = /^[A-Za-z0-9_-]{43}$/;
/** RFC 7636 §4.1: 43–128 characters of [A-Z] / [a-z] / [0-9] / "-" / "." / "_" / "~". */
const VERIFIER = /^[A-Za-z0-9._~-]{43,128}$/;

interface Grant {
  clientId: string;
  email: string;
  scope: string;
  /** The sign-in (OIDC `sid`): its refresh tokens go with it at sign-out. */
  sid: string;
  /** Seconds since the epoch of the sign-in (OIDC `auth_time`, kept through refreshes). */
  authTime: number;
}

interface CodeRecord extends Grant {
  redirectUri: string;
  challenge: string;
  nonce?: string;
  expiresAt: number;
  used: boolean;
}

interface RefreshRecord extends Grant {
  expiresAt: number;
}

/** An error of the authorization endpoint. */
class AuthorizeError extends Error {
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.code = code;
  }
}

/** An RFC 6749 §5.2 error of the token endpoint. */
type TokenErrorCode = 'invalid_request' | 'invalid_client' | 'invalid_grant' | 'unsupported_grant_type' | 'invalid_scope';
class TokenError extends Error {
  readonly code: TokenErrorCode;
  constructor(code: TokenErrorCode, message: string) {
    super(message);
    this.code = code;
  }
}

const random = (): string => randomBytes(32).toString('base64url');
const s256 = (verifier: string): string => createHash('sha256').update(verifier).digest('base64url');
const nowSeconds = (): number => Math.floor(Date.now() / 1000);

export function localOidc(options: LocalOidcOptions): Preroute {
  const origin = new URL(options.baseUrl).origin;
  const clientId = options.clientId ?? LOCAL_AUDIENCE;
  const codeMs = (options.codeSeconds ?? 60) * 1000;
  const refreshMs = (options.refreshSeconds ?? 86_400) * 1000;
  const callback = `${origin}/app/callback`;
  const dashboard = `${origin}/app/`;
  const codes = new Map<string, CodeRecord>();
  const refreshTokens = new Map<string, RefreshRecord>();

  /** Drops what has expired (a used code is kept until then, to refuse it as reused, not unknown). */
  const sweep = () => {
    const now = Date.now();
    for (const [code, record] of codes) if (record.expiresAt <= now) codes.delete(code);
    for (const [token, record] of refreshTokens) if (record.expiresAt <= now) refreshTokens.delete(token);
  };
  const revokeSignIn = (sid: string) => {
    for (const [token, record] of refreshTokens) if (record.sid === sid) refreshTokens.delete(token);
  };

  const metadata = () => ({
    issuer: options.issuer,
    authorization_endpoint: `${origin}${OIDC_PATH}/authorize`,
    token_endpoint: `${origin}${OIDC_PATH}/token`,
    end_session_endpoint: `${origin}${OIDC_PATH}/logout`,
    jwks_uri: `${origin}${OIDC_PATH}/.well-known/jwks.json`,
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    grant_types_supported: ['authorization_code', 'refresh_token'],
    code_challenge_methods_supported: ['S256'],
    subject_types_supported: ['public'],
    id_token_signing_alg_values_supported: ['RS256'],
    scopes_supported: SCOPES,
    claims_supported: ['iss', 'sub', 'aud', 'exp', 'iat', 'auth_time', 'nonce', 'sid', 'email', 'email_verified'],
    token_endpoint_auth_methods_supported: ['none'],
    authorization_response_iss_parameter_supported: true,
  });

  /** The authorization request's parameters, checked; throws a page error or a redirectable error. */
  const authorizeRequest = (params: URLSearchParams) => {
    const one = (name: string): string | undefined => {
      const values = params.getAll(name);
      if (values.length > 1) throw new AuthorizeError('invalid_request', `The parameter ${name} is given more than once.`);
      return values[0] || undefined;
    };
    // Until the client and its redirect URI are known good, nothing is redirected (RFC 6749 §4.1.2.1).
    const client = one('client_id');
    if (client !== clientId) throw new PageError(client ? `Unknown client ${JSON.stringify(client)}.` : 'The client_id is missing.');
    const redirectUri = one('redirect_uri');
    if (redirectUri !== callback) {
      throw new PageError(
        redirectUri
          ? `The redirect_uri ${JSON.stringify(redirectUri)} is not this dashboard's (${callback}).`
          : 'The redirect_uri is missing.',
      );
    }
    const state = params.get('state') ?? undefined;
    try {
      const responseType = one('response_type');
      if (responseType !== 'code') throw new AuthorizeError('unsupported_response_type', 'Only response_type=code is supported.');
      const responseMode = one('response_mode');
      if (responseMode && responseMode !== 'query') throw new AuthorizeError('invalid_request', 'Only response_mode=query is supported.');
      one('state');
      const requested = (one('scope') ?? '').split(' ').filter(Boolean);
      if (!requested.includes('openid')) throw new AuthorizeError('invalid_scope', 'The scope must include openid.');
      const scope = SCOPES.filter((s) => requested.includes(s)).join(' ');
      const challenge = one('code_challenge');
      const method = one('code_challenge_method');
      if (!challenge) throw new AuthorizeError('invalid_request', 'PKCE is required: code_challenge is missing.');
      if (method !== 'S256') throw new AuthorizeError('invalid_request', 'PKCE: only code_challenge_method=S256 is supported.');
      if (!CHALLENGE.test(challenge)) throw new AuthorizeError('invalid_request', 'PKCE: code_challenge is not a base64url SHA-256.');
      const nonce = one('nonce');
      if (one('prompt') === 'none') throw new AuthorizeError('login_required', 'There is no session here: the user must sign in.');
      return { redirectUri, state, scope, challenge, nonce, loginHint: one('login_hint') };
    } catch (err) {
      if (err instanceof AuthorizeError) throw new RedirectError(redirectUri, state, err);
      throw err;
    }
  };

  const redirectTo = (res: ServerResponse, redirectUri: string, params: Record<string, string | undefined>) => {
    const url = new URL(redirectUri);
    for (const [k, v] of Object.entries(params)) if (v !== undefined) url.searchParams.set(k, v);
    res.writeHead(302, { location: url.href, 'cache-control': 'no-store', 'referrer-policy': 'no-referrer' }).end();
  };

  const authorize = async (req: IncomingMessage, res: ServerResponse) => {
    const method = req.method;
    const rawQuery = queryOf(req);
    let params: URLSearchParams;
    if (method === 'POST') {
      if (!isForm(req)) return sendHtml(res, 415, errorPage('The sign-in form is sent as application/x-www-form-urlencoded.'));
      params = new URLSearchParams(await readBody(req));
    } else params = new URLSearchParams(rawQuery);
    let request: ReturnType<typeof authorizeRequest>;
    try {
      request = authorizeRequest(method === 'POST' ? withoutEmail(params) : params);
    } catch (err) {
      if (err instanceof PageError) return sendHtml(res, 400, errorPage(err.message));
      if (err instanceof RedirectError) {
        return redirectTo(res, err.redirectUri, {
          error: err.error.code,
          error_description: err.error.message,
          state: err.state,
          iss: options.issuer,
        });
      }
      throw err;
    }
    if (method !== 'POST') return sendHtml(res, 200, signInPage(params, request.loginHint ?? ''));
    const typed = (params.get('email') ?? '').trim();
    if (!Email.safeParse(typed).success) {
      return sendHtml(res, 400, signInPage(withoutEmail(params), typed, 'Enter an e-mail address, such as player@example.com.'));
    }
    sweep();
    const code = random();
    codes.set(code, {
      clientId,
      email: typed,
      scope: request.scope,
      sid: random(),
      authTime: nowSeconds(),
      redirectUri: request.redirectUri,
      challenge: request.challenge,
      nonce: request.nonce,
      expiresAt: Date.now() + codeMs,
      used: false,
    });
    redirectTo(res, request.redirectUri, { code, state: request.state, iss: options.issuer });
  };

  const tokensFor = async (grant: Grant, nonce: string | undefined) => {
    const expiresIn = options.tokenSeconds ?? signInTokenSeconds();
    const { token } = await mintToken({
      issuer: options.issuer,
      email: grant.email,
      audience: grant.clientId,
      expiresInSeconds: expiresIn,
      claims: { auth_time: grant.authTime, sid: grant.sid, ...(nonce ? { nonce } : {}) },
    });
    const refreshToken = random();
    refreshTokens.set(refreshToken, { ...grant, expiresAt: Date.now() + refreshMs });
    // The access token is the ID token: the API reads only the ID token; nothing else takes this one.
    return {
      access_token: token,
      token_type: 'Bearer',
      expires_in: expiresIn,
      refresh_token: refreshToken,
      id_token: token,
      scope: grant.scope,
    };
  };

  const token = async (req: IncomingMessage) => {
    if (!isForm(req)) throw new TokenError('invalid_request', 'The token request is sent as application/x-www-form-urlencoded.');
    const params = new URLSearchParams(await readBody(req));
    for (const name of new Set(params.keys())) {
      if (params.getAll(name).length > 1) throw new TokenError('invalid_request', `The parameter ${name} is given more than once.`);
    }
    const grantType = params.get('grant_type');
    if (!grantType) throw new TokenError('invalid_request', 'The grant_type is missing.');
    if (grantType !== 'authorization_code' && grantType !== 'refresh_token') {
      throw new TokenError('unsupported_grant_type', `The grant_type ${grantType} is not supported.`);
    }
    const client = params.get('client_id');
    if (client !== clientId) throw new TokenError('invalid_client', client ? `Unknown client ${client}.` : 'The client_id is missing.');
    sweep();
    if (grantType === 'refresh_token') {
      const presented = params.get('refresh_token');
      if (!presented) throw new TokenError('invalid_request', 'The refresh_token is missing.');
      const record = refreshTokens.get(presented);
      if (!record || record.clientId !== client)
        throw new TokenError('invalid_grant', 'The refresh token is unknown, expired or already used.');
      const asked = (params.get('scope') ?? '').split(' ').filter(Boolean);
      if (asked.some((s) => !record.scope.split(' ').includes(s)))
        throw new TokenError('invalid_scope', 'The scope exceeds the one granted.');
      // Rotation: the token presented is spent; the new one carries the same sign-in.
      refreshTokens.delete(presented);
      const { expiresAt: _, ...grant } = record;
      return tokensFor(grant, undefined);
    }
    const code = params.get('code');
    const redirectUri = params.get('redirect_uri');
    const verifier = params.get('code_verifier');
    if (!code) throw new TokenError('invalid_request', 'The code is missing.');
    if (!redirectUri) throw new TokenError('invalid_request', 'The redirect_uri is missing.');
    if (!verifier) throw new TokenError('invalid_request', 'PKCE is required: code_verifier is missing.');
    if (!VERIFIER.test(verifier)) throw new TokenError('invalid_request', 'PKCE: code_verifier must be 43-128 unreserved characters.');
    const record = codes.get(code);
    if (!record || record.expiresAt <= Date.now()) throw new TokenError('invalid_grant', 'The code is unknown or expired.');
    if (record.used) {
      // RFC 6749 §4.1.2: a code used twice is refused, and what it gave is revoked.
      revokeSignIn(record.sid);
      throw new TokenError('invalid_grant', 'The code has already been used.');
    }
    // Spent by this attempt whatever its outcome: a wrong verifier cannot be retried against it.
    record.used = true;
    if (record.clientId !== client) throw new TokenError('invalid_grant', 'The code was issued to another client.');
    if (record.redirectUri !== redirectUri)
      throw new TokenError('invalid_grant', 'The redirect_uri differs from the authorization request.');
    if (s256(verifier) !== record.challenge)
      throw new TokenError('invalid_grant', 'PKCE: the code_verifier does not match the code_challenge.');
    const { redirectUri: _r, challenge: _c, nonce, expiresAt: _e, used: _u, ...grant } = record;
    return tokensFor(grant, nonce);
  };

  const logout = async (req: IncomingMessage, res: ServerResponse) => {
    const params = new URLSearchParams(queryOf(req));
    const hint = params.get('id_token_hint');
    if (hint) {
      const claims = await readOwnToken(hint);
      // Sign-out ends the sign-in: its refresh tokens stop working.
      if (claims?.iss === options.issuer && claims.aud === clientId && typeof claims.sid === 'string') revokeSignIn(claims.sid);
    }
    const target = params.get('post_logout_redirect_uri') ?? params.get('logout_uri');
    const client = params.get('client_id');
    if (target === dashboard && (!client || client === clientId)) {
      const state = params.get('state');
      return redirectTo(res, target, { state: state ?? undefined });
    }
    sendHtml(res, 200, signedOutPage(target ? `${target} is not an address of this dashboard, so you stay here.` : undefined, dashboard));
  };

  return (req, res) => {
    const path = (req.url ?? '/').split(/[?#]/, 1)[0]!;
    if (!path.startsWith(`${OIDC_PATH}/`)) return false;
    const route = ROUTES[path.slice(OIDC_PATH.length)];
    if (!route) return false; // the JWKS and anything else: the API's dev routes
    if (!route.includes(req.method ?? 'GET')) {
      res.writeHead(405, { allow: route.join(', '), 'content-type': 'text/plain; charset=utf-8' }).end('Method Not Allowed');
      return true;
    }
    const run = async () => {
      switch (path.slice(OIDC_PATH.length)) {
        case '/.well-known/openid-configuration':
          return sendJson(res, 200, metadata(), 'no-cache');
        case '/sign-in.css':
          res.writeHead(200, { 'content-type': 'text/css; charset=utf-8', 'cache-control': 'no-cache', ...DASHBOARD_HEADERS }).end(CSS);
          return;
        case '/authorize':
          return authorize(req, res);
        case '/logout':
          return logout(req, res);
        case '/token':
          try {
            return sendJson(res, 200, await token(req), 'no-store');
          } catch (err) {
            if (err instanceof TokenError) return sendJson(res, 400, { error: err.code, error_description: err.message }, 'no-store');
            throw err;
          }
      }
    };
    run().catch((err: unknown) => {
      if (res.headersSent) return res.destroy();
      if (err instanceof BodyTooLarge) return sendJson(res, 413, { error: 'invalid_request', error_description: err.message }, 'no-store');
      sendJson(res, 500, { error: 'server_error', error_description: err instanceof Error ? err.message : String(err) }, 'no-store');
    });
    return true;
  };
}

const ROUTES: Record<string, string[]> = {
  '/.well-known/openid-configuration': ['GET', 'HEAD'],
  '/sign-in.css': ['GET', 'HEAD'],
  '/authorize': ['GET', 'POST'],
  '/token': ['POST'],
  '/logout': ['GET'],
};

/** An error shown on a page, never redirected: the client or its redirect URI is not known good. */
class PageError extends Error {}

/** An error sent back to the (known good) redirect URI, with the request's state. */
class RedirectError extends Error {
  readonly redirectUri: string;
  readonly state: string | undefined;
  readonly error: AuthorizeError;
  constructor(redirectUri: string, state: string | undefined, error: AuthorizeError) {
    super(error.message);
    this.redirectUri = redirectUri;
    this.state = state;
    this.error = error;
  }
}

class BodyTooLarge extends Error {}

const queryOf = (req: IncomingMessage): string => {
  const target = (req.url ?? '').split('#', 1)[0]!;
  const q = target.indexOf('?');
  return q === -1 ? '' : target.slice(q + 1);
};

const isForm = (req: IncomingMessage) =>
  (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase() === 'application/x-www-form-urlencoded';

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY) throw new BodyTooLarge(`The request body exceeds ${MAX_BODY} bytes.`);
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function withoutEmail(params: URLSearchParams): URLSearchParams {
  const copy = new URLSearchParams(params);
  copy.delete('email');
  return copy;
}

function sendJson(res: ServerResponse, status: number, body: unknown, cache: string): void {
  res.writeHead(status, {
    'content-type': 'application/json',
    'cache-control': cache,
    ...(cache === 'no-store' ? { pragma: 'no-cache' } : {}),
  });
  res.end(JSON.stringify(body));
}

function sendHtml(res: ServerResponse, status: number, html: string): void {
  res.writeHead(status, {
    ...DASHBOARD_HEADERS,
    'content-security-policy': contentSecurityPolicy(),
    'content-type': 'text/html; charset=utf-8',
    'cache-control': 'no-store',
  });
  res.end(html);
}

const esc = (s: string): string =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

const page = (title: string, body: string): string => `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(title)} · local identity provider</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="${OIDC_PATH}/sign-in.css">
</head>
<body>
<main>
${body}
</main>
</body>
</html>
`;

/** The form the authorization request answers: the e-mail field, and the request as hidden fields. */
function signInPage(params: URLSearchParams, email: string, error?: string): string {
  const hidden = [...params]
    .filter(([name]) => name !== 'email')
    .map(([name, value]) => `<input type="hidden" name="${esc(name)}" value="${esc(value)}">`)
    .join('\n');
  const described = error ? 'email-hint email-error' : 'email-hint';
  return page(
    'Sign in',
    `<h1>Sign in</h1>
<p>This is the local stack's identity provider. It stands in for Cognito's hosted sign-in.</p>
<form method="post" action="${OIDC_PATH}/authorize" id="sign-in-form">
${hidden}
<label for="email">E-mail address</label>
<input type="email" id="email" name="email" value="${esc(email)}" autocomplete="email" required aria-describedby="${described}"${error ? ' aria-invalid="true"' : ''}>
<p id="email-hint" class="hint">Any e-mail address; it is treated as verified.</p>
${error ? `<p id="email-error" class="error" role="alert">${esc(error)}</p>` : ''}
<button type="submit" id="sign-in">Sign in</button>
</form>`,
  );
}

function errorPage(message: string): string {
  return page(
    'Sign-in refused',
    `<h1>Sign-in refused</h1>
<p class="error" role="alert">${esc(message)}</p>
<p>Nothing was sent back to the application that asked.</p>`,
  );
}

function signedOutPage(refused: string | undefined, dashboard: string): string {
  return page(
    'Signed out',
    `<h1>Signed out</h1>
<p role="status">You are signed out.</p>
${refused ? `<p>${esc(refused)}</p>` : ''}
<p><a href="${esc(dashboard)}">Open the dashboard</a></p>`,
  );
}

const CSS = `body { font: 16px/1.5 system-ui, sans-serif; margin: 0; color: #1a1a1a; background: #f5f6f8; }
main { max-width: 26rem; margin: 3rem auto; padding: 1.5rem; background: #fff; border: 1px solid #d0d4da; border-radius: 8px; }
h1 { font-size: 1.5rem; margin-top: 0; }
label { display: block; font-weight: 600; margin-bottom: 0.25rem; }
input[type='email'] { box-sizing: border-box; width: 100%; font: inherit; padding: 0.5rem; border: 1px solid #6b7280; border-radius: 4px; }
.hint { color: #4b5563; font-size: 0.9rem; margin: 0.25rem 0 1rem; }
.error { color: #a4161a; font-weight: 600; }
button { font: inherit; padding: 0.5rem 1.25rem; border: 0; border-radius: 4px; background: #1d4ed8; color: #fff; cursor: pointer; }
:focus-visible { outline: 3px solid #f59e0b; outline-offset: 2px; }
@media (max-width: 30rem) { main { margin: 0; border-radius: 0; border-width: 0 0 1px; } }
`;
