import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type Browser } from 'playwright-core';
import {
  browserPath,
  CHROMIUM_ARGS,
  NO_BROWSER_REASON,
  signedInContext,
  startDashboardStack,
  watchProblems,
  type DashboardStack,
} from '../helpers/dashboard.ts';

/**
 * A platform set to euros, seen in the dashboard (headless Chromium): the amounts read the
 * platform's currency (GET /v1/billing/config), so the header's balance and the top-up form show
 * € and EUR, never $. Skipped, saying why, without Chromium.
 */
if (!browserPath) console.warn(`tests/browser/currency.test.ts SKIPPED: ${NO_BROWSER_REASON}`);

let stack: DashboardStack;
let browser: Browser;

beforeAll(async () => {
  if (!browserPath) return;
  [stack, browser] = await Promise.all([startDashboardStack(), chromium.launch({ executablePath: browserPath, args: CHROMIUM_ARGS })]);
  // At set-up, while only the operator has an account.
  await stack.must('PUT', '/v1/admin/settings', { currency: 'eur' });
}, 240_000);
afterAll(async () => {
  await browser?.close();
  await stack?.stop();
});

describe.skipIf(!browserPath)('the dashboard of a platform in EUR', () => {
  it('shows the balance and the top-up amounts in euros', async () => {
    const context = await signedInContext(browser, stack, 'euro.player@example.com');
    try {
      const page = await context.newPage();
      page.setDefaultTimeout(20_000);
      const problems = watchProblems(page);
      await page.goto(`${stack.baseUrl}/app/billing`);
      const balance = page.getByTestId('header-balance');
      await expect.poll(() => balance.textContent()).toBe('€5.00'); // the trial credit, 500 cents
      await page.getByLabel('Amount in EUR').waitFor();
      expect(await page.locator('main').textContent()).not.toContain('$');
      expect(problems.errors).toEqual([]);
    } finally {
      await context.close();
    }
  });
});
