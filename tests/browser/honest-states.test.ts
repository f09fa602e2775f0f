import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type Browser } from 'playwright-core';
import {
  browserPath,
  CHROMIUM_ARGS,
  customerWithServer,
  describeViolations,
  NO_BROWSER_REASON,
  runAxe,
  settled,
  signedInPage,
  startDashboardStack,
  type Customer,
  type DashboardStack,
} from '../helpers/dashboard.ts';

/**
 * States that must not read as facts, in headless Chromium: the deploy quote does not say "Ready to
 * deploy" while the name is empty and shows the rounded cents beside the exact price; the backups
 * tab reads "n of m"; the overview's runway reads in days and hours. Skipped, saying why, without Chromium.
 */
if (!browserPath) console.warn(`tests/browser/honest-states.test.ts SKIPPED: ${NO_BROWSER_REASON}`);

let stack: DashboardStack;
let browser: Browser;
let customer: Customer;

beforeAll(async () => {
  if (!browserPath) return;
  [stack, browser] = await Promise.all([startDashboardStack(), chromium.launch({ executablePath: browserPath, args: CHROMIUM_ARGS })]);
  customer = await customerWithServer(stack, 'honest.states@example.com', { serverName: 'Honest server', creditCents: 50_000 });
}, 240_000);
afterAll(async () => {
  await browser?.close();
  await stack?.stop();
});

describe.skipIf(!browserPath)('honest states', () => {
  it('deploy: no "Ready to deploy" without a name; the exact hourly price beside the rounded cents', async () => {
    const { page, context, problems } = await signedInPage(browser, stack, customer.email, '/deploy');
    try {
      await expect.poll(() => page.getByTestId('quote-status').textContent(), { timeout: 20_000 }).toBe('ready');
      await page.getByTestId('quote-missing').waitFor({ timeout: 15_000 });
      expect(await page.getByTestId('quote-deployable').count()).toBe(0);
      expect(await page.getByTestId('quote-hourly-rounded').textContent()).toMatch(/shown as \$\d+\.\d\d\/h/);
      const { blocking } = await runAxe(page);
      expect(describeViolations(blocking)).toBe('');

      await page.locator('#deploy-name').fill('Named at last');
      await page.getByTestId('quote-deployable').waitFor({ timeout: 20_000 });
      expect(await page.getByTestId('quote-missing').count()).toBe(0);
      expect(problems.errors).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it('backups read "n of m" and the runway reads in days and hours', async () => {
    const { page, context } = await signedInPage(browser, stack, customer.email, `/servers/${customer.serverId}?tab=backups`);
    try {
      await page.getByTestId('backup-count').waitFor({ timeout: 15_000 });
      expect(await page.getByTestId('backup-count').textContent()).toMatch(/^0 of 3 backups/);
      await page.goto(`${stack.baseUrl}/app/`);
      await page.locator('h1#page-title').waitFor({ timeout: 15_000 });
      await settled(page);
      // 50,000 cents at a few cents an hour: weeks, in days and hours.
      expect(await page.getByTestId('runway').textContent()).toMatch(/^\d+ d \d{1,2} h$/);
    } finally {
      await context.close();
    }
  });
});
