import { createGroupHandler } from '../shared/http/handler.ts';
import { getConfig } from '../shared/config/env.ts';
import { runPassInProcess } from '../shared/billing/pass.ts';
import { reconcileAll } from '../shared/servers/reconcile.ts';
import { sandboxEvent } from '../shared/payments/index.ts';
import { findInvoiceItem, toInvoiceView } from '../shared/invoices/index.ts';
import { notFound } from '../shared/errors.ts';
import { localJwks, mintSessionToken } from './local-idp.ts';

/** The `/dev/*` routes: local stack only, never part of the AWS deployment. */
export const handler = createGroupHandler('dev', {
  devSession: async ({ body }) => mintSessionToken(getConfig().oidc!.issuer, body.email),
  devJwks: async () => localJwks() as Promise<{ keys: Record<string, unknown>[] }>,

  devBillingRun: async ({ body }) => runPassInProcess(body.at ? new Date(body.at) : new Date()),

  devReconcile: async () => reconcileAll(),

  devCheckoutPage: async ({ params }) => {
    const item = await findInvoiceItem(params.invoiceId);
    if (!item) throw notFound('Invoice');
    const invoice = toInvoiceView(item);
    const dollars = (invoice.amountCents / 100).toFixed(2);
    return {
      contentType: 'text/html; charset=utf-8',
      body: `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Sandbox payment ${invoice.number}</title></head>
<body style="font-family: system-ui, sans-serif; max-width: 32rem; margin: 4rem auto">
  <h1>Sandbox payment</h1>
  <p>No Stripe key is configured, so this page stands in for Stripe Checkout. Paying sends the same signed
  <code>checkout.session.completed</code> webhook Stripe would send.</p>
  <p>Invoice <strong>${invoice.number}</strong>: <strong>$${dollars}</strong> (status <span id="status">${invoice.status}</span>)</p>
  <button data-outcome="paid">Pay $${dollars}</button> <button data-outcome="expired">Let it expire</button> <button data-outcome="failed">Payment fails</button>
  <pre id="result"></pre>
  <script src="/dev/checkout-assets/sandbox.js" data-invoice="${invoice.id}"></script>
</body></html>`,
    };
  },

  devCheckoutScript: async () => ({
    contentType: 'text/javascript; charset=utf-8',
    body: `const invoice = document.currentScript.dataset.invoice;
for (const button of document.querySelectorAll('button[data-outcome]')) {
  button.addEventListener('click', async () => {
    const res = await fetch('/dev/checkout/' + invoice + '/complete', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ outcome: button.dataset.outcome }) });
    document.getElementById('result').textContent = JSON.stringify(await res.json(), null, 2);
  });
}`,
  }),

  devCheckoutComplete: async ({ params, body, baseUrl }) => {
    const { body: payload, signature } = await sandboxEvent(params.invoiceId, body.outcome);
    // Through HTTP, like Stripe: the webhook cannot tell the sandbox from the real thing.
    const res = await fetch(`${baseUrl}/v1/webhooks/stripe`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'stripe-signature': signature },
      body: payload,
    });
    return (await res.json()) as { received: true; outcome: string };
  },
});
