import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type Browser } from 'playwright-core';
import { cents } from '../../web/src/format.ts';
import {
  browserPath,
  CHROMIUM_ARGS,
  NO_BROWSER_REASON,
  runAxe,
  describeViolations,
  signedInPage,
  startDashboardStack,
  type DashboardStack,
} from '../helpers/dashboard.ts';

/**
 * Debt on the dashboard (docs/api.md "Debt"), in headless Chromium against the local stack: an
 * account whose balance an operator's deduction took below zero sees what it owes on the overview
 * and the billing page, in words, with how it is settled; the top-up form proposes an amount that
 * clears it and says how the payment splits; the ledger row of a credit that paid the debt says so;
 * the admin's account page shows the debt too. Skipped, saying why, when no Chromium is installed.
 */
if (!browserPath) console.warn(`tests/browser/debt.test.ts SKIPPED: ${NO_BROWSER_REASON}`);

const EMAIL = 'debtor.browser@example.com';
let stack: DashboardStack;
let browser: Browser;
let accountId: string;

beforeAll(async () => {
  if (!browserPath) return;
  [stack, browser] = await Promise.all([startDashboardStack(), chromium.launch({ executablePath: browserPath, args: CHROMIUM_ARGS })]);
  const token = await stack.session(EMAIL);
  accountId = (await stack.must('GET', '/v1/account', undefined, token)).id;
  // The 500-cent trial, then 1,900 cents taken: 1,400 owed. Then 200 paid towards it: 1,200 owed.
  await stack.must('POST', `/v1/admin/users/${accountId}/credits`, { amountCents: -1900, note: 'Chargeback after the credit was spent' });
  await stack.must('POST', `/v1/admin/users/${accountId}/credits`, { amountCents: 200, note: 'Part payment' });
}, 240_000);
afterAll(async () => {
  await browser?.close();
  await stack?.stop();
});

describe.skipIf(!browserPath)('a debt on the dashboard', () => {
  it('the overview says what is owed and how to settle it', async () => {
    const { page, context, problems } = await signedInPage(browser, stack, EMAIL, '/');
    try {
      const notice = page.getByTestId('debt-notice');
      await expect.poll(() => notice.textContent()).toContain(`You owe ${cents(1200)}.`);
      expect(await notice.textContent()).toContain('Your next top-up pays the debt off first');
      expect(await notice.getByRole('link', { name: 'Top up' }).getAttribute('href')).toContain('/billing');
      expect(problems.errors).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it('the billing page shows the debt, proposes a top-up that clears it, and the ledger says what paid it', async () => {
    const { page, context, problems } = await signedInPage(browser, stack, EMAIL, '/billing');
    try {
      await expect.poll(() => page.getByTestId('billing-debt').textContent()).toBe(cents(1200));
      expect(await page.getByTestId('billing-balance').textContent()).toBe(cents(-1200));
      expect(await page.getByTestId('debt-notice').textContent()).toContain(`You owe ${cents(1200)}.`);
      // The smallest preset above the debt ($25 of $10, $25, $50, $100), and how it splits.
      await expect.poll(() => page.locator('#topup-amount').inputValue()).toBe('25.00');
      expect(await page.getByTestId('topup-split').textContent()).toBe(
        `You pay ${cents(2500)}. ${cents(1200)} pays off what you owe; ${cents(1300)} becomes credit.`,
      );
      await page.locator('#topup-amount').fill('5');
      await expect.poll(() => page.getByTestId('topup-split').textContent()).toContain(`(${cents(700)} left to pay)`);
      const grant = page.getByTestId('ledger-row').filter({ hasText: 'Part payment' });
      await expect.poll(() => grant.textContent()).toContain(`${cents(200)} of it paid off the debt`);
      const { blocking } = await runAxe(page);
      expect(blocking, describeViolations(blocking)).toEqual([]);
      expect(problems.errors).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it("the admin's account page shows the debt", async () => {
    const { page, context } = await signedInPage(browser, stack, 'admin@localhost', `/admin/accounts/${accountId}`);
    try {
      await expect.poll(() => page.getByTestId('account-debt').textContent()).toBe(cents(1200));
    } finally {
      await context.close();
    }
  });
});
