import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { cents } from '../../web/src/format.ts';
import {
  browserPath,
  CHROMIUM_ARGS,
  customerWithServer,
  describeViolations,
  NO_BROWSER_REASON,
  runAxe,
  signedInContext,
  startDashboardStack,
  watchProblems,
  type Customer,
  type DashboardStack,
  type PageProblems,
} from '../helpers/dashboard.ts';

/**
 * The admin home in headless Chromium against the local stack: after deploys, a suspension and a
 * sandbox top-up, its cards show what the admin lists and the ledger say, a card leads to its list,
 * axe finds nothing serious, and the account and server lists sort the page they show. Skipped,
 * saying why, when no Chromium is installed.
 */
if (!browserPath) console.warn(`tests/browser/admin-home.test.ts SKIPPED: ${NO_BROWSER_REASON}`);

const ADMIN = 'admin@localhost';

let stack: DashboardStack;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let problems: PageProblems;
let app: string;
let ann: Customer;

const listed = async (path: string) => (await stack.must('GET', `${path}${path.includes('?') ? '&' : '?'}limit=100`)).data as any[];

beforeAll(async () => {
  if (!browserPath) return;
  [stack, browser] = await Promise.all([startDashboardStack(), chromium.launch({ executablePath: browserPath, args: CHROMIUM_ARGS })]);
  app = `${stack.baseUrl}/app`;
  ann = await customerWithServer(stack, 'ann.adminhome@example.com', { serverName: 'Ann one', creditCents: 9000 });
  const ben = await customerWithServer(stack, 'ben.adminhome@example.com', { serverName: 'Ben one', creditCents: 3000 });
  // A smaller server: the servers differ in price.
  const egg = (await stack.must('GET', '/v1/eggs', undefined, ben.token)).data[0];
  await stack.must(
    'POST',
    '/v1/servers',
    { name: 'Ben small', eggId: egg.eggId, instanceId: egg.instanceId, ramMb: 512, cpuPercent: 50, diskMb: 1024 },
    ben.token,
  );
  await stack.must('POST', `/v1/admin/servers/${ben.serverId}/suspend`);
  // A top-up through the sandbox checkout: the signed webhook path a paid Stripe session takes.
  const checkout = await stack.must('POST', '/v1/billing/checkout', { amountCents: 1_200 }, ann.token);
  await stack.must('POST', `/dev/checkout/${checkout.invoiceId}/complete`, { outcome: 'paid' });
  context = await signedInContext(browser, stack, ADMIN);
  page = await context.newPage();
  page.setDefaultTimeout(20_000);
  problems = watchProblems(page);
}, 240_000);
afterAll(async () => {
  await context?.close();
  await browser?.close();
  await stack?.stop();
});

describe.skipIf(!browserPath)('the admin home', () => {
  it('shows the figures of the lists and the ledger, reached from the navigation, with no axe finding', async () => {
    await page.goto(`${app}/`);
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Admin home' }).click();
    await page.waitForURL(`${app}/admin/home`);
    const active = page.getByTestId('home-active');
    await active.waitFor();
    const [activeList, suspendedList, accounts, ledger] = await Promise.all([
      listed('/v1/admin/servers?status=active'),
      listed('/v1/admin/servers?status=suspended'),
      listed('/v1/admin/users'),
      stack.must('GET', '/v1/account/transactions?limit=100', undefined, ann.token),
    ]);
    expect([activeList.length, suspendedList.length]).toEqual([2, 1]);
    expect(await active.textContent()).toBe(String(activeList.length));
    expect(await page.getByTestId('home-suspended').textContent()).toBe(String(suspendedList.length));
    expect(await page.getByTestId('home-accounts').textContent()).toBe(String(accounts.length));
    const topUps = (ledger.data as { type: string; amountCents: number }[]).filter((e) => e.type === 'topup');
    const topUpCents = topUps.reduce((n, e) => n + e.amountCents, 0);
    expect(topUpCents).toBe(1_200);
    expect(await page.getByTestId('today-topups').textContent()).toBe(`${cents(topUpCents)} (${topUps.length})`);
    expect(await page.getByTestId('today-revenue').textContent()).toBe(cents(topUpCents));
    expect(await page.getByTestId('month-revenue').textContent()).toBe(cents(topUpCents));
    const { blocking } = await runAxe(page);
    expect(blocking, describeViolations(blocking)).toEqual([]);
    expect(problems.errors).toEqual([]);
  });

  it('a card leads to its list, which holds as many rows as the card says', async () => {
    const count = Number(await page.getByTestId('home-suspended').textContent());
    await page.getByTestId('home-suspended').getByRole('link').click();
    await page.waitForURL(`${app}/admin/servers?status=suspended`);
    await expect.poll(() => page.getByTestId('admin-server-row').count()).toBe(count);
  });

  it('accounts sort by balance, highest first, in the address, with axe clean', async () => {
    await page.goto(`${app}/admin/accounts`);
    await page.getByTestId('account-row').first().waitFor();
    await page.getByLabel('Sort this page by').selectOption('balance-desc');
    await page.waitForURL(`${app}/admin/accounts?sort=balance-desc`);
    const expected = (await listed('/v1/admin/users')).sort((a, b) => b.balanceCents - a.balanceCents).map((a) => a.email);
    await expect
      .poll(async () =>
        (await page.getByTestId('account-row').locator('td:first-child, th:first-child').allTextContents()).map((t) => t.trim()),
      )
      .toEqual(expected);
    const { blocking } = await runAxe(page);
    expect(blocking, describeViolations(blocking)).toEqual([]);
  });

  it('servers sort by price, highest first, and back to newest first', async () => {
    await page.goto(`${app}/admin/servers`);
    await page.getByTestId('admin-server-row').first().waitFor();
    const all = await listed('/v1/admin/servers');
    const names = async () => (await page.getByTestId('admin-server-row').locator('td:first-child').allTextContents()).map((t) => t.trim());
    const byPrice = [...all].sort((a, b) => b.priceMillicentsPerHour - a.priceMillicentsPerHour);
    expect(byPrice.map((s) => s.name)).not.toEqual(all.map((s) => s.name)); // the sort must change the order shown
    await page.getByLabel('Sort this page by').selectOption('price-desc');
    await page.waitForURL(`${app}/admin/servers?sort=price-desc`);
    await expect.poll(names).toEqual(byPrice.map((s) => `${s.name}${s.identifier}`));
    await page.getByLabel('Sort this page by').selectOption('newest');
    await page.waitForURL(`${app}/admin/servers`);
    await expect.poll(names).toEqual(all.map((s) => `${s.name}${s.identifier}`));
  });
});
