import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { cents } from '../../web/src/format.ts';
import {
  browserPath,
  CHROMIUM_ARGS,
  NO_BROWSER_REASON,
  signInThroughForm,
  startDashboardStack,
  watchProblems,
  type DashboardStack,
  type PageProblems,
} from '../helpers/dashboard.ts';

/**
 * The customer's journey through the dashboard in headless Chromium, as the issue tells it, each
 * step checked in the page and against the API: sign in through the local identity provider's
 * form → top up in the sandbox checkout and back, the balance grows → deploy with a live quote →
 * the server installs → console: connected, a command and its output → files: edit, save, re-open
 * → resize with the price difference → delete with its name typed → sign out. Then an admin finds
 * the customer, grants credit (the account page and the customer's API agree) and sees the grant
 * in the audit log. The steps depend on each other: they run in order on one page.
 * Skipped, saying why, when no Chromium is installed.
 */
if (!browserPath) console.warn(`tests/browser/dashboard-journey.test.ts SKIPPED: ${NO_BROWSER_REASON}`);

const EMAIL = 'journey.player@example.com';
const SERVER_NAME = 'Journey server';
const TOP_UP_DOLLARS = 25;
const GRANT_CENTS = 1234;

let stack: DashboardStack;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let problems: PageProblems;
let app: string;
/** The customer's session token for the API checks (minted, not the page's). */
let token: string;
let accountId: string;
let serverId = '';

const balance = async (): Promise<number> => (await stack.must('GET', '/v1/account', undefined, token)).balanceCents;
const server = async () => stack.must('GET', `/v1/servers/${serverId}`, undefined, token);
const headerBalance = () => page.getByTestId('header-balance');
const nav = (name: string) => page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name, exact: true });
const tab = (name: string) => page.getByRole('navigation', { name: 'Server sections' }).getByRole('link', { name, exact: true });

beforeAll(async () => {
  if (!browserPath) return;
  [stack, browser] = await Promise.all([startDashboardStack(), chromium.launch({ executablePath: browserPath, args: CHROMIUM_ARGS })]);
  app = `${stack.baseUrl}/app`;
  context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  page = await context.newPage();
  page.setDefaultTimeout(20_000);
  problems = watchProblems(page);
  page.on('response', (res) => {
    if (res.status() >= 400) console.warn(`journey: ${res.status()} ${res.request().method()} ${res.url()}`);
  });
}, 240_000);
afterAll(async () => {
  await context?.close();
  await browser?.close();
  await stack?.stop();
});

describe.skipIf(!browserPath)('the customer journey through the dashboard, then an admin grant', () => {
  it('signs in through the local identity provider’s form and lands on the overview with the balance', async () => {
    await signInThroughForm(page, stack.baseUrl, EMAIL);
    expect(page.url()).toBe(`${app}/`);
    await expect(page.locator('h1#page-title').textContent()).resolves.toBe('Overview');
    await page.locator('header .who', { hasText: EMAIL }).waitFor();
    token = await stack.session(EMAIL);
    const me = await stack.must('GET', '/v1/account', undefined, token);
    accountId = me.id;
    await expect(page.getByTestId('balance').textContent()).resolves.toBe(cents(me.balanceCents));
    await expect(headerBalance().textContent()).resolves.toBe(cents(me.balanceCents));
  });

  it('tops up in the sandbox checkout and comes back with the balance grown by the payment', async () => {
    const before = await balance();
    await nav('Billing').click();
    await page.locator('#topup-amount').fill(String(TOP_UP_DOLLARS));
    await page.getByRole('button', { name: 'Pay with card' }).click();
    await page.waitForURL(/\/dev\/checkout\//);
    await page.locator('button[data-outcome="paid"]').click();
    await page.waitForURL(/\/app\/billing\?checkout=success/, { timeout: 20_000 });
    await page.locator('[data-testid="checkout-notice"][data-outcome="credited"]').waitFor({ timeout: 30_000 });

    const invoice = (await stack.must('GET', '/v1/invoices?limit=1', undefined, token)).data[0];
    expect(invoice).toMatchObject({ status: 'paid', paidCents: TOP_UP_DOLLARS * 100 });
    expect(invoice.creditedCents).toBeGreaterThanOrEqual(TOP_UP_DOLLARS * 100);
    const after = await balance();
    expect(after - before).toBe(invoice.creditedCents);
    await expect.poll(() => headerBalance().textContent()).toBe(cents(after));
    await expect.poll(() => page.getByTestId('billing-balance').textContent()).toBe(cents(after));
    await page.getByTestId('invoice-row').filter({ hasText: invoice.number }).waitFor();
  });

  it('deploys a server from the catalogue with a live quote, and opens its page', async () => {
    await nav('Deploy').click();
    await page.locator('#deploy-egg').waitFor();
    await page.locator('#deploy-egg').selectOption({ label: 'Paper' });
    await page.locator('#deploy-name').fill(SERVER_NAME);
    // The regions come with the catalogue's stock, after the eggs.
    await expect.poll(() => page.locator('#deploy-region option:not([value=""])').count()).toBeGreaterThan(0);
    const regions = await page
      .locator('#deploy-region option')
      .evaluateAll((options) => options.map((o) => (o as unknown as { value: string }).value).filter(Boolean));
    expect(regions.length).toBeGreaterThan(0);
    await page.locator('#deploy-region').selectOption(regions[0]!);
    await page.locator('#deploy-ram').fill('1024');
    await page.locator('#deploy-cpu').fill('100');
    await page.locator('#deploy-disk').fill('2048');
    await expect.poll(() => page.getByTestId('quote-status').textContent(), { timeout: 20_000 }).toBe('ready');
    await expect(page.getByTestId('quote-hourly').textContent()).resolves.toMatch(/\$\d/);

    await page.getByRole('button', { name: 'Deploy', exact: true }).click();
    await page.waitForURL(/\/app\/servers\/[^/?]+/, { timeout: 45_000 });
    serverId = new URL(page.url()).pathname.split('/').pop()!;
    const created = await server();
    expect(created).toMatchObject({ name: SERVER_NAME, resources: { ramMb: 1024, cpuPercent: 100, diskMb: 2048 } });
  });

  it('waits on the server page until the install has ended: installed', async () => {
    await page.locator('[data-testid="install-state"][data-install="installed"]').waitFor({ timeout: 30_000 });
    expect((await server()).live.installStatus).toBe('installed');
  });

  it('console: connects, starts the server, sends a command and shows its output', async () => {
    await tab('Console').click();
    await expect.poll(() => page.getByTestId('console-state').textContent(), { timeout: 20_000 }).toBe('connected');
    // A command reaches a running server only.
    if ((await server()).live.powerState !== 'running') {
      await page.getByRole('button', { name: 'Start', exact: true }).click();
      await expect.poll(async () => (await server()).live.powerState, { timeout: 20_000 }).toBe('running');
    }
    await expect.poll(() => page.getByTestId('terminal').textContent(), { timeout: 20_000 }).toContain('Done (');
    await page.locator('#console-command').fill('say hello from the journey');
    await page.locator('#console-command').press('Enter');
    // The simulator echoes a command as Wings does: "> command" in the console.
    await expect.poll(() => page.getByTestId('terminal').textContent(), { timeout: 15_000 }).toContain('> say hello from the journey');
    await expect(page.locator('#console-command').inputValue()).resolves.toBe('');
  });

  it('files: opens a file, saves a change, and the change is there on re-opening (and in the API)', async () => {
    await tab('Files').click();
    await page.getByTestId('file-row').first().waitFor();
    const file = page.getByRole('button', { name: 'eula.txt', exact: true });
    await file.click();
    const editor = page.locator('#file-editor');
    await expect.poll(() => editor.inputValue()).toContain('eula=true');
    const edited = `${await editor.inputValue()}# edited in the dashboard journey\n`;
    await editor.fill(edited);
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await page.getByRole('status').filter({ hasText: /Saved/ }).waitFor();
    await page.getByRole('button', { name: 'Back to the folder' }).click();
    await file.click();
    await expect.poll(() => editor.inputValue()).toBe(edited);
    const read = await stack.must(
      'GET',
      `/v1/servers/${serverId}/files/contents?file=${encodeURIComponent('/eula.txt')}`,
      undefined,
      token,
    );
    expect(read.content).toBe(edited);
  });

  it('settings: resizes with the price difference shown; the API has the new size', async () => {
    await tab('Settings').click();
    await page.locator('#resize-ram').fill('2048');
    await page.locator('#resize-cpu').fill('100');
    await page.locator('#resize-disk').fill('4096');
    const difference = page.getByTestId('resize-difference');
    await expect.poll(() => difference.textContent(), { timeout: 20_000 }).toMatch(/^\+.*\$\d/);
    await page.getByRole('button', { name: 'Resize', exact: true }).click();
    const dialog = page.locator('#resize-dialog');
    await dialog.getByRole('button', { name: 'Apply new size' }).click();
    await expect.poll(async () => (await server()).resources, { timeout: 30_000 }).toEqual({ ramMb: 2048, cpuPercent: 100, diskMb: 4096 });
    await expect.poll(() => dialog.isVisible()).toBe(false);
  });

  it('settings: deletes the server once its name is typed, and lands on the servers list', async () => {
    await page.getByRole('button', { name: 'Delete this server…' }).click();
    const confirmButton = page.getByRole('button', { name: 'Delete server', exact: true });
    await expect(confirmButton.isDisabled()).resolves.toBe(true);
    await page.locator('#delete-confirm-name').fill(SERVER_NAME);
    await confirmButton.click();
    await page.waitForURL(`${app}/servers`, { timeout: 30_000 });
    await expect.poll(async () => (await server()).status, { timeout: 30_000 }).toBe('deleted');
    // The list keeps deleted servers (the API lists them too), marked as such.
    const row = page.getByTestId('server-row').filter({ hasText: SERVER_NAME });
    await expect.poll(() => row.textContent(), { timeout: 15_000 }).toMatch(/deleted/i);
  });

  it('signs out: the dashboard asks to sign in again', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('E-mail address').waitFor();
    expect(new URL(page.url()).pathname).toBe('/dev/oidc/authorize');
    await page.goto(`${app}/billing`);
    await page.getByLabel('E-mail address').waitFor();
    // Nothing logged an error on the way, the sandbox checkout page included.
    expect(problems.errors).toEqual([]);
  });

  it('an admin finds the customer, grants credit; the account page, the API and the audit log agree', async () => {
    const before = await balance();
    const admin = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    try {
      const adminPage = await admin.newPage();
      adminPage.setDefaultTimeout(20_000);
      const adminProblems = watchProblems(adminPage);
      await signInThroughForm(adminPage, stack.baseUrl, 'admin@localhost');
      const adminNav = (name: string) => adminPage.getByRole('navigation', { name: 'Main' }).getByRole('link', { name, exact: true });

      await adminNav('Accounts').click();
      await adminPage.getByTestId('account-row').first().waitFor();
      // The search runs in the API across every account: wait for its answer (the rows of this
      // search, marked with it), not a poll with expect.poll's 1 s default, which a loaded machine
      // outlasts (the search reads 8 listing shards; its module loads on first use).
      const prefix = EMAIL.slice(0, 12);
      await adminPage.getByLabel('Search accounts', { exact: true }).fill(prefix);
      await adminPage.getByRole('button', { name: 'Search', exact: true }).click();
      await adminPage.waitForURL(`${app}/admin/accounts?email=${encodeURIComponent(prefix)}`);
      const results = adminPage.locator(`[data-testid="account-results"][data-search="${prefix}"]`);
      await results.waitFor();
      await expect(results.getByTestId('account-row').count()).resolves.toBe(1);
      await results.getByTestId('account-row').getByRole('link', { name: EMAIL }).click();
      await adminPage.waitForURL(`${app}/admin/accounts/${accountId}`);
      const shown = adminPage.getByTestId('account-balance');
      await expect.poll(() => shown.textContent(), { timeout: 15_000 }).toBe(cents(before));

      await adminPage.locator('#grant-amount').fill((GRANT_CENTS / 100).toFixed(2));
      await adminPage.locator('#grant-note').fill('Dashboard journey goodwill');
      await adminPage.getByRole('button', { name: 'Grant credit' }).click();
      await adminPage.getByRole('dialog').getByRole('button', { name: 'Confirm' }).click();
      await expect.poll(() => shown.textContent(), { timeout: 15_000 }).toBe(cents(before + GRANT_CENTS));
      expect(await balance()).toBe(before + GRANT_CENTS);

      await adminNav('Audit log').click();
      const grant = adminPage.getByTestId('audit-row').filter({ hasText: 'credits.adjust' });
      await grant.first().waitFor();
      // The target is shown shortened, as `account:` and the id's first 8 characters.
      await expect(grant.first().textContent()).resolves.toContain(`account:${accountId.slice(0, 8)}`);
      await expect(grant.first().textContent()).resolves.toContain(`"amountCents": ${GRANT_CENTS}`);
      expect(adminProblems.errors).toEqual([]);
    } finally {
      await admin.close();
    }
  });
});
