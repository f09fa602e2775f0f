import { existsSync } from 'node:fs';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { LOCAL_AUDIENCE } from '../../dev/local-idp.ts';

/**
 * The dashboard in a real browser: Debian's Chromium driven by playwright-core. `signedInPage`
 * opens a page of the dashboard as `email` without the sign-in form (a session token from the
 * local identity provider, stored where oidc-client-ts keeps its user), so that every page can be
 * checked on its own; the end-to-end journey signs in through the form instead.
 */
const wantedBrowser = process.env.CHROMIUM_PATH || '/usr/bin/chromium';
/** The browser, or undefined when none is installed (the browser tests skip and say why). */
export const browserPath = existsSync(wantedBrowser) ? wantedBrowser : undefined;
export const NO_BROWSER_REASON = `no Chromium at ${wantedBrowser}: install Debian's (apt-get install chromium) or set CHROMIUM_PATH`;

/** The machine's network is closed: nothing in the browser may try to reach out on its own. */
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** What went wrong in the page: uncaught errors, console errors, CSP violations. */
export interface PageProblems {
  errors: string[];
}

export function watchProblems(page: Page): PageProblems {
  const problems: PageProblems = { errors: [] };
  page.on('pageerror', (err) => problems.errors.push(`pageerror: ${err.message}`));
  page.on('console', (msg) => {
    if (msg.type() === 'error') problems.errors.push(`console: ${msg.text()}`);
  });
  return problems;
}

interface StackLike {
  baseUrl: string;
}

/** A session token for `email` from the local identity provider (POST /dev/session). */
export async function sessionFor(stack: StackLike, email: string): Promise<{ token: string; expiresAt: string }> {
  const res = await fetch(`${stack.baseUrl}/dev/session`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email }),
  });
  if (!res.ok) throw new Error(`session failed: ${res.status} ${await res.text()}`);
  return (await res.json()) as { token: string; expiresAt: string };
}

/** A browser context whose pages start signed in as `email`. */
export async function signedInContext(
  browser: Browser,
  stack: StackLike,
  email: string,
  options: { viewport?: { width: number; height: number } } = {},
): Promise<BrowserContext> {
  const { token, expiresAt } = await sessionFor(stack, email);
  const context = await browser.newContext({ viewport: options.viewport ?? { width: 1280, height: 900 } });
  const key = `oidc.user:${stack.baseUrl}/dev/oidc:${LOCAL_AUDIENCE}`;
  const user = JSON.stringify({
    id_token: token,
    access_token: token,
    token_type: 'Bearer',
    scope: 'openid email profile',
    profile: { sub: `local|${email}`, email, email_verified: true },
    expires_at: Math.floor(new Date(expiresAt).getTime() / 1000),
  });
  await context.addInitScript(
    ([k, v]) => {
      const store = (
        globalThis as unknown as { sessionStorage: { getItem(k: string): string | null; setItem(k: string, v: string): void } }
      ).sessionStorage;
      if (!store.getItem(k)) store.setItem(k, v);
    },
    [key, user] as const,
  );
  return context;
}

/** Opens `path` of the dashboard (`/servers`, under /app/) signed in as `email`; waits for its heading. */
export async function signedInPage(
  browser: Browser,
  stack: StackLike,
  email: string,
  path = '/',
  options: { viewport?: { width: number; height: number } } = {},
): Promise<{ page: Page; context: BrowserContext; problems: PageProblems }> {
  const context = await signedInContext(browser, stack, email, options);
  const page = await context.newPage();
  const problems = watchProblems(page);
  await page.goto(`${stack.baseUrl}/app${path === '/' ? '/' : path}`);
  await page.locator('h1#page-title').first().waitFor({ timeout: 15_000 });
  return { page, context, problems };
}
