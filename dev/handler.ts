import { createGroupHandler } from '../shared/http/handler.ts';
import { devRoutes } from '../shared/api/routes/dev.ts';
import { getConfig } from '../shared/config/env.ts';
import { runPassInProcess } from '../shared/billing/pass.ts';
import { reconcileAll } from '../shared/servers/reconcile.ts';
import { returnUrls } from '../shared/payments/stripe-client.ts';
import { SANDBOX_CARD_NAMES, SANDBOX_CARDS, sandboxEvent, sandboxSetupEvent } from './sandbox-events.ts';
import { findInvoiceItem, toInvoiceView } from '../shared/invoices/index.ts';
import { formatMoney } from '../shared/currency.ts';
import type { InvoiceItem } from '../shared/db/items.ts';
import { notFound } from '../shared/errors.ts';
import type { WebhookOutcome } from '../shared/api/schemas.ts';
import { localJwks, mintSessionToken } from './local-idp.ts';

/** The `/dev/*` routes: local stack only, never part of the AWS deployment. */
export const handler = createGroupHandler('dev', devRoutes, {
  devSession: async ({ body }) => mintSessionToken(getConfig().oidc!.issuer, body.email),
  devJwks: async () => localJwks() as Promise<{ keys: Record<string, unknown>[] }>,

  devBillingRun: async ({ body }) => runPassInProcess(body.at ? new Date(body.at) : new Date()),

  devReconcile: async () => reconcileAll(),

  devCheckoutPage: async ({ params, baseUrl }) => {
    const item = await findInvoiceItem(params.invoiceId);
    if (!item) throw notFound('Invoice');
    return { contentType: 'text/html; charset=utf-8', body: checkoutPage(item, baseUrl) };
  },

  devCheckoutScript: async () => ({ contentType: 'text/javascript; charset=utf-8', body: CHECKOUT_SCRIPT }),

  devCheckoutComplete: async ({ params, body, baseUrl }) => deliverSigned(baseUrl, await sandboxEvent(params.invoiceId, body.outcome)),

  devPaymentMethodPage: async ({ params }) => ({
    contentType: 'text/html; charset=utf-8',
    body: `<!doctype html><html lang="en"><head><meta charset="utf-8"><link rel="icon" href="data:,"><title>Sandbox card</title></head>
<body style="font-family: system-ui, sans-serif; max-width: 40rem; margin: 4rem auto">
  <h1>Sandbox card</h1>
  <p>No Stripe key is configured, so this stands in for Stripe Checkout in setup mode. Save a card with
  <code>POST /dev/payment-method/${esc(params.sessionId)}/complete</code> and <code>{"card": "…"}</code>, one of
  Stripe's test cards; the card's name chooses how auto top-ups of it end:</p>
  <ul>${SANDBOX_CARD_NAMES.map((n) => `<li><code>${esc(n)}</code> (${esc(SANDBOX_CARDS[n].brand)} •••• ${esc(SANDBOX_CARDS[n].last4)}): ${esc(SANDBOX_CARDS[n].failure ?? 'succeeds')}</li>`).join('')}</ul>
</body></html>`,
  }),

  devPaymentMethodComplete: async ({ params, body, baseUrl }) =>
    deliverSigned(baseUrl, await sandboxSetupEvent(params.sessionId, body.card)),
});

/** Through HTTP, like Stripe: the webhook cannot tell the sandbox from the real thing. */
async function deliverSigned(baseUrl: string, event: { body: string; signature: string }) {
  const res = await fetch(`${baseUrl}/v1/webhooks/stripe`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'stripe-signature': event.signature },
    body: event.body,
  });
  return (await res.json()) as { received: true; outcome: WebhookOutcome };
}

// ---- the sandbox payment page ---------------------------------------------------------------------

/**
 * The sandbox stands in for Stripe Checkout, and behaves like it: while the invoice is open the
 * page offers its three outcomes; once it is paid or void the page says so, every button is
 * disabled, and (right after a click) it returns to the checkout's `successUrl` (paid, with
 * `{CHECKOUT_SESSION_ID}` replaced by the session id, as Stripe does) or `cancelUrl` (expired or
 * failed). Stripe sends a customer who leaves without paying to `cancel_url`; it never redirects
 * by itself when a session expires, and keeps a declined card on its form to try again. The
 * sandbox's two unpaid outcomes end the session (the invoice turns void), so both take that way out.
 * Opened again later, a paid or void invoice's page shows its state with a link back, as
 * Stripe's page for a completed or expired session does.
 *
 * No inline script: the page loads /dev/checkout-assets/sandbox.js and hands it the invoice
 * through data attributes; everything interpolated is escaped.
 */
function checkoutPage(item: InvoiceItem, baseUrl: string): string {
  const invoice = toInvoiceView(item);
  const money = (cents: number) => formatMoney(cents, invoice.currency);
  const amount = money(invoice.amountCents);
  const closed = invoice.status !== 'open';
  const returnUrl = closed ? returnUrlOf(item, baseUrl) : '';
  const outcome = outcomeOf(item);
  const disabled = closed ? ' disabled' : '';
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><link rel="icon" href="data:,"><title>Sandbox payment ${esc(invoice.number)}</title></head>
<body style="font-family: system-ui, sans-serif; max-width: 32rem; margin: 4rem auto">
  <h1>Sandbox payment</h1>
  <p>No Stripe key is configured, so this page stands in for Stripe Checkout. Paying sends the same signed
  <code>checkout.session.completed</code> webhook Stripe would send.</p>
  <p>Invoice <strong>${esc(invoice.number)}</strong>: <strong>${esc(amount)}</strong> (status <span id="status">${esc(invoice.status)}</span>)</p>
  <p><button type="button" data-outcome="paid"${disabled}>Pay ${esc(amount)}</button> <button type="button" data-outcome="expired"${disabled}>Let it expire</button> <button type="button" data-outcome="failed"${disabled}>Payment fails</button></p>
  <p id="outcome" role="status" data-outcome="${esc(outcome?.kind ?? '')}">${esc(outcome?.text ?? '')}</p>
  <p id="returning"${closed ? '' : ' hidden'}><a id="return" href="${esc(returnUrl)}">Return to the site</a></p>
  <pre id="result"></pre>
  <script src="/dev/checkout-assets/sandbox.js" id="session" data-invoice="${esc(invoice.id)}" data-status="${esc(invoice.status)}" data-return-url="${esc(returnUrl)}"></script>
</body></html>`;

  function outcomeOf(i: InvoiceItem): { kind: 'paid' | 'expired' | 'failed' | 'void'; text: string } | undefined {
    const number = invoice.number;
    if (i.status === 'paid') {
      return {
        kind: 'paid',
        text: `Payment complete: ${amount} paid, ${money(invoice.creditedCents)} credited. Invoice ${number} is paid.`,
      };
    }
    if (i.status !== 'void') return undefined;
    // The webhook records why (shared/payments/checkout.ts: voidUnpaid).
    if (i.voidReason === 'payment session expired') {
      return { kind: 'expired', text: `The checkout session expired: nothing was charged. Invoice ${number} is void.` };
    }
    if (i.voidReason === 'payment failed') {
      return { kind: 'failed', text: `The payment failed: nothing was charged. Invoice ${number} is void.` };
    }
    return { kind: 'void', text: `Invoice ${number} is void${i.voidReason ? ` (${i.voidReason})` : ''}: nothing was charged.` };
  }
}

/** Where the page returns to: the URLs the checkout kept, else the defaults every checkout uses. */
function returnUrlOf(item: InvoiceItem, baseUrl: string): string {
  const urls = returnUrls(getConfig().payments, baseUrl, item);
  if (item.status !== 'paid') return urls.cancelUrl;
  return urls.successUrl.replaceAll('{CHECKOUT_SESSION_ID}', encodeURIComponent(item.sessionId ?? ''));
}

const esc = (text: string): string =>
  text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

/** How long the outcome stays on screen before the page returns to the site. */
const RETURN_DELAY_MS = 1500;

/**
 * The page's script. A click disables every button at once (a double click sends one request),
 * sends the outcome, then reads the invoice again (the page as the server now renders it) and
 * shows what happened before returning to the site. If the request fails, the buttons come back.
 */
const CHECKOUT_SCRIPT = `'use strict';
(() => {
  const session = document.currentScript.dataset;
  const buttons = [...document.querySelectorAll('button[data-outcome]')];
  const outcome = document.getElementById('outcome');
  const status = document.getElementById('status');
  const returning = document.getElementById('returning');
  const link = document.getElementById('return');
  const result = document.getElementById('result');
  const setDisabled = (value) => { for (const b of buttons) b.disabled = value; };
  let busy = session.status !== 'open';
  setDisabled(busy);

  const returnTo = (url) => {
    const target = new URL(url, location.href);
    if (target.protocol !== 'https:' && target.protocol !== 'http:') return;
    link.href = target.href;
    link.textContent = 'Return to the site now';
    returning.hidden = false;
    returning.prepend('Returning to ' + target.href + ' in ${RETURN_DELAY_MS / 1000} s. ');
    setTimeout(() => location.assign(target.href), ${RETURN_DELAY_MS});
  };

  const complete = async (choice) => {
    if (busy) return;
    busy = true;
    setDisabled(true);
    outcome.dataset.outcome = '';
    outcome.textContent = 'Processing…';
    try {
      const res = await fetch('/dev/checkout/' + encodeURIComponent(session.invoice) + '/complete', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ outcome: choice }),
      });
      const ack = await res.json();
      result.textContent = JSON.stringify(ack, null, 2);
      if (!res.ok) throw new Error(ack.error && ack.error.message ? ack.error.message : 'HTTP ' + res.status);
      // Read the invoice again: the state the webhook left it in, not the one we hoped for.
      const page = await fetch('/dev/checkout/' + encodeURIComponent(session.invoice), { cache: 'no-store' });
      if (!page.ok) throw new Error('HTTP ' + page.status + ' reading the invoice');
      const now = new DOMParser().parseFromString(await page.text(), 'text/html');
      const state = now.getElementById('session').dataset;
      if (state.status === 'open') throw new Error('the invoice is still open (webhook: ' + ack.outcome + ')');
      const told = now.getElementById('outcome');
      status.textContent = state.status;
      outcome.dataset.outcome = told.dataset.outcome;
      outcome.textContent = told.textContent;
      returnTo(state.returnUrl);
    } catch (err) {
      outcome.textContent = 'Could not finish: ' + (err && err.message ? err.message : String(err)) + '. Try again.';
      busy = false;
      setDisabled(false);
    }
  };

  for (const button of buttons) button.addEventListener('click', () => complete(button.dataset.outcome));
})();
`;
