import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type Browser, type Page } from 'playwright-core';
import { DEFAULT_APP_KEY } from '../../dev/panel-sim/index.ts';
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
  type PageProblems,
} from '../helpers/dashboard.ts';

/**
 * The server page's Network tab in headless Chromium, on the simulator: the operator raises the
 * server's port limit on the panel (Application API build change, as the add-ons part will), the
 * player adds a second port and sees it in the tab's list and in the page's address line, notes it,
 * makes it primary and removes the old one; axe finds nothing serious or critical on the tab.
 */
if (!browserPath) console.warn(`tests/browser/server-network.test.ts SKIPPED: ${NO_BROWSER_REASON}`);

let stack: DashboardStack;
let browser: Browser;
let customer: Customer;
let page: Page;
let problems: PageProblems;

async function raiseLimit(allocations: number): Promise<void> {
  const sim = stack.panel!.sim;
  const server = await stack.must('GET', `/v1/servers/${customer.serverId}`, undefined, customer.token);
  const s = sim.state.serverByIdentifier(server.identifier)!;
  const res = await fetch(`${sim.url}/api/application/servers/${s.id}/build`, {
    method: 'PATCH',
    headers: { authorization: `Bearer ${DEFAULT_APP_KEY}`, accept: 'application/json', 'content-type': 'application/json' },
    body: JSON.stringify({
      allocation: s.allocation_id,
      limits: { memory: s.memory, swap: s.swap, disk: s.disk, io: s.io, cpu: s.cpu },
      feature_limits: { databases: s.database_limit, backups: s.backup_limit, allocations },
    }),
  });
  expect(res.status, await res.text()).toBe(200);
}

const addresses = () => page.getByTestId('port-address').allTextContents();
const headerAddresses = async () => (await page.getByTestId('server-addresses').locator('code').allTextContents()).map((t) => t.trim());

beforeAll(async () => {
  if (!browserPath) return;
  [stack, browser] = await Promise.all([startDashboardStack(), chromium.launch({ executablePath: browserPath, args: CHROMIUM_ARGS })]);
  customer = await customerWithServer(stack, 'network.player@example.com', { creditCents: 5000, serverName: 'Network server' });
}, 240_000);
afterAll(async () => {
  await page?.context().close();
  await browser?.close();
  await stack?.stop();
});

describe.skipIf(!browserPath)('the Network tab', () => {
  it('lists the primary address; Add port is off at the limit of 1; axe finds nothing serious', async () => {
    ({ page, problems } = await signedInPage(browser, stack, customer.email, `/servers/${customer.serverId}?tab=network`));
    await page.getByRole('heading', { name: 'Network', exact: true }).waitFor();
    await settled(page);
    expect(await addresses()).toHaveLength(1);
    expect(await page.getByTestId('port-limit').textContent()).toContain('1 of 1 port in use');
    expect(await page.getByRole('button', { name: 'Add port' }).isDisabled()).toBe(true);
    const { blocking } = await runAxe(page);
    expect(describeViolations(blocking)).toBe('');
  });

  it('with the limit raised, a second port is added and appears in the address list and the page header', async () => {
    await raiseLimit(2);
    await page.reload();
    await page.getByRole('heading', { name: 'Network', exact: true }).waitFor();
    await settled(page);
    const [primary] = await addresses();
    await page.getByRole('button', { name: 'Add port' }).click();
    await page.getByText(/Port .* added/).waitFor();
    await page.getByTestId('port-address').nth(1).waitFor();
    await settled(page);
    const listed = await addresses();
    expect(listed).toHaveLength(2);
    expect(listed[0]).toBe(primary);
    await page.getByTestId('server-addresses').getByText(listed[1]!).waitFor();
    expect(await headerAddresses()).toEqual(listed);
    expect(await page.getByTestId('port-limit').textContent()).toContain('2 of 2 ports in use');
    const { blocking } = await runAxe(page);
    expect(describeViolations(blocking)).toBe('');
  });

  it('a note is saved, the new port made primary, the old one removed', async () => {
    const [oldPrimary, added] = await addresses();
    await page.getByRole('button', { name: `Edit the note of ${added}` }).click();
    await page.getByLabel('Note (empty clears it)').fill('voice');
    const { blocking } = await runAxe(page);
    expect(describeViolations(blocking), 'the note dialog').toBe('');
    await page.getByRole('button', { name: 'Save note' }).click();
    await page.getByRole('cell', { name: 'voice' }).waitFor();

    await page.getByRole('button', { name: `Make primary: ${added}` }).click();
    await page.getByText(`${added} is now the primary address`).waitFor();
    await settled(page);
    expect(await addresses()).toEqual([added, oldPrimary]);

    await page.getByRole('button', { name: `Remove ${oldPrimary}` }).click();
    await page.getByRole('button', { name: 'Remove port' }).click();
    await page.getByText(`Port ${oldPrimary} removed.`).waitFor();
    await settled(page);
    expect(await addresses()).toEqual([added]);
    expect(await headerAddresses()).toEqual([added]);
    expect(problems.errors).toEqual([]);
  });
});
