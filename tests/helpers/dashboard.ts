import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { LOCAL_AUDIENCE } from '../../dev/local-idp.ts';
import { startLocalStack, type LocalStack, type LocalStackOptions } from '../../dev/stack.ts';

/**
 * The dashboard in a real browser: Debian's Chromium driven by playwright-core. `signedInPage`
 * opens a page of the dashboard as `email` without the sign-in form (a session token from the
 * local identity provider, stored where oidc-client-ts keeps its user), so that every page can be
 * checked on its own; the end-to-end journey signs in through the form instead.
 */
const wantedBrowser = process.env.CHROMIUM_PATH || '/usr/bin/chromium';
/** The browser, or undefined when none is installed (the browser tests skip and say why). */
export const browserPath = existsSync(wantedBrowser) ? wantedBrowser : undefined;
export const NO_BROWSER_REASON = `no Chromium at ${wantedBrowser}: install Debian's (apt-get install chromium) or set CHROMIUM_PATH`;

/** The machine's network is closed: nothing in the browser may try to reach out on its own. */
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** What went wrong in the page: uncaught errors, console errors, CSP violations. */
export interface PageProblems {
  errors: string[];
}

export function watchProblems(page: Page): PageProblems {
  const problems: PageProblems = { errors: [] };
  page.on('pageerror', (err) => problems.errors.push(`pageerror: ${err.message}`));
  page.on('console', (msg) => {
    // With where it happened: a resource that failed to load is named only by its location.
    if (msg.type() === 'error') problems.errors.push(`console: ${msg.text()}${msg.location().url ? ` (${msg.location().url})` : ''}`);
  });
  return problems;
}

interface StackLike {
  baseUrl: string;
}

/** A session token for `email` from the local identity provider (POST /dev/session). */
export async function sessionFor(stack: StackLike, email: string): Promise<{ token: string; expiresAt: string }> {
  const res = await fetch(`${stack.baseUrl}/dev/session`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email }),
  });
  if (!res.ok) throw new Error(`session failed: ${res.status} ${await res.text()}`);
  return (await res.json()) as { token: string; expiresAt: string };
}

/** A browser context whose pages start signed in as `email`. */
export async function signedInContext(
  browser: Browser,
  stack: StackLike,
  email: string,
  options: { viewport?: { width: number; height: number } } = {},
): Promise<BrowserContext> {
  const { token, expiresAt } = await sessionFor(stack, email);
  const context = await browser.newContext({ viewport: options.viewport ?? { width: 1280, height: 900 } });
  const key = `oidc.user:${stack.baseUrl}/dev/oidc:${LOCAL_AUDIENCE}`;
  const user = JSON.stringify({
    id_token: token,
    access_token: token,
    token_type: 'Bearer',
    scope: 'openid email profile',
    profile: { sub: `local|${email}`, email, email_verified: true },
    expires_at: Math.floor(new Date(expiresAt).getTime() / 1000),
  });
  await context.addInitScript(
    ([k, v]) => {
      const store = (
        globalThis as unknown as { sessionStorage: { getItem(k: string): string | null; setItem(k: string, v: string): void } }
      ).sessionStorage;
      if (!store.getItem(k)) store.setItem(k, v);
    },
    [key, user] as const,
  );
  return context;
}

/** Opens `path` of the dashboard (`/servers`, under /app/) signed in as `email`; waits for its heading. */
export async function signedInPage(
  browser: Browser,
  stack: StackLike,
  email: string,
  path = '/',
  options: { viewport?: { width: number; height: number } } = {},
): Promise<{ page: Page; context: BrowserContext; problems: PageProblems }> {
  const context = await signedInContext(browser, stack, email, options);
  const page = await context.newPage();
  const problems = watchProblems(page);
  await page.goto(`${stack.baseUrl}/app${path === '/' ? '/' : path}`);
  await page.locator('h1#page-title').first().waitFor({ timeout: 15_000 });
  return { page, context, problems };
}

// ---------------------------------------------------------------- F: the journey, the pages, the screenshots

/** The local stack the browser tests and `npm run screenshots` drive: the dashboard, a fast simulator, an API client. */
export interface DashboardStack extends LocalStack {
  /** Calls the API as the admin (its API key) unless `token` says who. */
  call(method: string, path: string, body?: unknown, token?: string): Promise<{ status: number; body: any; text: string }>;
  /** `call` that throws unless the answer is 2xx, answering the body. */
  must(method: string, path: string, body?: unknown, token?: string): Promise<any>;
  session(email: string): Promise<string>;
}

/**
 * Starts the local stack with the dashboard and the simulator panel, fast: installs take 300 ms and
 * power transitions 50 ms. In a test file it uses the run's DynamoDB Local and the file's table.
 */
export async function startDashboardStack(options: Partial<LocalStackOptions> = {}): Promise<DashboardStack> {
  // As tests/helpers/stack.ts does: the API re-reads a moving server's live state every 50 ms.
  process.env.LIVE_STATE_TRANSITION_TTL_MS ??= '50';
  const stack = await startLocalStack({
    ...(process.env.DYNAMODB_ENDPOINT ? { dynamodbEndpoint: process.env.DYNAMODB_ENDPOINT } : {}),
    ...(process.env.TABLE_NAME ? { tableName: process.env.TABLE_NAME } : {}),
    adminEmails: ['admin@localhost'],
    panel: { installMs: 300, transitionMs: 50 },
    webhooks: {},
    repairs: { installWatch: false },
    dashboard: true,
    ...options,
  });
  const call: DashboardStack['call'] = async (method, path, body, token = stack.adminApiKey) => {
    const res = await fetch(`${stack.baseUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      /* not JSON */
    }
    return { status: res.status, body: parsed, text };
  };
  const must: DashboardStack['must'] = async (method, path, body, token) => {
    const res = await call(method, path, body, token);
    if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${res.text}`);
    return res.body;
  };
  return { ...stack, call, must, session: async (email) => (await sessionFor(stack, email)).token };
}

/** Polls `read` until `done` says yes (every 100 ms, up to `timeoutMs`), answering the last value. */
export async function until<T>(
  read: () => Promise<T>,
  done: (value: T) => boolean,
  timeoutMs = 15_000,
  what = 'the condition',
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: last ${JSON.stringify(value)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export interface Customer {
  email: string;
  token: string;
  accountId: string;
  serverId: string;
  serverName: string;
}

/**
 * A customer with `creditCents` more of granted credit (5000 unless said; 0 grants none) and one more installed server (ramMb 1024), running
 * when `running` says so. The grant and the deploy go through the API, as a customer and an admin would.
 */
export async function customerWithServer(
  stack: DashboardStack,
  email: string,
  options: { creditCents?: number; serverName?: string; running?: boolean } = {},
): Promise<Customer> {
  const token = await stack.session(email);
  const me = await stack.must('GET', '/v1/account', undefined, token);
  const credit = options.creditCents ?? 5000;
  if (credit > 0) await stack.must('POST', `/v1/admin/users/${me.id}/credits`, { amountCents: credit, note: 'browser test credit' });
  const eggs = await stack.must('GET', '/v1/eggs', undefined, token);
  const egg = eggs.data[0];
  const name = options.serverName ?? 'Test server';
  const server = await stack.must(
    'POST',
    '/v1/servers',
    { name, eggId: egg.eggId, instanceId: egg.instanceId, ramMb: 1024, cpuPercent: 100, diskMb: 2048 },
    token,
  );
  const read = () => stack.must('GET', `/v1/servers/${server.id}`, undefined, token);
  await until(read, (s) => s.live?.installStatus === 'installed', 20_000, 'the install');
  if (options.running) {
    await stack.must('POST', `/v1/servers/${server.id}/power`, { signal: 'start' }, token);
    await until(read, (s) => s.live?.powerState === 'running', 20_000, 'the server to run');
  }
  return { email, token, accountId: me.id, serverId: server.id, serverName: name };
}

/** Signs in through the local identity provider's form: opens /app/, is sent to its form, types `email`. */
export async function signInThroughForm(page: Page, baseUrl: string, email: string): Promise<void> {
  await page.goto(`${baseUrl}/app/`);
  const field = page.getByLabel('E-mail address');
  await field.waitFor({ timeout: 20_000 });
  await field.fill(email);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.locator('h1#page-title').first().waitFor({ timeout: 20_000 });
}

/** Waits until the page shows no "Loading…" spinner (a poll that never ends is not waited for past `timeoutMs`). */
export async function settled(page: Page, timeoutMs = 15_000): Promise<void> {
  await page
    .waitForFunction(() => (globalThis as unknown as BrowserGlobals).document.querySelectorAll('.spinner').length === 0, undefined, {
      timeout: timeoutMs,
      polling: 100,
    })
    .catch(() => undefined);
}

export interface AxeViolation {
  id: string;
  impact: 'minor' | 'moderate' | 'serious' | 'critical' | null;
  help: string;
  helpUrl: string;
  nodes: { target: string[]; failureSummary?: string }[];
}

/**
 * The little of the browser's globals the checks below read inside the page (this project compiles
 * without the DOM library).
 */
interface DomEl {
  tagName: string;
  textContent: string | null;
  getAttribute(name: string): string | null;
  setAttribute(name: string, value: string): void;
  removeAttribute(name: string): void;
  focus(options?: { preventScroll?: boolean }): void;
  blur(): void;
  closest(selector: string): DomEl | null;
}
interface BrowserGlobals {
  document: {
    activeElement: DomEl | null;
    body: DomEl;
    documentElement: DomEl & { scrollWidth: number };
    querySelectorAll(s: string): ArrayLike<DomEl>;
  };
  getComputedStyle(el: DomEl): { outlineStyle: string; outlineWidth: string; boxShadow: string };
  innerWidth: number;
  axe?: { run(context: unknown, options: unknown): Promise<{ violations: AxeViolation[]; passes: unknown[] }> };
}

let axeSource: string | undefined;
const AXE_PATH = fileURLToPath(new URL('../../node_modules/axe-core/axe.min.js', import.meta.url));

/**
 * axe-core over the whole document (WCAG 2.0/2.1 A and AA, and best practices). Answers the
 * violations that are serious or critical, and the others (to print as warnings).
 */
export async function runAxe(page: Page): Promise<{ blocking: AxeViolation[]; warnings: AxeViolation[] }> {
  axeSource ??= readFileSync(AXE_PATH, 'utf8');
  // Evaluated through the DevTools protocol, not as a <script> (the dashboard's CSP forbids inline scripts).
  if (!(await page.evaluate(() => 'axe' in globalThis))) await page.evaluate(axeSource);
  const violations = await page.evaluate(async () => {
    const { axe, document } = globalThis as unknown as BrowserGlobals;
    const result = await axe!.run(document, { runOnly: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] });
    if (result.passes.length === 0) throw new Error('axe-core checked nothing');
    return result.violations.map((v) => ({
      id: v.id,
      impact: v.impact,
      help: v.help,
      helpUrl: v.helpUrl,
      nodes: v.nodes.map((n) => ({ target: n.target, failureSummary: n.failureSummary })),
    }));
  });
  const blocking = violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  return { blocking, warnings: violations.filter((v) => !blocking.includes(v)) };
}

/** One line a violation, with the elements it names. */
export const describeViolations = (violations: AxeViolation[]): string =>
  violations
    .map(
      (v) =>
        `${v.impact ?? '?'} ${v.id}: ${v.help} — ${v.nodes
          .map((n) => n.target.join(' '))
          .slice(0, 5)
          .join(', ')}`,
    )
    .join('\n');

/** What keyboard focus is on after a Tab: the element and whether its focus is visible. */
export interface Focused {
  tag: string;
  text: string;
  href: string | null;
  /** Inside the main navigation (`nav[aria-label=Main]`). */
  inNav: boolean;
  /** Computed outline (style and width) or box-shadow: what makes focus visible. */
  outline: string;
  visible: boolean;
}

/** Presses Tab `count` times from the top of the document, answering where focus went each time. */
export async function tabFromTop(page: Page, count: number): Promise<Focused[]> {
  // The app moves focus to the page's heading after a navigation; start from the document's top.
  await page.evaluate(() => {
    const { document } = globalThis as unknown as BrowserGlobals;
    document.activeElement?.blur();
    const html = document.documentElement;
    html.setAttribute('tabindex', '-1');
    html.focus({ preventScroll: true });
    html.removeAttribute('tabindex');
  });
  const seen: Focused[] = [];
  for (let i = 0; i < count; i++) {
    await page.keyboard.press('Tab');
    seen.push(
      await page.evaluate(() => {
        const { document, getComputedStyle } = globalThis as unknown as BrowserGlobals;
        const el = document.activeElement;
        if (!el || el === document.body) return { tag: 'body', text: '', href: null, inNav: false, outline: 'none', visible: false };
        const style = getComputedStyle(el);
        const outline = `${style.outlineStyle} ${style.outlineWidth}`;
        const shadow = style.boxShadow;
        const visible =
          (style.outlineStyle !== 'none' && Number.parseFloat(style.outlineWidth) > 0) || (shadow !== 'none' && shadow !== '');
        return {
          tag: el.tagName.toLowerCase(),
          text: (el.textContent ?? '').trim().slice(0, 60),
          href: el.getAttribute('href'),
          inNav: el.closest('nav[aria-label="Main"]') !== null,
          outline: shadow !== 'none' ? `${outline} / ${shadow}` : outline,
          visible,
        };
      }),
    );
  }
  return seen;
}

/** Whether the document scrolls sideways (wider than the viewport). */
export const scrollsSideways = (page: Page): Promise<{ scrollWidth: number; innerWidth: number }> =>
  page.evaluate(() => {
    const { document, innerWidth } = globalThis as unknown as BrowserGlobals;
    return { scrollWidth: document.documentElement.scrollWidth, innerWidth };
  });
