import { mkdirSync } from 'node:fs';
import { chromium } from 'playwright-core';
import { browserPath, CHROMIUM_ARGS, signedInPage } from '../tests/helpers/dashboard.ts';
import { startLocalStack } from './stack.ts';

/**
 * A look at dashboard pages while building them: starts the local stack in memory with the
 * dashboard, optionally gives the customer credit and a server, opens each page signed in and saves
 * a screenshot at 1280 px and 375 px, printing every error the page logged.
 *
 *   node dev/dashboard-preview.ts [--email a@b.c] [--admin] [--credit 5000] [--server] [--out /tmp/shots] /servers /deploy …
 *
 * A path may contain `:server`, replaced by the id of the server made with `--server`.
 */
const args = process.argv.slice(2);
const flag = (name: string) => args.includes(name);
const value = (name: string, fallback: string) => {
  const i = args.indexOf(name);
  return i >= 0 && args[i + 1] ? args[i + 1]! : fallback;
};
const paths = args.filter((a, i) => a.startsWith('/') && !['--out', '--email', '--credit'].includes(args[i - 1] ?? ''));
const out = value('--out', '/tmp/dashboard-preview');
const email = flag('--admin') ? 'admin@localhost' : value('--email', 'player@example.com');
if (!browserPath) throw new Error('no Chromium (apt-get install chromium, or CHROMIUM_PATH)');
mkdirSync(out, { recursive: true });

process.env.LIVE_STATE_TRANSITION_TTL_MS ??= '50';
const stack = await startLocalStack({ panel: { installMs: 300 }, webhooks: {}, repairs: {}, dashboard: true });
const call = async (method: string, path: string, body?: unknown, token = stack.adminApiKey) => {
  const res = await fetch(`${stack.baseUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return JSON.parse(text || 'null');
};
const session = async () =>
  (
    (await (
      await fetch(`${stack.baseUrl}/dev/session`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email }),
      })
    ).json()) as { token: string }
  ).token;

const token = await session();
const me = await call('GET', '/v1/account', undefined, token);
const credit = Number(value('--credit', flag('--server') ? '5000' : '0'));
if (credit > 0) await call('POST', `/v1/admin/users/${me.id}/credits`, { amountCents: credit, note: 'preview' });
let serverId = '';
if (flag('--server')) {
  const eggs = await call('GET', '/v1/eggs', undefined, token);
  const egg = eggs.data[0];
  const server = await call(
    'POST',
    '/v1/servers',
    { name: 'Preview server', eggId: egg.eggId, instanceId: egg.instanceId, ramMb: 1024, cpuPercent: 100, diskMb: 2048 },
    token,
  );
  serverId = server.id;
  await new Promise((r) => setTimeout(r, 1500));
}

const browser = await chromium.launch({ executablePath: browserPath, args: CHROMIUM_ARGS });
try {
  for (const raw of paths.length ? paths : ['/']) {
    const path = raw.replace(':server', serverId);
    for (const width of [1280, 375]) {
      const { page, context, problems } = await signedInPage(browser, stack, email, path, { viewport: { width, height: 900 } });
      await page.waitForTimeout(800);
      const file = `${out}/${path.replace(/[^\w]+/g, '_') || 'root'}-${width}.png`;
      await page.screenshot({ path: file, fullPage: true });
      process.stdout.write(`${file}${problems.errors.length ? `\n  ${problems.errors.join('\n  ')}` : ''}\n`);
      await context.close();
    }
  }
} finally {
  await browser.close();
  await stack.stop();
}
