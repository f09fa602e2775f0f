import { gzipSync } from 'node:zlib';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import type { Browser } from 'playwright-core';
import {
  browserPath,
  CHROMIUM_ARGS,
  customerWithServer,
  type DashboardStack,
  signedInContext,
  startDashboardStack,
} from '../tests/helpers/dashboard.ts';
import { buildDashboard } from '../web/build.ts';
import { table } from './harness.ts';

/**
 * The dashboard's weight and first render (issue: the dashboard). A fresh build (web/build.ts), then
 * the overview opened in headless Chromium on the local stack, signed in, with an empty cache each
 * time: every script and stylesheet the page fetched before its heading appeared is the initial
 * bundle, weighed gzipped (level 9, as CloudFront's compression is at least as good); the time to
 * first render is from navigation start to the page's heading, median and worst of the runs, for the
 * overview and for a server's page (the customer has one installed server on the simulator).
 * Lazily loaded pages (the console's xterm.js, the admin pages) are not initial and are listed apart.
 */
export const INITIAL_GOAL_KB = 120;
const RUNS = 7;

export async function benchDashboard(): Promise<string> {
  if (!browserPath) return '## 11. The dashboard\n\nNot measured: no Chromium (apt-get install chromium, or CHROMIUM_PATH).';
  const dist = await buildDashboard({ force: true });
  const stack = await startDashboardStack({ tableName: 'bench-dashboard' });
  const browser = await chromium.launch({ executablePath: browserPath, args: CHROMIUM_ARGS });
  try {
    const customer = await customerWithServer(stack, 'bench-dashboard@example.com', { serverName: 'Bench server' });
    const gz = (file: string) => gzipSync(readFileSync(join(dist, file)), { level: 9 }).length;
    const times: number[] = [];
    let initial: string[] = [];
    for (let run = 0; run < RUNS; run++) {
      const context = await signedInContext(browser, stack, 'bench-dashboard@example.com');
      const page = await context.newPage();
      const fetched: string[] = [];
      page.on('request', (req) => {
        const url = new URL(req.url());
        if (/\.(js|css)$/.test(url.pathname) && url.pathname.startsWith('/app/')) fetched.push(url.pathname.slice('/app/'.length));
      });
      await page.goto(`${stack.baseUrl}/app/`);
      await page.getByRole('heading', { name: 'Overview' }).waitFor({ timeout: 15_000 });
      times.push(await sinceNavigation(page));
      initial = [...new Set(fetched)];
      await context.close();
    }
    const all = (await import('node:fs')).readdirSync(join(dist, 'assets')).map((f) => `assets/${f}`);
    const rows = initial.map(
      (f) => [f, (readFileSync(join(dist, f)).length / 1024).toFixed(1), (gz(f) / 1024).toFixed(1)] as (string | number)[],
    );
    const initialGz = initial.reduce((sum, f) => sum + gz(f), 0) / 1024;
    const lazyGz = all.filter((f) => /\.(js|css)$/.test(f) && !initial.includes(f)).reduce((sum, f) => sum + gz(f), 0) / 1024;
    const sorted = [...times].sort((a, b) => a - b);
    const median = sorted[Math.floor(sorted.length / 2)]!;
    const server = await firstRenders(browser, stack, customer.email, `/servers/${customer.serverId}`, customer.serverName);
    return [
      '## 11. The dashboard',
      '',
      `A fresh build of web/ (\`bench/dashboard.ts\`), the overview and a server's page each opened ${RUNS} times in headless Chromium on the local stack (the simulator panel, one installed server), signed in, each with an empty cache. Initial = every script and stylesheet fetched before the overview's heading appeared; gzipped at level 9.`,
      '',
      table(['initial file', 'KB', 'KB gzipped'], rows),
      '',
      table(
        ['figure', 'measured', 'goal'],
        [
          [
            'initial JS + CSS, gzipped',
            `${initialGz.toFixed(1)} KB`,
            `≤ ${INITIAL_GOAL_KB} KB (${(initialGz / INITIAL_GOAL_KB).toFixed(2)}× the goal)`,
          ],
          ['everything else (lazy pages, xterm.js), gzipped', `${lazyGz.toFixed(1)} KB`, 'loaded when first visited'],
          ['time to first render of the overview (median)', `${median.toFixed(0)} ms`, '—'],
          ['time to first render of the overview (worst)', `${sorted.at(-1)!.toFixed(0)} ms`, '—'],
          ['time to first render of a server page (median)', `${server[Math.floor(server.length / 2)]!.toFixed(0)} ms`, '—'],
          ['time to first render of a server page (worst)', `${server.at(-1)!.toFixed(0)} ms`, '—'],
        ],
      ),
    ].join('\n');
  } finally {
    await browser.close();
    await stack.stop();
  }
}

/** Milliseconds from the navigation's start to now, in the page. */
const sinceNavigation = (page: import('playwright-core').Page): Promise<number> =>
  page.evaluate(() => (globalThis as unknown as { performance: { now(): number } }).performance.now());

/** `path` opened RUNS times, each in a fresh context: the times to its level-1 heading `heading`, sorted. */
async function firstRenders(browser: Browser, stack: DashboardStack, email: string, path: string, heading: string): Promise<number[]> {
  const times: number[] = [];
  for (let run = 0; run < RUNS; run++) {
    const context = await signedInContext(browser, stack, email);
    const page = await context.newPage();
    await page.goto(`${stack.baseUrl}/app${path}`);
    await page.getByRole('heading', { name: heading, level: 1 }).waitFor({ timeout: 15_000 });
    times.push(await sinceNavigation(page));
    await context.close();
  }
  return times.sort((a, b) => a - b);
}
