import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
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
 * The Schedules tab of a server (web/src/pages/server/schedules.tsx) in headless Chromium against
 * the local stack and the panel simulator: axe finds nothing serious on it, empty and with a
 * schedule; a schedule made from its form (a preset, a console command) runs on the simulator at
 * its minute — the simulator's control makes that minute come, as the panel's cron would — and the
 * command appears in the server page's console; run now and delete work from the list.
 * Skipped, saying why, without Chromium.
 */
if (!browserPath) console.warn(`tests/browser/server-schedules.test.ts SKIPPED: ${NO_BROWSER_REASON}`);

let stack: DashboardStack;
let browser: Browser;
let customer: Customer;
let context: BrowserContext;
let page: Page;
let problems: PageProblems;

const tab = (name: string) => page.getByRole('navigation', { name: 'Server sections' }).getByRole('link', { name, exact: true });
const schedules = () => stack.must('GET', `/v1/servers/${customer.serverId}/schedules`, undefined, customer.token);
async function expectNoAxeViolations(where: string) {
  const { blocking } = await runAxe(page);
  expect(describeViolations(blocking), `serious or critical axe violations on ${where}`).toBe('');
}

beforeAll(async () => {
  if (!browserPath) return;
  [stack, browser] = await Promise.all([
    // Task offsets scaled to 0: a run finishes as soon as the simulator's control returns.
    startDashboardStack({ panel: { installMs: 300, transitionMs: 50, scheduleOffsetScale: 0 } }),
    chromium.launch({ executablePath: browserPath, args: CHROMIUM_ARGS }),
  ]);
  customer = await customerWithServer(stack, 'schedules.player@example.com', { serverName: 'Schedules server', running: true });
  ({ page, context, problems } = await signedInPage(browser, stack, customer.email, `/servers/${customer.serverId}?tab=schedules`));
}, 240_000);
afterAll(async () => {
  await context?.close();
  await browser?.close();
  await stack?.stop();
});

describe.skipIf(!browserPath)('the Schedules tab', () => {
  it('shows the empty list and the form, with no axe violation', async () => {
    await page.getByRole('heading', { name: 'Schedules', exact: true }).waitFor();
    await settled(page);
    await expect.poll(() => page.getByTestId('schedule-count').textContent()).toBe('0 of 10 schedules.');
    await expectNoAxeViolations('the empty Schedules tab');
  });

  it('creates a daily 04:00 schedule that sends a console command', async () => {
    await page.getByLabel('Name', { exact: true }).fill('Morning announcement');
    await page.getByLabel('When').selectOption({ label: 'Daily at 04:00' });
    await page.getByLabel('Command').fill('say good morning from a schedule');
    await page.getByRole('button', { name: 'Create schedule' }).click();
    await expect.poll(() => page.getByTestId('schedule-row').count()).toBe(1);
    const row = page.getByTestId('schedule-row').first();
    await expect(row.textContent()).resolves.toContain('Daily at 04:00');
    await expect(row.textContent()).resolves.toContain('command: say good morning from a schedule');
    const [made] = (await schedules()).data;
    expect(made).toMatchObject({ cron: { minute: '0', hour: '4', dayOfMonth: '*', month: '*', dayOfWeek: '*' }, active: true });
    expect(new Date(made.nextRunAt).getUTCHours()).toBe(4);
    await expectNoAxeViolations('the Schedules tab with a schedule');
  });

  it('runs on the simulator at its minute, and the command appears in the console', async () => {
    const [made] = (await schedules()).data;
    // Not before its minute...
    const early = await fetch(`${stack.panel!.sim.url}/__sim/schedules/run-due`, {
      method: 'POST',
      body: JSON.stringify({ at: new Date(Date.parse(made.nextRunAt) - 60_000).toISOString() }),
    });
    expect(((await early.json()) as { started: number[] }).started).toEqual([]);
    // ...then at it, as the panel's cron.
    const due = await fetch(`${stack.panel!.sim.url}/__sim/schedules/run-due`, {
      method: 'POST',
      body: JSON.stringify({ at: made.nextRunAt }),
    });
    expect(((await due.json()) as { started: number[] }).started).toEqual([Number(made.id)]);
    await tab('Console').click();
    await expect.poll(() => page.getByTestId('console-state').textContent(), { timeout: 20_000 }).toBe('connected');
    await expect
      .poll(() => page.getByTestId('terminal').textContent(), { timeout: 15_000 })
      .toContain('> say good morning from a schedule');
    const [after] = (await schedules()).data;
    expect(after.lastRunAt).not.toBeNull();
    expect(Date.parse(after.nextRunAt)).toBe(Date.parse(made.nextRunAt) + 86_400_000);
  });

  it('runs now and deletes from the list', async () => {
    await tab('Schedules').click();
    await page.getByTestId('schedule-row').first().waitFor();
    await page.getByRole('button', { name: 'Run now: Morning announcement' }).click();
    await page.getByText('Schedule Morning announcement started.').waitFor();
    // The second time the command reached the server: the run at its minute, then this one.
    const sent = () => stack.panel!.sim.commands(serverIdentifier()).filter((c) => c === 'say good morning from a schedule').length;
    await expect.poll(sent).toBe(2);
    await page.getByRole('button', { name: 'Delete Morning announcement' }).click();
    await page.getByRole('button', { name: 'Delete schedule' }).click();
    await expect.poll(() => page.getByTestId('schedule-row').count()).toBe(0);
    expect((await schedules()).data).toEqual([]);
    expect(problems.errors, problems.errors.join('\n')).toEqual([]);
  });
});

/** The server's identifier on the simulator (its only server). */
function serverIdentifier(): string {
  return [...stack.panel!.sim.state.servers.values()][0]!.uuidShort;
}
