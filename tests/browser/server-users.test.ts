import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type Browser, type Page } from 'playwright-core';
import {
  browserPath,
  CHROMIUM_ARGS,
  customerWithServer,
  describeViolations,
  NO_BROWSER_REASON,
  runAxe,
  settled,
  signedInPage,
  startDashboardStack,
  type Customer,
  type DashboardStack,
} from '../helpers/dashboard.ts';

/**
 * Shared access in the dashboard, in headless Chromium with two accounts signed in side by side
 * (one browser context each, signedInPage): the owner invites a friend from the server's Users tab;
 * the friend sees the server marked shared in its list, opens its console and sends a command, is
 * offered no way to delete it and is refused when it tries through the API; the owner removes the
 * friend and the friend's next read is refused. axe finds nothing serious on any of these views.
 */
if (!browserPath) console.warn(`tests/browser/server-users.test.ts SKIPPED: ${NO_BROWSER_REASON}`);

const FRIEND = 'users.friend@example.com';

let stack: DashboardStack;
let browser: Browser;
let owner: Customer;
let ownerPage: Page;
let friendPage: Page;

async function axeClean(page: Page, what: string) {
  await settled(page);
  const { blocking } = await runAxe(page);
  expect(describeViolations(blocking), `serious or critical axe violations on ${what}`).toBe('');
}

const tabs = (page: Page) => page.getByRole('navigation', { name: 'Server sections' }).getByRole('link');

beforeAll(async () => {
  if (!browserPath) return;
  [stack, browser] = await Promise.all([startDashboardStack(), chromium.launch({ executablePath: browserPath, args: CHROMIUM_ARGS })]);
  owner = await customerWithServer(stack, 'users.owner@example.com', { serverName: 'Shared server', running: true });
}, 240_000);
afterAll(async () => {
  await browser?.close();
  await stack?.stop();
});

describe.skipIf(!browserPath)('a server shared from the Users tab', () => {
  it('the owner invites a friend by e-mail with the console permission', async () => {
    ({ page: ownerPage } = await signedInPage(browser, stack, owner.email, `/servers/${owner.serverId}?tab=users`));
    await ownerPage.getByRole('heading', { name: 'Users' }).waitFor({ timeout: 15_000 });
    await expect(ownerPage.getByTestId('users-empty').textContent()).resolves.toContain('Only you');
    await axeClean(ownerPage, 'the Users tab');
    await ownerPage.getByLabel('E-mail address').fill(FRIEND);
    expect(await ownerPage.getByLabel('Console (also power)').isChecked()).toBe(true);
    await ownerPage.getByRole('button', { name: 'Invite' }).click();
    const row = ownerPage.locator(`[data-testid="user-row"][data-email="${FRIEND}"]`);
    await row.waitFor({ timeout: 15_000 });
    await expect(row.textContent()).resolves.toContain('console, power');
    await axeClean(ownerPage, 'the Users tab with a user');
  });

  it('the friend sees the server marked shared and opens its console', async () => {
    ({ page: friendPage } = await signedInPage(browser, stack, FRIEND, '/servers'));
    const row = friendPage.locator(`[data-testid="server-row"][data-server-id="${owner.serverId}"]`);
    await row.waitFor({ timeout: 15_000 });
    await expect(row.textContent()).resolves.toContain(`Shared by ${owner.email}`);
    await axeClean(friendPage, 'the shared server in the list');

    await row.getByRole('link', { name: 'Shared server' }).click();
    await friendPage.getByTestId('shared-notice').waitFor({ timeout: 15_000 });
    // What the share reaches (Console) and what every invitee sees (Network, Activity): no Files, Backups, Users…
    expect(await tabs(friendPage).allTextContents()).toEqual(['Overview', 'Console', 'Network', 'Activity']);
    await tabs(friendPage).filter({ hasText: 'Console' }).click();
    await expect.poll(() => friendPage.getByTestId('console-state').textContent(), { timeout: 20_000 }).toBe('connected');
    await expect.poll(() => friendPage.getByTestId('terminal').textContent(), { timeout: 20_000 }).toContain('Done (');
    await friendPage.locator('#console-command').fill('say hello from a friend');
    await friendPage.locator('#console-command').press('Enter');
    await expect.poll(() => friendPage.getByTestId('terminal').textContent(), { timeout: 15_000 }).toContain('> say hello from a friend');
    await axeClean(friendPage, 'the console of a shared server');
  });

  it('the friend is refused its deletion: no control offered, and the API says 403', async () => {
    await friendPage.goto(`${stack.baseUrl}/app/servers/${owner.serverId}?tab=settings`);
    await friendPage.getByTestId('shared-notice').waitFor({ timeout: 15_000 });
    await settled(friendPage);
    expect(await friendPage.getByRole('button', { name: /Delete this server/ }).count()).toBe(0);
    const friendToken = await stack.session(FRIEND);
    const refused = await stack.call('DELETE', `/v1/servers/${owner.serverId}`, undefined, friendToken);
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe('forbidden');
    expect((await stack.must('GET', `/v1/servers/${owner.serverId}`, undefined, owner.token)).status).toBe('active');
  });

  it('the owner removes the friend, who is refused at once', async () => {
    await ownerPage.getByRole('button', { name: `Remove ${FRIEND}` }).click();
    await ownerPage.getByRole('button', { name: 'Remove access' }).click();
    await ownerPage.getByTestId('users-empty').waitFor({ timeout: 15_000 });
    const friendToken = await stack.session(FRIEND);
    expect((await stack.call('GET', `/v1/servers/${owner.serverId}`, undefined, friendToken)).status).toBe(404);
    await friendPage.reload();
    await friendPage.getByRole('alert').first().waitFor({ timeout: 15_000 });
  });
});
