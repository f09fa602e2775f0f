import { existsSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type Browser, type Page } from 'playwright-core';
import { startTestApi, type TestApi } from '../helpers/stack.ts';
import { resetConfig } from '../../shared/config/env.ts';

/**
 * The sandbox checkout page (dev/handler.ts) in a real headless browser: Debian's Chromium driven
 * by playwright-core. After a click the page shows the outcome, disables its buttons (a double
 * click sends one request) and returns to the checkout's successUrl or cancelUrl; a paid or void
 * invoice's page opens with its buttons disabled. Skipped, saying why, when no Chromium is installed.
 */
/** CHROMIUM_PATH names the browser; by default Debian's package. */
const wantedBrowser = process.env.CHROMIUM_PATH || '/usr/bin/chromium';
const browserPath = existsSync(wantedBrowser) ? wantedBrowser : undefined;
if (!browserPath) {
  console.warn(
    `tests/browser/checkout.test.ts SKIPPED: no Chromium at ${wantedBrowser}. Install Debian's with ` +
      '`apt-get install chromium` (.ci/run does when it can), or set CHROMIUM_PATH to a Chromium binary.',
  );
}

// The machine's network is closed: nothing in the browser may try to reach out on its own.
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

let api: TestApi;
let browser: Browser;
/** The site the customer comes from and returns to. */
let site: Server;
let siteUrl: string;

beforeAll(async () => {
  if (!browserPath) return;
  // The sandbox: no Stripe key.
  delete process.env.STRIPE_SECRET_KEY;
  delete process.env.STRIPE_SECRET_ARN;
  delete process.env.STRIPE_WEBHOOK_SECRET;
  resetConfig();
  site = createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(`<!doctype html><title>Back at the site</title><p>Back at the site: ${req.url?.replace(/[^\w/?=&.-]/g, '')}</p>`);
  });
  await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve));
  siteUrl = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;
  [api, browser] = await Promise.all([
    startTestApi({ panel: false }),
    chromium.launch({ executablePath: browserPath, args: CHROMIUM_ARGS }),
  ]);
});
afterAll(async () => {
  await browser?.close();
  await api?.stop();
  await new Promise((resolve) => (site ? site.close(resolve) : resolve(undefined)));
});

async function customer(email: string) {
  const token = await api.session(email);
  return { token, balance: async () => (await api.call('GET', '/v1/account', { token })).body.balanceCents as number };
}

async function checkout(token: string, amountCents: number) {
  const res = await api.call('POST', '/v1/billing/checkout', {
    token,
    body: { amountCents, successUrl: `${siteUrl}/paid?session={CHECKOUT_SESSION_ID}&from=sandbox`, cancelUrl: `${siteUrl}/cancelled` },
  });
  expect(res.status, res.text).toBe(201);
  return res.body as { url: string; invoiceId: string; invoiceNumber: string };
}

/** Requests the page sends to finish the payment. */
function completions(page: Page): string[] {
  const sent: string[] = [];
  page.on('request', (req) => {
    if (req.method() === 'POST' && req.url().endsWith('/complete')) sent.push(req.postData() ?? '');
  });
  return sent;
}

/** The little of the DOM these checks touch (the project compiles without the DOM library). */
interface El {
  dataset: Record<string, string | undefined>;
  textContent: string | null;
  hidden: boolean;
  disabled: boolean;
}
interface PageGlobals {
  document: { getElementById(id: string): El; querySelectorAll(selector: string): Iterable<El> };
  MutationObserver: new (callback: () => void) => { observe(target: El, options: Record<string, boolean>): void };
}

/** Whether each button of the page is disabled. */
const disabledButtons = (page: Page): Promise<boolean[]> =>
  page.evaluate(() => [...(globalThis as unknown as PageGlobals).document.querySelectorAll('button')].map((b) => b.disabled));

interface Snapshot {
  outcome: string;
  text: string;
  status: string;
  returning: string;
  disabled: boolean[];
}

/**
 * What the page shows at two moments, taken inside the page as they happen (the page leaves
 * 1.5 s later): while the request is in flight, and when the outcome appears.
 */
function watch(page: Page): Promise<{ inFlight: Snapshot; done: Snapshot }> {
  return page.evaluate(
    () =>
      new Promise<{ inFlight: Snapshot; done: Snapshot }>((resolve) => {
        const { document, MutationObserver } = globalThis as unknown as PageGlobals;
        const outcome = document.getElementById('outcome');
        const returning = document.getElementById('returning');
        const snap = (): Snapshot => ({
          outcome: outcome.dataset.outcome ?? '',
          text: outcome.textContent ?? '',
          status: document.getElementById('status').textContent ?? '',
          returning: returning.hidden ? '' : (returning.textContent ?? ''),
          disabled: [...document.querySelectorAll('button')].map((b) => b.disabled),
        });
        let inFlight: Snapshot | undefined;
        new MutationObserver(() => {
          inFlight ??= snap();
          if (outcome.dataset.outcome) resolve({ inFlight, done: snap() });
        }).observe(outcome, { childList: true, characterData: true, subtree: true, attributes: true });
      }),
  );
}

describe.skipIf(!browserPath)(`the sandbox checkout page in ${browserPath ?? 'Chromium (not installed: skipped)'}`, () => {
  let paidUrl = '';
  let paidSuccess = '';
  let expiredUrl = '';

  it('Pay: shows the outcome, disables every button (a double click sends one request), returns to successUrl with the session id; credited once', async () => {
    const { token, balance } = await customer('browser-pays@example.com');
    const before = await balance();
    const { url, invoiceId, invoiceNumber } = await checkout(token, 1000);
    const page = await browser.newPage();
    try {
      const sent = completions(page);
      await page.goto(url);
      expect(await page.locator('#status').textContent()).toBe('open');
      expect(await disabledButtons(page)).toEqual([false, false, false]);

      const shown = watch(page);
      await page.dblclick('button[data-outcome="paid"]');
      const { inFlight, done } = await shown;
      expect(inFlight.disabled).toEqual([true, true, true]);
      expect(done).toMatchObject({ outcome: 'paid', status: 'paid', disabled: [true, true, true] });
      expect(done.text).toContain(`Payment complete: $10.00 paid, $10.50 credited. Invoice ${invoiceNumber} is paid.`);

      const invoice = (await api.call('GET', `/v1/invoices/${invoiceId}`, { token })).body;
      const successUrl = `${siteUrl}/paid?session=${invoice.payment.sessionId}&from=sandbox`;
      expect(invoice.payment.sessionId).toMatch(/^cs_sandbox_/);
      expect(done.returning).toContain(`Returning to ${successUrl}`);
      await page.waitForURL(successUrl, { timeout: 10_000 });
      expect(await page.textContent('p')).toContain('Back at the site');
      expect(sent).toEqual([JSON.stringify({ outcome: 'paid' })]);

      expect(invoice).toMatchObject({ status: 'paid', paidCents: 1000, creditedCents: 1050 });
      expect((await balance()) - before).toBe(1050);
      const entries = (await api.call('GET', '/v1/account/transactions?limit=100', { token })).body.data as {
        type: string;
        amountCents: number;
        reference: { invoiceId: string | null };
      }[];
      const ofInvoice = entries.filter((e) => e.reference.invoiceId === invoiceId).map((e) => [e.type, e.amountCents]);
      expect(ofInvoice.sort()).toEqual([
        ['bonus', 50],
        ['topup', 1000],
      ]);
      paidUrl = url;
      paidSuccess = successUrl;
    } finally {
      await page.close();
    }
  });

  it.each([
    { button: 'expired', label: 'Let it expire', said: 'The checkout session expired: nothing was charged.' },
    { button: 'failed', label: 'Payment fails', said: 'The payment failed: nothing was charged.' },
  ])(
    '$label: says so, disables every button, returns to cancelUrl; the invoice is void and the balance unchanged',
    async ({ button, said }) => {
      const { token, balance } = await customer(`browser-${button}@example.com`);
      const before = await balance();
      const { url, invoiceId, invoiceNumber } = await checkout(token, 1500);
      const page = await browser.newPage();
      try {
        const sent = completions(page);
        await page.goto(url);
        const shown = watch(page);
        await page.click(`button[data-outcome="${button}"]`);
        const { inFlight, done } = await shown;
        expect(inFlight.disabled).toEqual([true, true, true]);
        expect(done).toMatchObject({ outcome: button, status: 'void', disabled: [true, true, true] });
        expect(done.text).toContain(`${said} Invoice ${invoiceNumber} is void.`);
        expect(done.returning).toContain(`Returning to ${siteUrl}/cancelled`);
        await page.waitForURL(`${siteUrl}/cancelled`, { timeout: 10_000 });
        expect(sent).toEqual([JSON.stringify({ outcome: button })]);
        expect((await api.call('GET', `/v1/invoices/${invoiceId}`, { token })).body).toMatchObject({
          status: 'void',
          paidCents: 0,
          creditedCents: 0,
        });
        expect(await balance()).toBe(before);
        if (button === 'expired') expiredUrl = url;
      } finally {
        await page.close();
      }
    },
  );

  it('a paid or void invoice opens with its state, its buttons disabled and a link back, and stays put', async () => {
    expect(paidUrl && expiredUrl, 'the two tests above ran').toBeTruthy();
    for (const { url, status, outcome, back } of [
      { url: paidUrl, status: 'paid', outcome: 'Payment complete', back: paidSuccess },
      { url: expiredUrl, status: 'void', outcome: 'The checkout session expired', back: `${siteUrl}/cancelled` },
    ]) {
      const page = await browser.newPage();
      try {
        const sent = completions(page);
        await page.goto(url);
        expect(await page.locator('#status').textContent()).toBe(status);
        expect(await page.locator('#outcome').textContent()).toContain(outcome);
        expect(await page.locator('#return').getAttribute('href')).toBe(back);
        expect(await disabledButtons(page)).toEqual([true, true, true]);
        await page.click('button[data-outcome="paid"]', { force: true });
        await page.waitForTimeout(300);
        expect(page.url()).toBe(url);
        expect(sent).toEqual([]);
      } finally {
        await page.close();
      }
    }
  });
});
