import { createRequire } from 'node:module';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type Browser, type Page } from 'playwright-core';
import { startLocalStack, type LocalStack } from '../../dev/stack.ts';
import { LOCAL_AUDIENCE } from '../../dev/local-idp.ts';
import { browserPath, CHROMIUM_ARGS, NO_BROWSER_REASON, watchProblems } from '../helpers/dashboard.ts';

/**
 * The dashboard's sign-in in a real browser, through the local identity provider's form
 * (dev/local-oidc.ts) as a customer does it: OIDC code + PKCE by oidc-client-ts, sign-out, and the
 * token renewed before it expires without a reload. Skipped, saying why, when no Chromium is installed.
 */
if (!browserPath) console.warn(`tests/browser/sign-in.test.ts SKIPPED: ${NO_BROWSER_REASON}`);

let stack: LocalStack;
let browser: Browser;
let userKey: string;

beforeAll(async () => {
  if (!browserPath) return;
  [stack, browser] = await Promise.all([
    startLocalStack({
      dynamodbEndpoint: process.env.DYNAMODB_ENDPOINT!,
      tableName: process.env.TABLE_NAME!,
      adminEmails: ['admin@localhost'],
      panel: false,
      dashboard: true,
    }),
    chromium.launch({ executablePath: browserPath, args: CHROMIUM_ARGS }),
  ]);
  // Where oidc-client-ts keeps the signed-in user (sessionStorage).
  userKey = `oidc.user:${stack.baseUrl}/dev/oidc:${LOCAL_AUDIENCE}`;
}, 240_000);
afterAll(async () => {
  await browser?.close();
  await stack?.stop();
});

interface StoredUser {
  id_token: string;
  refresh_token: string;
  expires_at: number;
}

const storedUser = async (page: Page): Promise<StoredUser | null> => {
  const raw = await page.evaluate((key) => sessionStorage.getItem(key), userKey);
  return raw ? (JSON.parse(raw) as StoredUser) : null;
};

/** Opens the dashboard, lands on the sign-in form, types `email` and signs in. */
async function signInThroughForm(page: Page, email: string): Promise<void> {
  await page.goto(`${stack.baseUrl}/app/`);
  const field = page.getByLabel('E-mail address');
  await field.waitFor({ timeout: 15_000 });
  expect(new URL(page.url()).pathname).toBe('/dev/oidc/authorize');
  await field.fill(email);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.locator('h1#page-title').first().waitFor({ timeout: 15_000 });
  await page.locator('header .who', { hasText: email }).waitFor({ timeout: 15_000 });
}

describe.skipIf(!browserPath)('sign-in through the local identity provider', () => {
  it('signs in by the form, lands on the overview with the e-mail shown, and signs out', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    const problems = watchProblems(page);
    const email = 'form.player@example.com';
    await signInThroughForm(page, email);
    expect(new URL(page.url()).pathname).toBe('/app/');
    await expect(page.locator('h1#page-title').first().textContent()).resolves.toMatch(/overview/i);
    const user = await storedUser(page);
    expect(user?.id_token).toBeTruthy();

    await page.getByRole('button', { name: 'Sign out' }).click();
    // Signed out: the dashboard has no user and asks to sign in again.
    await page.getByLabel('E-mail address').waitFor({ timeout: 15_000 });
    expect(new URL(page.url()).pathname).toBe('/dev/oidc/authorize');
    expect(await storedUser(page)).toBeNull();
    // The sign-in's refresh token ended with it.
    const refresh = await fetch(`${stack.baseUrl}/dev/oidc/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: user!.refresh_token, client_id: LOCAL_AUDIENCE }),
    });
    expect(refresh.status).toBe(400);
    expect(problems.errors).toEqual([]);
    await context.close();
  });

  it('renews the token before it expires, without a reload, and API calls keep working', async () => {
    // oidc-client-ts renews 60 s before expiry: a 65 s token is renewed after about 5 s.
    process.env.LOCAL_IDP_TOKEN_SECONDS = '65';
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    try {
      const page = await context.newPage();
      const problems = watchProblems(page);
      await signInThroughForm(page, 'renewing@example.com');
      const first = (await storedUser(page))!;
      await page.evaluate(() => {
        (globalThis as unknown as { notReloaded: boolean }).notReloaded = true;
      });
      await page.waitForFunction(
        ([key, token]) => {
          const raw = sessionStorage.getItem(key);
          return raw !== null && (JSON.parse(raw) as { id_token: string }).id_token !== token;
        },
        [userKey, first.id_token] as const,
        { timeout: 30_000, polling: 250 },
      );
      const renewed = (await storedUser(page))!;
      expect(renewed.refresh_token).not.toBe(first.refresh_token);
      expect(renewed.expires_at).toBeGreaterThan(first.expires_at);
      expect(await page.evaluate(() => (globalThis as unknown as { notReloaded?: boolean }).notReloaded)).toBe(true);

      // The app's next API calls carry the new token and succeed.
      const calls: { auth: string | undefined; status: Promise<number> }[] = [];
      page.on('request', (req) => {
        if (new URL(req.url()).pathname.startsWith('/v1/')) {
          calls.push({ auth: req.headers().authorization, status: req.response().then((r) => r?.status() ?? 0) });
        }
      });
      // Away and back to the overview (in the app: no reload), which loads its data again.
      const nav = page.getByRole('navigation', { name: 'Main' });
      await nav.getByRole('link', { name: 'Servers' }).click();
      await page.waitForURL(`${stack.baseUrl}/app/servers`);
      await nav.getByRole('link', { name: 'Overview' }).click();
      await page.waitForURL(`${stack.baseUrl}/app/`);
      await expect.poll(() => calls.length, { timeout: 10_000 }).toBeGreaterThan(0);
      for (const call of calls) {
        expect(call.auth).toBe(`Bearer ${renewed.id_token}`);
        expect(await call.status).toBeLessThan(400);
      }
      expect(await page.evaluate(() => (globalThis as unknown as { notReloaded?: boolean }).notReloaded)).toBe(true);
      await expect(page.getByRole('alert').count()).resolves.toBe(0);
      expect(problems.errors).toEqual([]);
    } finally {
      delete process.env.LOCAL_IDP_TOKEN_SECONDS;
      await context.close();
    }
  });

  it('has accessible sign-in and signed-out pages at 375 px (axe-core: no serious or critical)', async () => {
    // axe is injected as an inline script, which the pages' CSP refuses: this context lets it in.
    const context = await browser.newContext({ viewport: { width: 375, height: 800 }, bypassCSP: true });
    const page = await context.newPage();
    const axe = createRequire(import.meta.url).resolve('axe-core/axe.min.js');
    const check = async () => {
      await page.addScriptTag({ path: axe });
      const result = await page.evaluate(async () => {
        const run = (globalThis as unknown as { axe: { run(): Promise<{ violations: { id: string; impact: string }[] }> } }).axe.run;
        return (await run()).violations.map((v) => `${v.impact} ${v.id}`);
      });
      expect(result.filter((v) => v.startsWith('serious') || v.startsWith('critical'))).toEqual([]);
    };
    await page.goto(`${stack.baseUrl}/app/`);
    await page.getByLabel('E-mail address').waitFor({ timeout: 15_000 });
    await check();
    // No horizontal scrolling on a phone.
    expect(
      await page.evaluate(
        () => (globalThis as unknown as { document: { documentElement: { scrollWidth: number } } }).document.documentElement.scrollWidth,
      ),
    ).toBeLessThanOrEqual(375);
    await page.goto(`${stack.baseUrl}/dev/oidc/logout`);
    await page.getByRole('heading', { name: 'Signed out' }).waitFor();
    await check();
    await context.close();
  });
});
