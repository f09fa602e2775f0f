import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { cents } from '../../web/src/format.ts';
import {
  browserPath,
  CHROMIUM_ARGS,
  customerWithServer,
  NO_BROWSER_REASON,
  signedInContext,
  startDashboardStack,
  until,
  watchProblems,
  type Customer,
  type DashboardStack,
  type PageProblems,
} from '../helpers/dashboard.ts';

/**
 * The admin pages on the admin routes, in headless Chromium against the local stack (DynamoDB
 * Local, the panel simulator over HTTP): the accounts search runs in the API (by e-mail prefix, by
 * account id) and stays in the address; the account page shows what GET /v1/admin/users/:id says
 * and saves limit overrides, with the API's field errors; a server is suspended and unsuspended
 * from the account page, reinstalled and force-deleted from the all-servers page, each checked in
 * the API; an action the API refuses shows its message and changes nothing. Each step checks the
 * page and the API. Skipped, saying why, when no Chromium is installed.
 */
if (!browserPath) console.warn(`tests/browser/admin-pages.test.ts SKIPPED: ${NO_BROWSER_REASON}`);

const ADMIN = 'admin@localhost';
const ADA = 'ada.adminpages@example.com';
const BOB = 'bob.adminpages@example.com';

let stack: DashboardStack;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let problems: PageProblems;
let app: string;
let ada: Customer;
/** Ada's second server (customerWithServer made the first). */
let adaTwo: Customer;
let bobId: string;
/** The admin routes' requests the page sent (path and query). */
const sent: string[] = [];

const apiServer = (id: string) => stack.must('GET', `/v1/servers/${id}`, undefined, ada.token);
const row = (name: string) => page.getByTestId('admin-server-row').filter({ hasText: name });
const dialog = () => page.locator('#server-action-dialog');

beforeAll(async () => {
  if (!browserPath) return;
  // The install watch runs (often): a server whose deploy is still watched refuses a reinstall.
  const repairs = { intervalMs: 200, installCheckIntervalMs: 100 };
  [stack, browser] = await Promise.all([
    startDashboardStack({ repairs }),
    chromium.launch({ executablePath: browserPath, args: CHROMIUM_ARGS }),
  ]);
  app = `${stack.baseUrl}/app`;
  ada = await customerWithServer(stack, ADA, { serverName: 'Ada one' });
  adaTwo = await customerWithServer(stack, ADA, { serverName: 'Ada two', creditCents: 0 });
  await stack.must('POST', '/v1/keys', { name: 'Ada key' }, ada.token);
  bobId = (await stack.must('GET', '/v1/account', undefined, await stack.session(BOB))).id;
  context = await signedInContext(browser, stack, ADMIN);
  page = await context.newPage();
  page.setDefaultTimeout(20_000);
  problems = watchProblems(page);
  page.on('request', (req) => {
    const url = new URL(req.url());
    if (url.pathname.startsWith('/v1/admin/')) sent.push(`${req.method()} ${url.pathname}${url.search}`);
  });
}, 240_000);
afterAll(async () => {
  await context?.close();
  await browser?.close();
  await stack?.stop();
});

describe.skipIf(!browserPath)('the admin pages on the admin routes', () => {
  it('accounts: searches by e-mail prefix in the API, keeps the search in the address, and by account id', async () => {
    await page.goto(`${app}/admin/accounts`);
    await page.locator('[data-testid="account-results"][data-search=""]').waitFor();
    const field = page.getByLabel('Search accounts', { exact: true });

    await field.fill('ada.admin');
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    await page.waitForURL(`${app}/admin/accounts?email=ada.admin`);
    const ofAda = page.locator('[data-testid="account-results"][data-search="ada.admin"]');
    await ofAda.waitFor();
    expect(await ofAda.getByTestId('account-row').allTextContents()).toEqual([expect.stringContaining(ADA)]);
    // The API searched (not a filter over the page already shown).
    expect(sent).toContain('GET /v1/admin/users?limit=50&email=ada.admin');

    // The address is the search: opened afresh it shows the same, the field filled in.
    await page.reload();
    await ofAda.waitFor();
    await expect(field.inputValue()).resolves.toBe('ada.admin');
    await expect(ofAda.getByTestId('account-row').count()).resolves.toBe(1);

    // An account id is looked up as one.
    await field.fill(bobId);
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    await page.waitForURL(`${app}/admin/accounts?accountId=${bobId}`);
    const ofBob = page.locator(`[data-testid="account-results"][data-search="${bobId}"]`);
    await ofBob.waitFor();
    expect(await ofBob.getByTestId('account-row').allTextContents()).toEqual([expect.stringContaining(BOB)]);
    expect(sent).toContain(`GET /v1/admin/users?limit=50&accountId=${bobId}`);

    // Back: the e-mail search again, in the field too.
    await page.goBack();
    await ofAda.waitFor();
    await expect(field.inputValue()).resolves.toBe('ada.admin');
    expect(problems.errors).toEqual([]);
  });

  it('accounts: a search the API refuses shows its message and no rows', async () => {
    await page.getByLabel('Search accounts', { exact: true }).fill('ada admin');
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    const alert = page.getByRole('alert');
    await alert.waitFor();
    await expect(alert.textContent()).resolves.toMatch(/Error 400.*must be the start of an e-mail address/);
    await expect(page.getByTestId('account-row').count()).resolves.toBe(0);
    // The browser logs the 400 as a failed resource; nothing else went wrong.
    expect(problems.errors.filter((e) => !/status of 400/.test(e))).toEqual([]);
    problems.errors.length = 0;
  });

  it('account: balance, servers and keys from the account view; limit overrides saved, or refused by field', async () => {
    await page.goto(`${app}/admin/accounts/${ada.accountId}`);
    await page.getByTestId('account-balance').waitFor();
    expect(sent).toContain(`GET /v1/admin/users/${ada.accountId}`);
    const view = await stack.must('GET', `/v1/admin/users/${ada.accountId}`);
    await expect(page.locator('h1#page-title').textContent()).resolves.toBe(ADA);
    await expect(page.getByTestId('account-balance').textContent()).resolves.toBe(cents(view.account.balanceCents));
    await expect(page.getByTestId('account-keys').textContent()).resolves.toBe(`1 held of ${view.limits.effective.maxApiKeys} allowed`);
    await expect(page.getByTestId('account-servers').textContent()).resolves.toBe(
      `2 active or suspended of ${view.limits.effective.maxServers} allowed`,
    );
    await expect(row('Ada one').count()).resolves.toBe(1);
    await expect(row('Ada two').count()).resolves.toBe(1);

    // Past the API's bound: its message under the field, nothing saved.
    const servers = page.getByLabel('Server limit override');
    await servers.fill('20000');
    await page.getByRole('button', { name: 'Save limits' }).click();
    await page.locator('#limits-max-servers-hint .field-error').waitFor();
    await expect(servers.getAttribute('aria-invalid')).resolves.toBe('true');
    expect((await stack.must('GET', `/v1/admin/users/${ada.accountId}/limits`)).overrides).toEqual({
      maxApiKeys: null,
      requestsPerMinute: null,
      maxServers: null,
    });
    problems.errors.length = 0; // the 400, logged by the browser as a failed resource

    // Not a number (the field then reads as empty): said under it, and nothing sent (empty would remove the override).
    const puts = sent.filter((r) => r.startsWith('PUT ')).length;
    await servers.fill('');
    await servers.pressSequentially('1e');
    await page.getByRole('button', { name: 'Save limits' }).click();
    await page.locator('#limits-max-servers-hint .field-error', { hasText: 'Not a number' }).waitFor();
    expect(sent.filter((r) => r.startsWith('PUT ')).length).toBe(puts);

    await servers.fill('5');
    await page.getByLabel('Requests a minute override').fill('600');
    await page.getByRole('button', { name: 'Save limits' }).click();
    await page.getByRole('status').filter({ hasText: 'Limits saved' }).waitFor();
    await expect
      .poll(() => page.getByTestId('account-servers').textContent(), { timeout: 15_000 })
      .toBe('2 active or suspended of 5 allowed');
    expect((await stack.must('GET', `/v1/admin/users/${ada.accountId}/limits`)).overrides).toEqual({
      maxApiKeys: null,
      requestsPerMinute: 600,
      maxServers: 5,
    });
    await expect(servers.inputValue()).resolves.toBe('5');
    expect(problems.errors).toEqual([]);
  });

  it('account: suspends a server (reason admin), the API agrees; unsuspends it', async () => {
    await row('Ada one').getByRole('button', { name: 'Suspend Ada one' }).click();
    await dialog().getByRole('button', { name: 'Suspend server' }).click();
    await page.locator('[data-testid="admin-server-row"][data-status="suspended"]', { hasText: 'Ada one' }).waitFor();
    await expect(row('Ada one').textContent()).resolves.toContain('(admin)');
    expect(await apiServer(ada.serverId)).toMatchObject({ status: 'suspended', suspendedReason: 'admin' });
    await expect.poll(() => dialog().isVisible()).toBe(false);

    await row('Ada one').getByRole('button', { name: 'Unsuspend Ada one' }).click();
    await dialog().getByRole('button', { name: 'Unsuspend server' }).click();
    await page.locator('[data-testid="admin-server-row"][data-status="active"]', { hasText: 'Ada one' }).waitFor();
    expect(await apiServer(ada.serverId)).toMatchObject({ status: 'active', suspendedReason: null });
    expect(problems.errors).toEqual([]);
  });

  it('all servers: an action the API refuses shows its message in the dialog and changes nothing', async () => {
    await page.goto(`${app}/admin/servers?accountId=${ada.accountId}`);
    await row('Ada two').waitFor();
    // Deleted by its owner behind the page's back: the row still says active.
    await stack.must('DELETE', `/v1/servers/${adaTwo.serverId}`, undefined, ada.token);
    await until(
      () => apiServer(adaTwo.serverId),
      (s) => s.status === 'deleted',
      20_000,
      'the owner’s delete',
    );
    await row('Ada two').getByRole('button', { name: 'Suspend Ada two' }).click();
    await dialog().getByRole('button', { name: 'Suspend server' }).click();
    const refused = dialog().getByRole('alert');
    await refused.waitFor();
    await expect(refused.textContent()).resolves.toMatch(/Error 409.*The server is deleted/);
    expect(await apiServer(adaTwo.serverId)).toMatchObject({ status: 'deleted' });
    await dialog().getByRole('button', { name: 'Cancel' }).click();
    await expect.poll(() => dialog().isVisible()).toBe(false);
    expect(problems.errors.filter((e) => !/status of 409/.test(e))).toEqual([]);
    problems.errors.length = 0;
  });

  it('all servers: reinstalls a server, then force-deletes it; the API agrees', async () => {
    // A reinstall is refused (409) until the install watch has ended the deploy's watch (its event).
    const installed = () => stack.must('GET', '/v1/events?type=server.installed&limit=50', undefined, ada.token);
    await until(installed, (events) => JSON.stringify(events.data).includes(ada.serverId), 20_000, 'server.installed');
    await page.reload();
    await row('Ada one').waitFor();
    await row('Ada one').getByRole('button', { name: 'Reinstall Ada one' }).click();
    await dialog().getByRole('button', { name: 'Reinstall server' }).click();
    await page.getByRole('status').filter({ hasText: 'Ada one: reinstalling.' }).waitFor();
    const logs = await stack.must('GET', '/v1/admin/logs?limit=20');
    expect(logs.data.find((e: { action: string }) => e.action === 'servers.admin_reinstall')).toMatchObject({
      target: `server:${ada.serverId}`,
      result: 'success',
    });
    await until(
      () => apiServer(ada.serverId),
      (s) => s.live?.installStatus === 'installed',
      20_000,
      'the reinstall',
    );

    await row('Ada one').getByRole('button', { name: 'Delete Ada one' }).click();
    await dialog().getByRole('button', { name: 'Delete server' }).click();
    await page.locator('[data-testid="admin-server-row"][data-status="deleted"]', { hasText: 'Ada one' }).waitFor();
    expect(await apiServer(ada.serverId)).toMatchObject({ status: 'deleted' });
    // A deleted server has no actions left.
    await expect(row('Ada one').getByRole('button').count()).resolves.toBe(0);
    expect(problems.errors).toEqual([]);
  });
});
