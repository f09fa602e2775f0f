import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type Browser, type BrowserContext } from 'playwright-core';
import { readFileSync } from 'node:fs';
import {
  browserPath,
  CHROMIUM_ARGS,
  customerWithServer,
  describeViolations,
  NO_BROWSER_REASON,
  runAxe,
  scrollsSideways,
  settled,
  signedInContext,
  startDashboardStack,
  tabFromTop,
  watchProblems,
  type Customer,
  type DashboardStack,
} from '../helpers/dashboard.ts';

/**
 * Every page of the dashboard (web/src/routes.ts, and each tab of a server), opened signed in, in
 * headless Chromium: axe-core finds nothing serious or critical, the page logs no error and breaks
 * no CSP rule, at 375 px the document does not scroll sideways and the navigation opens from the
 * Menu button, and from the top of the document Tab reaches the skip link, then the navigation, each
 * focused element with a visible focus style. Customer pages are opened by a customer with credit
 * and one installed server; admin pages by admin@localhost. Skipped, saying why, without Chromium.
 */
if (!browserPath) console.warn(`tests/browser/dashboard-pages.test.ts SKIPPED: ${NO_BROWSER_REASON}`);

/**
 * The page table, read from web/src/routes.ts as text: importing it would bring the pages' TSX into
 * the project's type check, which has no JSX (the web app has its own, `tsc -p web`).
 */
interface RouteEntry {
  path: string;
  nav?: string;
  admin: boolean;
}
const ROUTES: RouteEntry[] = [
  ...readFileSync(new URL('../../web/src/routes.ts', import.meta.url), 'utf8').matchAll(/\{\s*path:\s*'([^']+)'([^}]*)\}/g),
].map(([, path, rest]) => ({ path: path!, nav: /nav:\s*'([^']+)'/.exec(rest!)?.[1], admin: /admin:\s*true/.test(rest!) }));

const SERVER_TABS = [
  'overview',
  'console',
  'files',
  'backups',
  'schedules',
  'databases',
  'network',
  'startup',
  'activity',
  'users',
  'settings',
];
const ADMIN = 'admin@localhost';

let stack: DashboardStack;
let browser: Browser;
let customer: Customer;
let accountContext: BrowserContext;
let adminContext: BrowserContext;

beforeAll(async () => {
  if (!browserPath) return;
  [stack, browser] = await Promise.all([startDashboardStack(), chromium.launch({ executablePath: browserPath, args: CHROMIUM_ARGS })]);
  customer = await customerWithServer(stack, 'pages.player@example.com', { creditCents: 5000, serverName: 'Pages server', running: true });
  // A key, so that the keys page lists one.
  await stack.must('POST', '/v1/keys', { name: 'Pages key' }, customer.token);
  [accountContext, adminContext] = await Promise.all([
    signedInContext(browser, stack, customer.email),
    signedInContext(browser, stack, ADMIN),
  ]);
}, 240_000);
afterAll(async () => {
  await accountContext?.close();
  await adminContext?.close();
  await browser?.close();
  await stack?.stop();
});

interface Visit {
  label: string;
  path: string;
  admin: boolean;
  /** The nav link labels the page's navigation lists, in order. */
  nav: string[];
}

/** Every page: routes with their parameters filled in; a server's page once a tab. */
function visits(): Visit[] {
  const out: Visit[] = [];
  for (const route of ROUTES) {
    const admin = Boolean(route.admin);
    const nav = ROUTES.filter((r) => r.nav && (admin || !r.admin)).map((r) => r.nav!);
    if (route.path === '/servers/:id') {
      for (const tab of SERVER_TABS) out.push({ label: `${route.path}?tab=${tab}`, path: `/servers/:server?tab=${tab}`, admin, nav });
    } else {
      out.push({ label: route.path, path: route.path.replace(':id', ':account'), admin, nav });
    }
  }
  return out;
}

describe.skipIf(!browserPath)('every dashboard page in Chromium: axe, no errors, 375 px, keyboard', () => {
  it('lists every route of web/src/routes.ts', () => {
    expect(ROUTES.map((r) => r.path)).toContain('/servers/:id');
    expect(ROUTES.map((r) => r.path)).toContain('/admin/accounts/:id');
    expect(visits().length).toBe(ROUTES.length - 1 + SERVER_TABS.length);
  });

  // Five pages at a time (vitest's maxConcurrency), each in its own tab: about half the time of one by one.
  it.concurrent.each(visits())(
    '$label',
    async ({ path: template, admin, nav }) => {
      const path = template.replace(':server', customer.serverId).replace(':account', customer.accountId);
      const page = await (admin ? adminContext : accountContext).newPage();
      const problems = watchProblems(page);
      try {
        await page.setViewportSize({ width: 1280, height: 900 });
        await page.goto(`${stack.baseUrl}/app${path}`);
        await page.locator('h1#page-title').first().waitFor({ timeout: 20_000 });
        await settled(page);
        const title = (await page.locator('h1#page-title').first().textContent()) ?? '';
        expect(title, 'the page exists').not.toBe('Not found');

        // axe-core: nothing serious or critical; the rest is printed.
        const { blocking, warnings } = await runAxe(page);
        if (warnings.length) console.warn(`axe warnings on ${path}:\n${describeViolations(warnings)}`);
        expect(describeViolations(blocking), `serious or critical axe violations on ${path}`).toBe('');

        // The keyboard: from the top, the skip link first, then every navigation link in order, all with a visible focus.
        const focused = await tabFromTop(page, nav.length + 6);
        expect(focused[0], 'Tab from the top reaches the skip link first').toMatchObject({ tag: 'a', href: '#main' });
        const navOrder = focused.filter((f) => f.inNav).map((f) => f.text);
        expect(navOrder, 'Tab then reaches the navigation links in order').toEqual(nav);
        // (`body`: Tab went past the page's last control, to the browser's own UI.)
        const hidden = focused.filter((f) => !f.visible && f.tag !== 'body');
        expect(hidden, 'every focused element shows its focus').toEqual([]);

        // 375 px: no sideways scroll of the document; the navigation opens from the Menu button.
        await page.setViewportSize({ width: 375, height: 800 });
        await settled(page);
        const { scrollWidth, innerWidth } = await scrollsSideways(page);
        expect(scrollWidth, `the document is ${scrollWidth} px wide in a ${innerWidth} px viewport`).toBeLessThanOrEqual(innerWidth);
        const mainNav = page.getByRole('navigation', { name: 'Main' });
        const menu = page.getByRole('button', { name: 'Menu' });
        await expect(menu.isVisible()).resolves.toBe(true);
        await expect(mainNav.getByRole('link', { name: nav[0]!, exact: true }).isVisible()).resolves.toBe(false);
        await menu.click();
        await expect(menu.getAttribute('aria-expanded')).resolves.toBe('true');
        for (const label of nav)
          await mainNav.getByRole('link', { name: label, exact: true }).waitFor({ state: 'visible', timeout: 5_000 });

        expect(problems.errors, `errors on ${path}`).toEqual([]);
      } finally {
        await page.close();
      }
    },
    90_000,
  );
});
