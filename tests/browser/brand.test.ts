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
import { png } from '../helpers/png.ts';

/**
 * The operator's brand in the dashboard, in headless Chromium against the local stack: set through
 * the API, the header shows its name, logo and colour (the CSS variable --brand) and the footer its
 * links, for a customer, with no CSP error and axe clean; the admin's brand page previews a colour
 * with its contrast, will not save an unreadable one, and saves a readable one into the header at once.
 * Skipped, saying why, when no Chromium is installed.
 */
if (!browserPath) console.warn(`tests/browser/brand.test.ts SKIPPED: ${NO_BROWSER_REASON}`);

let stack: DashboardStack;
let browser: Browser;

beforeAll(async () => {
  if (!browserPath) return;
  [stack, browser] = await Promise.all([
    startDashboardStack({ panel: undefined, webhooks: false }),
    chromium.launch({ executablePath: browserPath, args: CHROMIUM_ARGS }),
  ]);
}, 240_000);
afterAll(async () => {
  await browser?.close();
  await stack?.stop();
});

/** The computed colours of the header's name and top border. */
const headerColours = (page: import('playwright-core').Page) =>
  page.evaluate(() => {
    const g = globalThis as unknown as {
      document: { querySelector(s: string): unknown };
      getComputedStyle(el: unknown): { color: string; borderTopColor: string };
    };
    return {
      name: g.getComputedStyle(g.document.querySelector('header.top .brand')).color,
      border: g.getComputedStyle(g.document.querySelector('header.top')).borderTopColor,
    };
  });

describe.skipIf(!browserPath)("the operator's brand in the dashboard", () => {
  it('shows the name, the logo and the colour in the header and the links in the footer, once set', async () => {
    await stack.must('PUT', '/v1/admin/settings', {
      brand: {
        name: 'Blockhost',
        primaryColor: '#1d4ed8',
        supportEmail: 'help@blockhost.example',
        termsUrl: 'https://blockhost.example/terms',
      },
    });
    await stack.must('PUT', '/v1/admin/brand/logo', { dataBase64: png(48, 48).toString('base64') });
    const { page, context, problems } = await signedInPage(browser, stack, 'brand-customer@example.com');
    try {
      await settled(page);
      await expect.poll(() => page.getByTestId('brand-name').textContent()).toBe('Blockhost');
      expect(await headerColours(page)).toEqual({ name: 'rgb(29, 78, 216)', border: 'rgb(29, 78, 216)' });
      const logo = page.locator('header.top img.brand-logo');
      await expect.poll(() => logo.evaluate((img) => (img as unknown as { naturalWidth: number }).naturalWidth)).toBe(48);
      const footer = page.getByTestId('brand-footer');
      expect(await footer.getByRole('link', { name: 'Terms' }).getAttribute('href')).toBe('https://blockhost.example/terms');
      expect(await footer.getByRole('link', { name: 'help@blockhost.example' }).getAttribute('href')).toBe('mailto:help@blockhost.example');
      expect(await page.title()).toBe('Overview · Blockhost');
      const { blocking } = await runAxe(page);
      expect(blocking, describeViolations(blocking)).toEqual([]);
      expect(problems.errors).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it("the admin's brand page previews the contrast, refuses an unreadable colour and saves a readable one into the header", async () => {
    const { page, context, problems } = await signedInPage(browser, stack, 'admin@localhost', '/admin/brand');
    try {
      await settled(page);
      const colour = page.getByTestId('brand-colour');
      await colour.fill('#ffcc00');
      await expect.poll(() => page.locator('#brand-primaryColor-hint').textContent()).toMatch(/fails WCAG AA/);
      expect(await page.getByRole('button', { name: 'Save the brand' }).isDisabled()).toBe(true);
      await colour.fill('#0f766e');
      await expect.poll(() => page.locator('#brand-primaryColor-hint').textContent()).toMatch(/5\.\d\d:1 with white text.*passes WCAG AA/);
      expect(await page.getByTestId('brand-preview').textContent()).toContain('Blockhost');
      const { blocking } = await runAxe(page);
      expect(blocking, describeViolations(blocking)).toEqual([]);
      await page.getByRole('button', { name: 'Save the brand' }).click();
      await page.getByText('Saved.').waitFor();
      expect((await stack.must('GET', '/v1/brand')).primaryColor).toBe('#0f766e');
      await expect.poll(async () => (await headerColours(page)).name).toBe('rgb(15, 118, 110)');
      expect(problems.errors).toEqual([]);
    } finally {
      await context.close();
    }
  });
});
