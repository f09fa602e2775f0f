import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type Browser } from 'playwright-core';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { WEB_DIST } from '../../web/build.ts';
import {
  browserPath,
  CHROMIUM_ARGS,
  customerWithServer,
  NO_BROWSER_REASON,
  signedInContext,
  startDashboardStack,
  type Customer,
  type DashboardStack,
} from '../helpers/dashboard.ts';

/**
 * The dashboard's initial JavaScript and CSS stays within 120 KB gzipped (level 9, as `npm run
 * bench -- dashboard` weighs it): every script and stylesheet the overview fetched, in headless
 * Chromium with an empty cache, before its heading appeared. A server page's own chunks (the
 * console's terminal, the files' editor, graphs) load lazily and are not among them. Skipped,
 * saying why, without Chromium.
 */
if (!browserPath) console.warn(`tests/browser/initial-bundle.test.ts SKIPPED: ${NO_BROWSER_REASON}`);

const BUDGET_BYTES = 120 * 1024;
let stack: DashboardStack;
let browser: Browser;
let customer: Customer;

beforeAll(async () => {
  if (!browserPath) return;
  [stack, browser] = await Promise.all([startDashboardStack(), chromium.launch({ executablePath: browserPath, args: CHROMIUM_ARGS })]);
  customer = await customerWithServer(stack, 'initial.bundle@example.com', { serverName: 'Bundle server' });
}, 240_000);
afterAll(async () => {
  await browser?.close();
  await stack?.stop();
});

describe.skipIf(!browserPath)('the initial bundle', () => {
  it('the overview fetches at most 120 KB of JS and CSS gzipped before its first render, nothing of the server page', async () => {
    const context = await signedInContext(browser, stack, customer.email);
    try {
      const page = await context.newPage();
      const fetched = new Set<string>();
      page.on('request', (req) => {
        const { pathname } = new URL(req.url());
        if (/\.(js|css)$/.test(pathname) && pathname.startsWith('/app/')) fetched.add(pathname.slice('/app/'.length));
      });
      await page.goto(`${stack.baseUrl}/app/`);
      await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor({ timeout: 15_000 });
      const initial = [...fetched];
      const sizes = initial.map((file) => ({ file, gz: gzipSync(readFileSync(join(WEB_DIST, file)), { level: 9 }).length }));
      const total = sizes.reduce((sum, s) => sum + s.gz, 0);
      console.info(`initial JS + CSS: ${(total / 1024).toFixed(1)} KB gzipped (${sizes.map((s) => s.file).join(', ')})`);
      expect(initial.some((f) => f.endsWith('.js'))).toBe(true);
      expect(total, JSON.stringify(sizes)).toBeLessThanOrEqual(BUDGET_BYTES);
      expect(initial.filter((f) => /\/(server|console|files|xterm|codemirror)[-.]/i.test(f))).toEqual([]);
    } finally {
      await context.close();
    }
  });
});
