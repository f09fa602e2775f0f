import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type Browser } from 'playwright-core';
import { runPassInProcess } from '../../shared/billing/pass.ts';
import { keys } from '../../shared/db/keys.ts';
import { HOUR_MS, hourStart } from '../../shared/pricing/hours.ts';
import { monthHours } from '../../shared/servers/cost.ts';
import { SAMPLE_BUCKET_MS } from '../../shared/servers/usage-history.ts';
import { installTestClock, type TestClock } from '../helpers/clock.ts';
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
import { getRaw, setAttributes } from '../helpers/db.ts';
import { ledgerOf } from '../helpers/money.ts';

/**
 * The server page's usage graphs and cost this month, and the overview's server cards, in headless
 * Chromium with axe. Refreshes are driven as the live-state tests drive them (the stored state made
 * older than its interval, then read); the next sample bucket is reached by moving the stack's
 * clock (shared/clock.ts), never by waiting. Skipped, saying why, without Chromium.
 */
if (!browserPath) console.warn(`tests/browser/server-usage.test.ts SKIPPED: ${NO_BROWSER_REASON}`);

let stack: DashboardStack;
let browser: Browser;
let customer: Customer;
let clock: TestClock;

/** One refresh in the next sample bucket: clock moved on, stored state aged, server read. */
async function refreshInNextBucket(): Promise<void> {
  const now = clock.now();
  clock.advance((Math.floor(now / SAMPLE_BUCKET_MS) + 1) * SAMPLE_BUCKET_MS + 60_000 - now);
  const live = await getRaw(keys.liveState(customer.serverId));
  if (live?.asOf)
    await setAttributes(keys.liveState(customer.serverId), { asOf: new Date(Date.parse(live.asOf as string) - HOUR_MS).toISOString() });
  await stack.must('GET', `/v1/servers/${customer.serverId}`, undefined, customer.token);
}

beforeAll(async () => {
  if (!browserPath) return;
  [stack, browser] = await Promise.all([startDashboardStack(), chromium.launch({ executablePath: browserPath, args: CHROMIUM_ARGS })]);
  clock = installTestClock();
  customer = await customerWithServer(stack, 'usage.player@example.com', { serverName: 'Graph server', running: true });
}, 240_000);
afterAll(async () => {
  clock?.release();
  await browser?.close();
  await stack?.stop();
});

describe.skipIf(!browserPath)('usage history and cost', () => {
  it('fills the graphs after a few refreshes, shows the cost after a billing pass, and passes axe', async () => {
    for (let k = 0; k < 3; k++) await refreshInNextBucket();
    const { page, context, problems } = await signedInPage(browser, stack, customer.email, `/servers/${customer.serverId}?tab=overview`);
    try {
      await page.getByRole('heading', { name: 'Usage history', level: 2 }).waitFor({ timeout: 15_000 });
      await settled(page);
      const cpu = page.getByTestId('graph-cpu');
      await cpu.waitFor({ timeout: 15_000 });
      expect(await cpu.getByRole('img').getAttribute('aria-labelledby')).toBeTruthy();
      expect(await cpu.locator('.graph-summary').textContent()).toMatch(/CPU over the last hour: [3-9] points/);
      // The table alternative, by keyboard.
      await cpu.getByRole('button', { name: 'Show the numbers' }).focus();
      await page.keyboard.press('Enter');
      expect(await cpu.locator('tbody tr').count()).toBeGreaterThanOrEqual(3);
      const { blocking, warnings } = await runAxe(page);
      if (warnings.length) console.warn(`axe warnings:\n${describeViolations(warnings)}`);
      expect(describeViolations(blocking)).toBe('');

      // Cost: the server's life moved three hours back (as billing.test.ts does), one pass, the page read again.
      const stored = await getRaw(keys.server(customer.accountId, customer.serverId));
      const now = clock.now();
      const createdAt = new Date(Math.max(monthHours(now).first, hourStart(now) - 3 * HOUR_MS)).toISOString();
      await setAttributes(keys.server(customer.accountId, customer.serverId), {
        createdAt,
        history: [{ ...(stored!.history as Record<string, unknown>[])[0], at: createdAt }],
      });
      await runPassInProcess(new Date(now));
      const month = new Date(now).toISOString().slice(0, 7);
      const charged = (await ledgerOf(customer.accountId))
        .filter((e) => e.type === 'charge' && String((e.reference as { hour: string }).hour).startsWith(month))
        .flatMap((e) => (e.reference as { lines: { serverId: string; millicents: number }[] }).lines)
        .filter((l) => l.serverId === customer.serverId)
        .reduce((sum, l) => sum + l.millicents, 0);
      expect(charged).toBeGreaterThan(0);
      await page.reload();
      const soFar = page.getByTestId('cost-so-far');
      await soFar.waitFor({ timeout: 15_000 });
      const shown = Number((await soFar.textContent())!.replace(/[^0-9]/g, ''));
      expect(shown).toBe(Math.floor(charged / 1000));
      expect(problems.errors).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it('shows servers on the overview as cards with state, address and usage, and passes axe', async () => {
    const { page, context, problems } = await signedInPage(browser, stack, customer.email, '/');
    try {
      const cards = page.getByTestId('server-cards');
      await cards.waitFor({ timeout: 15_000 });
      await settled(page);
      const card = cards.locator('li').filter({ hasText: 'Graph server' });
      expect(await card.locator('code').textContent()).toMatch(/:\d+$/);
      await card.getByTestId('server-card-usage').waitFor({ timeout: 15_000 });
      const { blocking, warnings } = await runAxe(page);
      if (warnings.length) console.warn(`axe warnings:\n${describeViolations(warnings)}`);
      expect(describeViolations(blocking)).toBe('');
      expect(problems.errors).toEqual([]);
    } finally {
      await context.close();
    }
  });
});
