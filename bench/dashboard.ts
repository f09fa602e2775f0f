import { gzipSync } from 'node:zlib';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { startLocalStack } from '../dev/stack.ts';
import { browserPath, CHROMIUM_ARGS, signedInContext } from '../tests/helpers/dashboard.ts';
import { buildDashboard } from '../web/build.ts';
import { table } from './harness.ts';

/**
 * The dashboard's weight and first render (issue: the dashboard). A fresh build (web/build.ts), then
 * the overview opened in headless Chromium on the local stack, signed in, with an empty cache each
 * time: every script and stylesheet the page fetched before its heading appeared is the initial
 * bundle, weighed gzipped (level 9, as CloudFront's compression is at least as good); the time to
 * first render is from navigation start to the overview's heading, median and worst of the runs.
 * Lazily loaded pages (the console's xterm.js, the admin pages) are not initial and are listed apart.
 */
export const INITIAL_GOAL_KB = 120;
const RUNS = 7;

export async function benchDashboard(): Promise<string> {
  if (!browserPath) return '## 11. The dashboard\n\nNot measured: no Chromium (apt-get install chromium, or CHROMIUM_PATH).';
  const dist = await buildDashboard({ force: true });
  const stack = await startLocalStack({ tableName: 'bench-dashboard', panel: false, dashboard: true });
  const browser = await chromium.launch({ executablePath: browserPath, args: CHROMIUM_ARGS });
  try {
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
      times.push(
        await page.evaluate(() => {
          const perf = (globalThis as unknown as { performance: { now(): number } }).performance;
          return perf.now();
        }),
      );
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
    return [
      '## 11. The dashboard',
      '',
      `A fresh build of web/ (\`bench/dashboard.ts\`), the overview opened ${RUNS} times in headless Chromium on the local stack, signed in, each with an empty cache. Initial = every script and stylesheet fetched before the overview's heading appeared; gzipped at level 9.`,
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
        ],
      ),
    ].join('\n');
  } finally {
    await browser.close();
    await stack.stop();
  }
}
