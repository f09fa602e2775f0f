import { type User, UserManager, WebStorageStateStore } from 'oidc-client-ts';
import { config } from './config.ts';

/**
 * Sign-in the standard way: OpenID Connect authorization code with PKCE (oidc-client-ts), against
 * Cognito's hosted UI in AWS and the local identity provider on `npm start`. The API takes the ID
 * token as its session token (Authorization: Bearer), so that is what `sessionToken` answers. Tokens
 * are renewed with the refresh token a minute before they expire; the user is kept in
 * sessionStorage (one tab's sign-in, gone with the tab).
 */
let manager: UserManager | undefined;
let current: User | null = null;
/** Set while signing out, so the app does not start a sign-in when the stored user goes. */
let signingOut = false;
const listeners = new Set<(user: User | null) => void>();

const base = (): string => `${location.origin}${import.meta.env.BASE_URL}`;

export function userManager(): UserManager {
  if (manager) return manager;
  const { oidc } = config();
  manager = new UserManager({
    authority: oidc.authority,
    client_id: oidc.clientId,
    redirect_uri: `${base()}callback`,
    post_logout_redirect_uri: base(),
    response_type: 'code',
    scope: oidc.scope ?? 'openid email profile',
    ...(oidc.metadata ? { metadataSeed: oidc.metadata } : {}),
    automaticSilentRenew: true,
    accessTokenExpiringNotificationTimeInSeconds: 60,
    userStore: new WebStorageStateStore({ store: sessionStorage }),
    loadUserInfo: false,
  });
  const publish = (user: User | null) => {
    current = user;
    for (const listener of listeners) listener(user);
  };
  manager.events.addUserLoaded((user) => publish(user));
  manager.events.addUserUnloaded(() => {
    if (!signingOut) publish(null);
  });
  manager.events.addUserSignedOut(() => publish(null));
  manager.events.addSilentRenewError(() => publish(null));
  return manager;
}

/** The signed-in user, after `restoreSession`; null when signed out or expired. */
export const currentUser = (): User | null => current;

export function onUserChange(listener: (user: User | null) => void): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

/** The token the API checks: the ID token (its audience is this client). */
export function sessionToken(): string | undefined {
  return current && !current.expired ? (current.id_token ?? undefined) : undefined;
}

/** The stored user, renewed first if its token has expired and a refresh token is at hand. */
export async function restoreSession(): Promise<User | null> {
  const um = userManager();
  let user = await um.getUser();
  if (user?.expired && user.refresh_token) user = await um.signinSilent().catch(() => null);
  current = user && !user.expired ? user : null;
  return current;
}

/** Sends the browser to the identity provider; it comes back to /app/callback. */
export function signIn(returnTo = location.pathname + location.search): Promise<void> {
  return userManager().signinRedirect({ state: { returnTo } });
}

/** Finishes the sign-in on /app/callback and answers where the user was going. */
export async function completeSignIn(): Promise<string> {
  const user = await userManager().signinRedirectCallback();
  current = user;
  for (const listener of listeners) listener(user);
  const state = user.state as { returnTo?: string } | undefined;
  const returnTo = state?.returnTo;
  return returnTo?.startsWith(import.meta.env.BASE_URL) && !returnTo.includes('/callback') ? returnTo : import.meta.env.BASE_URL;
}

export async function signOut(): Promise<void> {
  signingOut = true;
  const um = userManager();
  const user = await um.getUser();
  await um.removeUser();
  current = null;
  // `logout_uri` (with the `client_id` oidc-client-ts sends) is what Cognito's /logout reads; a
  // standard provider reads `post_logout_redirect_uri` (sent too) and ignores it.
  await um.signoutRedirect({
    ...(user?.id_token ? { id_token_hint: user.id_token } : {}),
    extraQueryParams: { logout_uri: base() },
  });
}
