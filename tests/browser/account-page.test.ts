import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type Browser } from 'playwright-core';
import {
  browserPath,
  CHROMIUM_ARGS,
  describeViolations,
  NO_BROWSER_REASON,
  runAxe,
  settled,
  signedInPage,
  startDashboardStack,
  type DashboardStack,
} from '../helpers/dashboard.ts';

/**
 * The customer's account page in headless Chromium: the e-mail, this browser's sign-in, the link
 * to the API keys, a notification preference turned off (the API then reads it off), an e-mail
 * change waiting for its confirmation; axe finds nothing serious. Skipped, saying why, without Chromium.
 */
if (!browserPath) console.warn(`tests/browser/account-page.test.ts SKIPPED: ${NO_BROWSER_REASON}`);

const EMAIL = 'account.page@example.com';
let stack: DashboardStack;
let browser: Browser;

beforeAll(async () => {
  if (!browserPath) return;
  [stack, browser] = await Promise.all([startDashboardStack(), chromium.launch({ executablePath: browserPath, args: CHROMIUM_ARGS })]);
}, 240_000);
afterAll(async () => {
  await browser?.close();
  await stack?.stop();
});

describe.skipIf(!browserPath)('the account page', () => {
  it('shows the e-mail and sign-in, links the API keys, saves a mail preference and asks to confirm a new e-mail', async () => {
    const { page, context, problems } = await signedInPage(browser, stack, EMAIL, '/account');
    try {
      await page.getByRole('heading', { name: 'Account', level: 1 }).waitFor({ timeout: 15_000 });
      await settled(page);
      expect(await page.getByTestId('account-email').textContent()).toBe(EMAIL);
      expect(await page.getByTestId('account-session').textContent()).toContain('Signed in on this browser');
      expect(await page.getByRole('link', { name: 'Manage your API keys' }).getAttribute('href')).toBe('/app/keys');
      expect(await page.getByRole('navigation').getByRole('link', { name: 'Account' }).getAttribute('aria-current')).toBe('page');

      const { blocking, warnings } = await runAxe(page);
      if (warnings.length) console.warn(`axe warnings on the account page:\n${describeViolations(warnings)}`);
      expect(describeViolations(blocking)).toBe('');

      const installed = page.getByRole('checkbox', { name: /Server installed/ });
      expect(await installed.isChecked()).toBe(true);
      await installed.uncheck();
      await page.getByText('Preferences saved.').waitFor({ timeout: 15_000 });
      const token = await stack.session(EMAIL);
      const prefs = await stack.must('GET', '/v1/account/mail-preferences', undefined, token);
      expect(prefs.preferences['server-installed']).toBe(false);
      expect(prefs.preferences['low-balance']).toBe(true);
      expect(await page.getByRole('checkbox', { name: /Server installed/ }).isChecked()).toBe(false);

      await page.getByLabel('New e-mail address').fill('account.page.new@example.com');
      await page.getByRole('button', { name: 'Send confirmation' }).click();
      await page.getByTestId('email-pending').waitFor({ timeout: 15_000 });
      expect(await page.getByTestId('email-pending').textContent()).toContain('account.page.new@example.com');
      // Mail keeps its address until the link is opened.
      expect(await page.getByTestId('account-email').textContent()).toBe(EMAIL);
      expect(problems.errors).toEqual([]);
    } finally {
      await context.close();
    }
  });
});
