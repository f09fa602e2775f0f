import { mkdirSync, statSync } from 'node:fs';
import { chromium, type Page } from 'playwright-core';
import {
  browserPath,
  CHROMIUM_ARGS,
  customerWithServer,
  settled,
  signedInContext,
  startDashboardStack,
  watchProblems,
} from '../tests/helpers/dashboard.ts';

/**
 * The dashboard's screenshots in docs/images (docs/dashboard.md shows them), made afresh:
 *
 *   npm run screenshots [-- --out DIR]
 *
 * Starts the local stack in memory with the dashboard and the simulator panel, prepares a customer
 * with credit and a running server with some console output, and saves, at 1280×800: overview.png,
 * deploy.png (with a quote), server-console.png (the console tab with output); and at 375 px wide:
 * overview-mobile.png. Every error a page logs is printed, and the run fails on one.
 */
const args = process.argv.slice(2);
const outIndex = args.indexOf('--out');
const out = outIndex >= 0 && args[outIndex + 1] ? args[outIndex + 1]! : new URL('../docs/images', import.meta.url).pathname;
if (!browserPath) throw new Error('no Chromium (apt-get install chromium, or CHROMIUM_PATH)');
mkdirSync(out, { recursive: true });

const EMAIL = 'player@example.com';
// A table of its own: the run starts from nothing even against a DynamoDB Local that is kept (DYNAMODB_ENDPOINT).
const stack = await startDashboardStack({ tableName: `screenshots-${Date.now()}` });
const failures: string[] = [];
const browser = await chromium.launch({ executablePath: browserPath, args: CHROMIUM_ARGS });
try {
  const customer = await customerWithServer(stack, EMAIL, { creditCents: 5000, serverName: 'Survival world', running: true });
  // A second server, so that the overview lists more than one.
  await customerWithServer(stack, EMAIL, { creditCents: 0, serverName: 'Creative build' });
  await stack.must('POST', `/v1/servers/${customer.serverId}/command`, { command: 'say Welcome to the survival world!' }, customer.token);

  const shoot = async (
    name: string,
    path: string,
    viewport: { width: number; height: number },
    ready: (page: Page) => Promise<void> = async () => {},
  ) => {
    const context = await signedInContext(browser, stack, EMAIL, { viewport });
    try {
      const page = await context.newPage();
      const problems = watchProblems(page);
      await page.goto(`${stack.baseUrl}/app${path}`);
      await page.locator('h1#page-title').first().waitFor({ timeout: 20_000 });
      await settled(page);
      await ready(page);
      // The page's heading has the focus after a navigation; a screenshot shows no focus ring.
      await page.evaluate(() =>
        (globalThis as unknown as { document: { activeElement: { blur?: () => void } | null } }).document.activeElement?.blur?.(),
      );
      await page.waitForTimeout(300);
      const file = `${out}/${name}`;
      await page.screenshot({ path: file });
      const kb = Math.round(statSync(file).size / 1024);
      process.stdout.write(`${file} (${kb} KB)\n`);
      if (kb >= 200) failures.push(`${name} is ${kb} KB (keep it under 200 KB)`);
      for (const error of problems.errors) failures.push(`${name}: ${error}`);
    } finally {
      await context.close();
    }
  };

  const desktop = { width: 1280, height: 800 };
  await shoot('overview.png', '/', desktop);
  await shoot('deploy.png', '/deploy', desktop, async (page) => {
    await page.locator('#deploy-name').fill('Survival world 2');
    await page.waitForFunction(
      () =>
        (globalThis as unknown as { document: { querySelector(s: string): { textContent: string } | null } }).document.querySelector(
          '[data-testid="quote-status"]',
        )?.textContent === 'ready',
      undefined,
      { timeout: 20_000 },
    );
  });
  await shoot('server-console.png', `/servers/${customer.serverId}?tab=console`, desktop, async (page) => {
    await page.waitForFunction(
      () => {
        const { document } = globalThis as unknown as { document: { querySelector(s: string): { textContent: string } | null } };
        return (
          document.querySelector('[data-testid="console-state"]')?.textContent === 'connected' &&
          (document.querySelector('[data-testid="terminal"]')?.textContent ?? '').includes('Welcome')
        );
      },
      undefined,
      { timeout: 20_000 },
    );
  });
  await shoot('overview-mobile.png', '/', { width: 375, height: 800 });
} finally {
  await browser.close();
  await stack.stop();
}
if (failures.length) {
  process.stderr.write(`${failures.join('\n')}\n`);
  process.exit(1);
}
