import { promises as dns } from 'node:dns';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type Browser } from 'playwright-core';
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
 * A server's subdomain on the dashboard, in headless Chromium against the local stack with its DNS
 * server (dev/local-dns.ts): the owner sets a name on the Settings tab, the Connect card shows it,
 * and the name resolves through the local DNS server, with Node's resolver, to the server's address
 * (A) and port (SRV, a Minecraft egg). axe on both tabs. Skipped, saying why, without Chromium.
 */
if (!browserPath) console.warn(`tests/browser/server-subdomain.test.ts SKIPPED: ${NO_BROWSER_REASON}`);

const ZONE = 'play.test';
let stack: DashboardStack;
let browser: Browser;
let customer: Customer;

beforeAll(async () => {
  if (!browserPath) return;
  [stack, browser] = await Promise.all([
    startDashboardStack({ dns: { zone: ZONE } }),
    chromium.launch({ executablePath: browserPath, args: CHROMIUM_ARGS }),
  ]);
  customer = await customerWithServer(stack, 'subdomain.player@example.com', { serverName: 'Named server' });
}, 240_000);
afterAll(async () => {
  await browser?.close();
  await stack?.stop();
});

describe.skipIf(!browserPath)('a subdomain on the dashboard', () => {
  it('set on the Settings tab, shown in Connect, resolves through the local DNS server to the address and port', async () => {
    const { page, context, problems } = await signedInPage(browser, stack, customer.email, `/servers/${customer.serverId}?tab=settings`);
    try {
      await settled(page);
      const field = page.getByRole('textbox', { name: 'Subdomain' });
      await field.fill('Survival');
      await page.getByRole('button', { name: 'Set', exact: true }).click();
      await expect.poll(() => page.locator('.notice').filter({ hasText: 'Players can now connect to' }).count()).toBe(1);
      expect(await page.locator('.notice').filter({ hasText: 'Players can now connect to' }).textContent()).toContain(`survival.${ZONE}`);
      const settingsAxe = await runAxe(page);
      expect(settingsAxe.blocking, describeViolations(settingsAxe.blocking)).toEqual([]);

      await page.goto(`${stack.baseUrl}/app/servers/${customer.serverId}?tab=overview`);
      await settled(page);
      // A Minecraft egg: its client reads the SRV record, so the name alone is what players type.
      await expect.poll(() => page.getByTestId('server-subdomain').textContent()).toBe(`survival.${ZONE}`);
      const overviewAxe = await runAxe(page);
      expect(overviewAxe.blocking, describeViolations(overviewAxe.blocking)).toEqual([]);
      expect(problems.errors).toEqual([]);

      const server = await stack.must('GET', `/v1/servers/${customer.serverId}`, undefined, customer.token);
      const resolver = new dns.Resolver({ timeout: 2000, tries: 1 });
      resolver.setServers([`127.0.0.1:${stack.dns!.port}`]);
      expect(await resolver.resolve4(`survival.${ZONE}`)).toEqual([server.address.ip]);
      expect(await resolver.resolveSrv(`_minecraft._tcp.survival.${ZONE}`)).toEqual([
        expect.objectContaining({ name: `survival.${ZONE}`, port: server.address.port }),
      ]);
    } finally {
      await context.close();
    }
  });

  it('removed on the Settings tab: the name no longer resolves', async () => {
    const { page, context, problems } = await signedInPage(browser, stack, customer.email, `/servers/${customer.serverId}?tab=settings`);
    try {
      await settled(page);
      await page.getByRole('button', { name: 'Remove', exact: true }).click();
      await expect.poll(() => page.locator('.notice').filter({ hasText: 'The subdomain was removed.' }).count()).toBe(1);
      expect(problems.errors).toEqual([]);
      const resolver = new dns.Resolver({ timeout: 2000, tries: 1 });
      resolver.setServers([`127.0.0.1:${stack.dns!.port}`]);
      await expect(resolver.resolve4(`survival.${ZONE}`)).rejects.toMatchObject({ code: 'ENOTFOUND' });
    } finally {
      await context.close();
    }
  });
});
