import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type Browser } from 'playwright-core';
import { MESSAGE_TYPES } from '../../shared/mail/templates.ts';
import { browserPath, CHROMIUM_ARGS, describeViolations, NO_BROWSER_REASON, runAxe } from '../helpers/dashboard.ts';
import { SAMPLES } from '../helpers/mail-samples.ts';

/**
 * Each mail message as a person receives it: its HTML part opened in headless Chromium, offline
 * (the message holds everything it shows), checked with axe (WCAG 2.1 A and AA
 * and best practice: no violation of any impact), and its text part carrying every link the HTML
 * does, so a reader of either part can act. Samples: tests/helpers/mail-samples.ts, the golden
 * test's. Skipped, saying why, when no Chromium is installed.
 */
if (!browserPath) console.warn(`tests/browser/mail.test.ts SKIPPED: ${NO_BROWSER_REASON}`);

let browser: Browser;

beforeAll(async () => {
  if (!browserPath) return;
  browser = await chromium.launch({ executablePath: browserPath, args: CHROMIUM_ARGS });
}, 120_000);
afterAll(async () => {
  await browser?.close();
});

/** The web addresses written out in a text part. */
const urlsIn = (text: string): string[] => text.match(/https?:\/\/[^\s<>"]+/g) ?? [];

describe.skipIf(!browserPath)('each mail message in Chromium', () => {
  for (const type of MESSAGE_TYPES) {
    it(`${type}: axe finds nothing in the HTML part, and the text part has its links`, async () => {
      const { html, text, subject } = SAMPLES[type][0]();
      // Offline: the message must render from itself alone (a mail client fetches nothing unasked).
      const context = await browser.newContext({ offline: true });
      try {
        const page = await context.newPage();
        await page.setContent(html, { waitUntil: 'load' });
        expect(await page.title()).toBe(subject);
        const { blocking, warnings } = await runAxe(page);
        expect([...blocking, ...warnings], describeViolations([...blocking, ...warnings])).toEqual([]);

        const links = await page
          .locator('a')
          .evaluateAll((anchors) => anchors.map((a) => ({ href: a.getAttribute('href') ?? '', name: (a.textContent ?? '').trim() })));
        expect(links.length, 'the message has its action link').toBeGreaterThan(0);
        const visible = (await page.locator('body').textContent()) ?? '';
        for (const { href, name } of links) {
          expect(name, `${href} has a name`).not.toBe('');
          expect(urlsIn(text), `the text part has ${href}`).toContain(href);
        }
        // And the other way: an address in the text is a link in the HTML, or shown in it as written.
        for (const url of urlsIn(text))
          expect(links.some((l) => l.href === url) || visible.includes(url), `${url} of the text part is in the HTML`).toBe(true);
      } finally {
        await context.close();
      }
    });
  }
});
