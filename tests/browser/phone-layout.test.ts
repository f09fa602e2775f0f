import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type Browser } from 'playwright-core';
import {
  browserPath,
  CHROMIUM_ARGS,
  describeViolations,
  NO_BROWSER_REASON,
  runAxe,
  scrollsSideways,
  settled,
  signedInPage,
  startDashboardStack,
  type DashboardStack,
} from '../helpers/dashboard.ts';

/**
 * The dashboard on a phone (375 × 740) in headless Chromium: the header keeps one line with a
 * long operator name (brand, Menu, balance and "Sign out" side by side, no word wrapped), the
 * document does not scroll sideways, and axe finds nothing serious. Skipped, saying why, without Chromium.
 */
if (!browserPath) console.warn(`tests/browser/phone-layout.test.ts SKIPPED: ${NO_BROWSER_REASON}`);

const PHONE = { width: 375, height: 740 };
let stack: DashboardStack;
let browser: Browser;

beforeAll(async () => {
  if (!browserPath) return;
  [stack, browser] = await Promise.all([startDashboardStack(), chromium.launch({ executablePath: browserPath, args: CHROMIUM_ARGS })]);
  await stack.must('PUT', '/v1/admin/settings', { brand: { name: 'Northern Lights Game Hosting Company' } });
}, 240_000);
afterAll(async () => {
  await browser?.close();
  await stack?.stop();
});

describe.skipIf(!browserPath)('the phone layout', () => {
  for (const path of ['/', '/account']) {
    it(`${path}: the header is one line at 375 px, nothing scrolls sideways, axe passes`, async () => {
      const { page, context, problems } = await signedInPage(browser, stack, 'phone.layout.customer@example.com', path, {
        viewport: PHONE,
      });
      try {
        await settled(page);
        const boxes = await page.evaluate(() => {
          const doc = (globalThis as unknown as { document: { querySelector(s: string): HTMLLike } }).document;
          interface HTMLLike {
            children: ArrayLike<HTMLLike>;
            textContent: string | null;
            getBoundingClientRect(): { top: number; bottom: number; height: number; right: number };
          }
          const header = doc.querySelector('header.top');
          const items = Array.from(header.children).filter((el) => el.getBoundingClientRect().height > 0);
          const signOut = items.find((el) => el.textContent === 'Sign out')!;
          return {
            header: header.getBoundingClientRect().height,
            tops: items.map((el) => Math.round(el.getBoundingClientRect().top)),
            bottoms: items.map((el) => Math.round(el.getBoundingClientRect().bottom)),
            rightmost: Math.max(...items.map((el) => el.getBoundingClientRect().right)),
            signOutHeight: signOut.getBoundingClientRect().height,
          };
        });
        // Side by side: every item's box overlaps every other's vertically (one row), none taller than a button.
        expect(Math.max(...boxes.tops)).toBeLessThan(Math.min(...boxes.bottoms));
        expect(boxes.signOutHeight).toBeLessThanOrEqual(40);
        expect(boxes.header).toBeLessThanOrEqual(64);
        expect(boxes.rightmost).toBeLessThanOrEqual(PHONE.width);
        const { scrollWidth, innerWidth } = await scrollsSideways(page);
        expect(scrollWidth).toBeLessThanOrEqual(innerWidth);

        const { blocking, warnings } = await runAxe(page);
        if (warnings.length) console.warn(`axe warnings on ${path} at 375 px:\n${describeViolations(warnings)}`);
        expect(describeViolations(blocking)).toBe('');
        expect(problems.errors).toEqual([]);
      } finally {
        await context.close();
      }
    });
  }
});
