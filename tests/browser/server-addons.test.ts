import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type Browser, type Page } from 'playwright-core';
import {
  browserPath,
  CHROMIUM_ARGS,
  customerWithServer,
  type Customer,
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
 * Add-ons in the dashboard, in headless Chromium: the deploy form's add-on fields go into the live
 * quote, which itemises them; the server page's settings tab has an "Add-ons" section that changes
 * them (PUT /v1/servers/:id/addons), shows the new price, and names the count when a lowering is
 * refused. axe finds nothing serious or critical on either page. Skipped, saying why, without Chromium.
 */
if (!browserPath) console.warn(`tests/browser/server-addons.test.ts SKIPPED: ${NO_BROWSER_REASON}`);

let stack: DashboardStack;
let browser: Browser;
let customer: Customer;
let page: Page;

beforeAll(async () => {
  if (!browserPath) return;
  [stack, browser] = await Promise.all([startDashboardStack(), chromium.launch({ executablePath: browserPath, args: CHROMIUM_ARGS })]);
  customer = await customerWithServer(stack, 'addons.player@example.com', { creditCents: 5000, serverName: 'Addons server' });
}, 240_000);
afterAll(async () => {
  await page?.context().close();
  await browser?.close();
  await stack?.stop();
});

const server = () => stack.must('GET', `/v1/servers/${customer.serverId}`, undefined, customer.token);

describe.skipIf(!browserPath)('add-ons in the dashboard', () => {
  it('the deploy quote itemises the add-ons chosen in the form; axe finds nothing serious', async () => {
    ({ page } = await signedInPage(browser, stack, customer.email, '/deploy'));
    const problems = watchProblems(page);
    await page.locator('#deploy-name').fill('Quoted with extras');
    await page.locator('#deploy-ram').fill('1024');
    await page.locator('#deploy-cpu').fill('100');
    await page.locator('#deploy-disk').fill('2048');
    await page.getByLabel('Extra backup slots').fill('2');
    await page.getByLabel('Extra databases').fill('1');
    await expect.poll(() => page.getByTestId('quote-status').textContent(), { timeout: 20_000 }).toBe('ready');
    await expect
      .poll(() => page.getByTestId('quote-lines').textContent(), { timeout: 20_000 })
      .toMatch(/Resources: .*2 extra backup slots: .*1 extra database: /);
    // 720 + 2 × 70 + 140 = 1,000 millicents: one cent an hour.
    await expect.poll(() => page.getByTestId('quote-hourly').textContent()).toMatch(/\$0\.01\b/);
    await settled(page);
    const { blocking } = await runAxe(page);
    expect(describeViolations(blocking)).toBe('');
    expect(problems.errors).toEqual([]);
  });

  it('the settings tab changes the add-ons: the panel limits and the price follow', async () => {
    await page.goto(`${stack.baseUrl}/app/servers/${customer.serverId}?tab=settings`);
    const section = page.locator('#addons');
    await section.getByLabel('Extra ports').waitFor({ timeout: 20_000 });
    await section.getByLabel('Extra ports').fill('2');
    await expect.poll(() => page.getByTestId('addons-difference').textContent()).toMatch(/^\+/);
    await section.getByRole('button', { name: 'Save add-ons' }).click();
    await section.getByText('Add-ons saved').waitFor({ timeout: 20_000 });
    const after = await server();
    expect(after.addons).toEqual({ backups: 0, databases: 0, ports: 2 });
    expect(after.priceMillicentsPerHour).toBe(720 + 2 * 70);
    const sim = stack.panel!.sim;
    expect(sim.state.serverByIdentifier(after.identifier)!.allocation_limit).toBe(3);
    await settled(page);
    const { blocking } = await runAxe(page);
    expect(describeViolations(blocking)).toBe('');
  });

  it('a lowering below what the server holds is refused with the count', async () => {
    const s = await server();
    const sim = stack.panel!.sim;
    const onPanel = sim.state.serverByIdentifier(s.identifier)!;
    // Two more ports assigned on the panel, as the ports feature or an operator would.
    const free = [...sim.state.allocations.values()].filter((a) => a.node_id === onPanel.node_id && a.server_id === null).slice(0, 2);
    for (const a of free) a.server_id = onPanel.id;
    const section = page.locator('#addons');
    await section.getByLabel('Extra ports').fill('0');
    await section.getByRole('button', { name: 'Save add-ons' }).click();
    await expect.poll(() => section.locator('[role="alert"]').first().textContent(), { timeout: 20_000 }).toMatch(/has 3 ports/);
    expect((await server()).addons.ports).toBe(2);
  });
});
