import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type Browser, type Page } from 'playwright-core';
import {
  browserPath,
  CHROMIUM_ARGS,
  type DashboardStack,
  describeViolations,
  NO_BROWSER_REASON,
  runAxe,
  settled,
  signedInPage,
  startDashboardStack,
  watchProblems,
} from '../helpers/dashboard.ts';

/**
 * The storefront in headless Chromium: an admin's plans show on the deploy page as cards by
 * category with the price per hour and per 730-hour month; a customer picks one, names the server
 * and deploys, and the server has the plan's resources and its set price. The admin plans page
 * lists the plan and hides it. The server page and the server list name the server's region as
 * the admin did (display name, city, country), never by its tag. axe finds nothing serious or
 * critical on any of these pages. Skipped,
 * saying why, without Chromium.
 */
if (!browserPath) console.warn(`tests/browser/storefront.test.ts SKIPPED: ${NO_BROWSER_REASON}`);

const ADMIN = 'admin@localhost';
const SET_PRICE = 1_500; // 1.5 ¢ an hour: $0.015, $10.95 for 730 hours
let stack: DashboardStack;
let browser: Browser;
let page: Page;
let planId: string;
let token: string;
const LOOKS: Record<string, { displayName: string; city: string; country: string }> = {
  'eu-central': { displayName: 'Frankfurt 1', city: 'Frankfurt', country: 'DE' },
  'us-east': { displayName: 'Ashburn 1', city: 'Ashburn', country: 'US' },
};
/** What the dashboard shows for a region the admin named (regions.tsx regionLabel). */
const shown = (tag: string): string => {
  const look = LOOKS[tag];
  return look ? `${look.displayName} — ${look.city}, ${look.country}` : `Region ${tag}`;
};

beforeAll(async () => {
  if (!browserPath) return;
  [stack, browser] = await Promise.all([startDashboardStack(), chromium.launch({ executablePath: browserPath, args: CHROMIUM_ARGS })]);
  const eggs = await stack.must('GET', '/v1/eggs');
  const plan = await stack.must('POST', '/v1/admin/plans', {
    name: 'Survival S',
    description: 'Ten friends, one world',
    pictureUrl: null,
    category: 'Minecraft',
    resources: { ramMb: 1536, cpuPercent: 150, diskMb: 4096 },
    addons: { backups: 0, databases: 0, ports: 0 },
    eggIds: [eggs.data[0].eggId],
    setPriceMillicentsPerHour: SET_PRICE,
    visible: true,
  });
  planId = plan.id;
  // Every region named by an admin: the pages show these, not the tags.
  for (const r of (await stack.must('GET', '/v1/regions')).data as { region: string }[]) {
    await stack.must(
      'PUT',
      `/v1/admin/regions/${r.region}`,
      LOOKS[r.region] ?? { displayName: `Region ${r.region}`, city: null, country: null },
    );
  }
  token = await stack.session('storefront.buyer@example.com');
  const me = await stack.must('GET', '/v1/account', undefined, token);
  await stack.must('POST', `/v1/admin/users/${me.id}/credits`, { amountCents: 5000, note: 'browser test credit' });
}, 240_000);
afterAll(async () => {
  await page?.context().close();
  await browser?.close();
  await stack?.stop();
});

describe.skipIf(!browserPath)('the storefront', () => {
  it('buys a plan: the server gets its resources and its set price; axe finds nothing serious', async () => {
    ({ page } = await signedInPage(browser, stack, 'storefront.buyer@example.com', '/deploy'));
    const problems = watchProblems(page);
    const card = page.getByTestId('plan-card').filter({ hasText: 'Survival S' });
    await card.waitFor({ timeout: 20_000 });
    await expect.poll(() => card.textContent()).toMatch(/\$0\.015\/hour · \$10\.95\/month/);
    await card.getByRole('radio').check();
    // A plan fixes the resources: the custom-size fields are gone.
    await expect.poll(() => page.locator('#deploy-ram').count()).toBe(0);
    await page.locator('#deploy-name').fill('Bought from the store');
    await expect.poll(() => page.getByTestId('quote-status').textContent(), { timeout: 20_000 }).toBe('ready');
    await settled(page);
    const { blocking } = await runAxe(page);
    expect(describeViolations(blocking)).toBe('');
    await page.getByRole('button', { name: 'Deploy' }).click();
    await page.waitForURL(/\/app\/servers\/[0-9a-f-]{36}/, { timeout: 30_000 });
    const id = /servers\/([0-9a-f-]{36})/.exec(page.url())![1]!;
    const server = await stack.must('GET', `/v1/servers/${id}`, undefined, token);
    expect(server).toMatchObject({ planId, resources: { ramMb: 1536, cpuPercent: 150, diskMb: 4096 }, priceMillicentsPerHour: SET_PRICE });
    // The region by the name the admin gave it, on the server page and the server list, never the tag.
    expect(server.region).toBeTruthy();
    const region = page.getByTestId('server-region');
    await expect.poll(() => region.textContent(), { timeout: 20_000 }).toBe(shown(server.region));
    await page.goto(`${stack.baseUrl}/app/servers`);
    const row = page.getByTestId('server-row').filter({ hasText: 'Bought from the store' });
    await row.waitFor({ timeout: 20_000 });
    await expect.poll(() => row.getByRole('cell', { name: shown(server.region), exact: true }).count(), { timeout: 20_000 }).toBe(1);
    expect(await row.textContent()).not.toContain(server.region);
    const option = page.locator(`#filter-region option[value="${server.region}"]`);
    await expect.poll(() => option.textContent(), { timeout: 20_000 }).toBe(shown(server.region));
    await settled(page);
    expect(describeViolations((await runAxe(page)).blocking)).toBe('');
    expect(problems.errors).toEqual([]);
  });

  it('the admin plans page lists the plan and hides it; axe finds nothing serious', async () => {
    const admin = await signedInPage(browser, stack, ADMIN, '/admin/plans');
    const row = admin.page.getByRole('row').filter({ hasText: 'Survival S' });
    await row.waitFor({ timeout: 20_000 });
    await settled(admin.page);
    const { blocking } = await runAxe(admin.page);
    expect(describeViolations(blocking)).toBe('');
    await row.getByRole('button', { name: 'Hide Survival S' }).click();
    await row.getByText('hidden').waitFor({ timeout: 20_000 });
    const listed = await stack.must('GET', '/v1/plans', undefined, token);
    expect(listed.data.map((p: { id: string }) => p.id)).not.toContain(planId);
    await admin.page.context().close();
  });
});
