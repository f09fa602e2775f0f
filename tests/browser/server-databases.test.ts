import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type Browser } from 'playwright-core';
import { databasesOf } from '../../dev/panel-sim/databases.ts';
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
 * The server page's Databases tab (web/src/pages/server/databases.tsx) in headless Chromium against
 * the local stack and its panel simulator: a database is created from the dialog, its password is
 * shown once (the panel's password, with a copy button) and is gone after a reload, while the list
 * keeps the database with its host and port; axe finds nothing serious on the tab, the dialog or the
 * password notice. The server's database limit is raised in the panel as an operator would (the
 * Application API's build PATCH). Skipped, saying why, when no Chromium is installed.
 */
if (!browserPath) console.warn(`tests/browser/server-databases.test.ts SKIPPED: ${NO_BROWSER_REASON}`);

let stack: DashboardStack;
let browser: Browser;
let customer: Customer;

beforeAll(async () => {
  if (!browserPath) return;
  [stack, browser] = await Promise.all([startDashboardStack(), chromium.launch({ executablePath: browserPath, args: CHROMIUM_ARGS })]);
  customer = await customerWithServer(stack, 'databases.player@example.com', { creditCents: 5000, serverName: 'DB server' });
  const sim = stack.panel!.sim;
  const identifier = (await stack.must('GET', `/v1/servers/${customer.serverId}`, undefined, customer.token)).identifier as string;
  const s = sim.state.serverByIdentifier(identifier)!;
  const res = await fetch(`${sim.url}/api/application/servers/${s.id}/build`, {
    method: 'PATCH',
    headers: { authorization: `Bearer ${sim.appKey}`, accept: 'application/json', 'content-type': 'application/json' },
    body: JSON.stringify({
      allocation: s.allocation_id,
      memory: s.memory,
      swap: s.swap,
      disk: s.disk,
      io: s.io,
      cpu: s.cpu,
      threads: s.threads,
      feature_limits: { databases: 2, allocations: s.allocation_limit, backups: s.backup_limit },
    }),
  });
  if (res.status !== 200) throw new Error(`build PATCH: ${res.status} ${await res.text()}`);
}, 240_000);
afterAll(async () => {
  await browser?.close();
  await stack?.stop();
});

describe.skipIf(!browserPath)('the Databases tab', () => {
  it('a database is created and its password shown once (gone after a reload)', async () => {
    const { page, context, problems } = await signedInPage(browser, stack, customer.email, `/servers/${customer.serverId}?tab=databases`);
    try {
      await page.getByRole('heading', { name: 'Databases', level: 2 }).waitFor();
      await settled(page);
      expect(await page.getByText('No databases yet.').count()).toBe(1);
      let axe = await runAxe(page);
      expect(describeViolations(axe.blocking), 'axe on the empty tab').toBe('');

      await page.getByRole('button', { name: 'New database' }).click();
      const dialog = page.getByRole('dialog', { name: 'New database' });
      await dialog.getByLabel('Name').fill('plugins');
      axe = await runAxe(page);
      expect(describeViolations(axe.blocking), 'axe on the create dialog').toBe('');
      await dialog.getByRole('button', { name: 'Create database' }).click();

      const shown = page.getByTestId('database-password');
      await shown.waitFor();
      const password = (await shown.textContent()) ?? '';
      // The panel's own password, as it holds it now.
      const [stored] = databasesOf(stack.panel!.sim.state).all;
      expect(password).toBe(stored!.password);
      expect(await page.getByRole('button', { name: 'Copy' }).count()).toBe(1);
      await expect.poll(() => page.getByTestId('database-row').count()).toBe(1);
      expect(await page.getByTestId('database-address').textContent()).toBe('10.10.1.10:3306');
      axe = await runAxe(page);
      expect(describeViolations(axe.blocking), 'axe with the password shown').toBe('');

      await page.reload();
      await page.getByRole('heading', { name: 'Databases', level: 2 }).waitFor();
      await settled(page);
      await expect.poll(() => page.getByTestId('database-row').count()).toBe(1);
      expect(await page.getByTestId('database-password').count()).toBe(0);
      expect(await page.content()).not.toContain(password);
      expect(problems.errors).toEqual([]);
    } finally {
      await context.close();
    }
  });
});
