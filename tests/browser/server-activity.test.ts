import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type Browser } from 'playwright-core';
import { logActivity } from '../../dev/panel-sim/activity.ts';
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
 * The server page's Activity tab in headless Chromium: our calls (who, which credential) and the
 * panel's events (an SFTP write, written into the simulator's log with its own recorder as Wings'
 * SFTP server would log it) newest first, the next page on demand, and axe finds nothing serious.
 * Skipped, saying why, without Chromium.
 */
if (!browserPath) console.warn(`tests/browser/server-activity.test.ts SKIPPED: ${NO_BROWSER_REASON}`);

let stack: DashboardStack;
let browser: Browser;
let customer: Customer;

beforeAll(async () => {
  if (!browserPath) return;
  [stack, browser] = await Promise.all([startDashboardStack(), chromium.launch({ executablePath: browserPath, args: CHROMIUM_ARGS })]);
  customer = await customerWithServer(stack, 'activity.player@example.com', { serverName: 'Activity server', running: true });
  const sim = stack.panel!.sim;
  const server = await stack.must('GET', `/v1/servers/${customer.serverId}`, undefined, customer.token);
  const simServer = sim.state.serverByIdentifier(server.identifier)!;
  const owner = sim.state.users.get(simServer.owner_id)!;
  await stack.must('POST', `/v1/servers/${customer.serverId}/files/write`, { file: 'notes.txt', content: 'x' }, customer.token);
  // More than a page of 25: SFTP writes (cheap: no panel call), the older entries come with the button.
  // The panel stamps to the second: start them in the next second, so that no entry of ours (to the
  // millisecond) shares their second and sorts among them however slow the set-up above was.
  await new Promise((resolve) => setTimeout(resolve, 1_000 - (Date.now() % 1_000) + 5));
  for (let k = 0; k < 30; k++) {
    logActivity(
      sim.state,
      simServer,
      'server:sftp.write',
      { user: owner, apiKey: null, ip: null },
      { files: [`plugins/${k}.yml`], using_sftp: true },
    );
  }
}, 240_000);
afterAll(async () => {
  await browser?.close();
  await stack?.stop();
});

describe.skipIf(!browserPath)('the Activity tab', () => {
  it('lists who did what from which credential, newest first, pages on, and passes axe', async () => {
    const { page, context, problems } = await signedInPage(browser, stack, customer.email, `/servers/${customer.serverId}?tab=activity`);
    try {
      await page.getByRole('heading', { name: 'Activity', level: 2 }).waitFor({ timeout: 15_000 });
      await settled(page);
      const rows = page.getByTestId('activity-row');
      await rows.first().waitFor({ timeout: 15_000 });
      expect(await rows.count()).toBe(25);
      // Newest first: the 30 SFTP writes came last, so the whole first page is the panel's.
      const sources = await rows.evaluateAll((els) => els.map((el) => el.getAttribute('data-source')));
      expect(sources.filter((x) => x === 'panel').length).toBe(25);
      expect(await page.getByTestId('activity-row').filter({ hasText: 'SFTP' }).count()).toBeGreaterThan(0);

      await page.getByRole('button', { name: 'Older activity' }).click();
      await expect.poll(() => page.getByTestId('activity-row').count(), { timeout: 15_000 }).toBeGreaterThan(25);
      await settled(page);
      const texts = await page.getByTestId('activity-row').allTextContents();
      expect(texts.some((t) => t.includes('servers.create'))).toBe(true);
      expect(texts.some((t) => t.includes('Sent the power signal start'))).toBe(true);
      const write = texts.find((t) => t.includes('servers.files.write'))!;
      expect(write).toContain(customer.email);
      expect(write).toContain('Dashboard session');

      const { blocking, warnings } = await runAxe(page);
      if (warnings.length) console.warn(`axe warnings on the Activity tab:\n${describeViolations(warnings)}`);
      expect(describeViolations(blocking)).toBe('');
      expect(problems.errors).toEqual([]);
    } finally {
      await context.close();
    }
  });
});
