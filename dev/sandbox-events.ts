import { randomUUID } from 'node:crypto';
import { getBillingProfile } from '../shared/accounts/billing-profile.ts';
import { EU_COUNTRIES } from '../shared/invoices/tax.ts';
import { getSettings } from '../shared/settings/index.ts';
import * as accessPatterns from '../shared/db/access-patterns.ts';
import { ApiError } from '../shared/errors.ts';
import { currencyOf } from '../shared/invoices/amounts.ts';
import { findInvoiceItem, toInvoiceView } from '../shared/invoices/index.ts';
import { handleStripeEvent } from '../shared/payments/event-router.ts';
import { installSandbox, type SandboxProvider } from '../shared/payments/sandbox.ts';
import { paymentsConfig, stripe, verifyStripeEvent } from '../shared/payments/stripe-client.ts';

/**
 * The local sandbox payment provider (no Stripe secret key). Local only, never deployed: the events
 * Stripe would send, signed here with the webhook secret as Stripe signs them, for what the pages
 * send when the customer clicks (dev/handler.ts), and for what the service asks of Stripe (the
 * hook of shared/payments/sandbox.ts: a saved card, an off-session charge, a refund), which go
 * through the same webhook code.
 */

/** The sandbox's cards: Stripe's test PaymentMethods, and what an off-session charge of each does. */
export const SANDBOX_CARDS = {
  pm_card_visa: { brand: 'visa', last4: '4242', failure: null },
  pm_card_chargeDeclined: { brand: 'visa', last4: '0002', failure: 'card_declined' },
  pm_card_authenticationRequired: { brand: 'visa', last4: '3155', failure: 'authentication_required' },
} as const;
export type SandboxCard = keyof typeof SANDBOX_CARDS;
export const SANDBOX_CARD_NAMES = Object.keys(SANDBOX_CARDS) as [SandboxCard, ...SandboxCard[]];

/** An event as Stripe sends it: the envelope around what happened (`fields`: its `type` and `data`). */
export function stripeEventBody(
  fields: Record<string, unknown>,
  id = `evt_sandbox_${Date.now()}_${Math.random().toString(36).slice(2, 8)}`,
): string {
  return JSON.stringify({
    id,
    object: 'event',
    api_version: '2025-01-27',
    created: Math.floor(Date.now() / 1000),
    livemode: false,
    pending_webhooks: 1,
    request: { id: null, idempotency_key: null },
    ...fields,
  });
}

/** An event body as Stripe would send it, signed with the webhook secret. */
export async function signedSandboxEvent(type: string, object: Record<string, unknown>): Promise<{ body: string; signature: string }> {
  const body = stripeEventBody({ type, data: { object } });
  const config = await paymentsConfig();
  const signature = (await stripe(config)).webhooks.generateTestHeaderString({ payload: body, secret: config.webhookSecret! });
  return { body, signature };
}

/** Signed, then checked and booked by the webhook's own code, in this process. */
async function book(type: string, object: Record<string, unknown>): Promise<void> {
  const { body, signature } = await signedSandboxEvent(type, object);
  await handleStripeEvent(await verifyStripeEvent(body, signature));
}

/** What the service asks of the sandbox in place of Stripe (shared/payments/sandbox.ts). */
export const sandboxProvider: SandboxProvider = {
  savedCard(setupIntentId) {
    const name = setupIntentId.replace(/^seti_sandbox_/, '') as SandboxCard;
    const card = SANDBOX_CARDS[name];
    return card ? { paymentMethodId: name, brand: card.brand, last4: card.last4 } : null;
  },

  async charge({ customerId, paymentMethodId, amountCents, metadata }) {
    const card = SANDBOX_CARDS[paymentMethodId as SandboxCard] ?? SANDBOX_CARDS.pm_card_chargeDeclined;
    const failure = card.failure;
    await book(failure ? 'payment_intent.payment_failed' : 'payment_intent.succeeded', {
      id: `pi_sandbox_${metadata.invoice_id!.replace(/-/g, '').slice(0, 24)}`,
      object: 'payment_intent',
      amount: amountCents,
      amount_received: failure ? 0 : amountCents,
      currency: await currencyOfInvoice(metadata.invoice_id),
      status: failure ? 'requires_payment_method' : 'succeeded',
      customer: customerId,
      payment_method: paymentMethodId,
      metadata,
      last_payment_error: failure
        ? { code: failure, decline_code: failure === 'card_declined' ? 'generic_decline' : null, type: 'card_error' }
        : null,
    });
  },

  async calculateTax(params) {
    const country = params.customer_details?.address?.country;
    if (!country) {
      throw Object.assign(new Error('Stripe Tax cannot determine the customer’s tax location'), {
        statusCode: 400,
        code: 'customer_tax_location_invalid',
      });
    }
    const net = params.line_items.reduce((total, line) => total + line.amount, 0);
    const origin = (await getSettings()).invoiceIssuer.address.country ?? '';
    const { taxCents, taxabilityReason } = sandboxStripeTax(net, country, origin, Boolean(params.customer_details?.tax_ids?.length));
    return {
      id: `taxcalc_sandbox_${randomUUID().replace(/-/g, '')}`,
      amount_total: net + taxCents,
      customer_details: { address: { country } },
      tax_breakdown: [{ amount: taxCents, taxability_reason: taxabilityReason, tax_rate_details: { country } }],
    };
  },

  async refund({ paymentIntentId, amountCents, refundedCents, metadata }) {
    await book('charge.refunded', {
      id: `ch_sandbox_${paymentIntentId}`,
      object: 'charge',
      amount: amountCents,
      amount_refunded: refundedCents,
      currency: await currencyOfInvoice(metadata.invoice_id),
      payment_intent: paymentIntentId,
      metadata,
    });
  },
};

/** Stripe states every charge and refund in the currency of its payment: the invoice's. */
async function currencyOfInvoice(invoiceId: string | undefined): Promise<string> {
  const item = invoiceId ? await findInvoiceItem(invoiceId) : undefined;
  return item ? currencyOf(item) : 'usd';
}

/** Called by the local stack (dev/stack.ts) as it starts. */
export const installSandboxProvider = (): void => installSandbox(sandboxProvider);

/**
 * The sandbox's Stripe Tax (setting `tax` treatment `stripe`): fixed rates in basis points by the
 * country of the buyer's billing profile (Checkout would collect the address), rounded half up as
 * Stripe rounds; any other country, or none, 0.
 */
export const SANDBOX_STRIPE_TAX_RATES: Record<string, number> = { DE: 1900, FR: 2000, NL: 2100, GB: 2000 };

/**
 * The sandbox's Stripe Tax on `net` for a buyer in `country`, the seller in `origin`: an EU business
 * (a VAT id given) in another EU country is a reverse charge; a country without a rate, not collected.
 */
export function sandboxStripeTax(net: number, country: string, origin: string, business: boolean) {
  if (business && EU_COUNTRIES.has(country) && EU_COUNTRIES.has(origin) && country !== origin) {
    return { taxCents: 0, taxabilityReason: 'reverse_charge' };
  }
  const rate = SANDBOX_STRIPE_TAX_RATES[country];
  if (rate === undefined) return { taxCents: 0, taxabilityReason: 'not_collecting' };
  return { taxCents: Math.round((net * rate) / 10_000), taxabilityReason: 'standard_rated' };
}

/** The event Stripe would send for this invoice, signed with the webhook secret. */
export async function sandboxEvent(
  invoiceId: string,
  outcome: 'paid' | 'expired' | 'failed',
): Promise<{ body: string; signature: string }> {
  const item = await findInvoiceItem(invoiceId);
  if (!item) throw new ApiError('not_found', 'Invoice not found');
  const invoice = toInvoiceView(item);
  const type =
    outcome === 'paid'
      ? 'checkout.session.completed'
      : outcome === 'expired'
        ? 'checkout.session.expired'
        : 'checkout.session.async_payment_failed';
  // Stripe Tax states its tax when the session is paid; the rate table and no tax fixed it at opening.
  const profile = invoice.tax.treatment === 'stripe' ? await getBillingProfile(item.accountId) : null;
  const country = profile?.address.country ?? null;
  const origin = (await getSettings()).invoiceIssuer.address.country ?? '';
  const business = Boolean(profile?.vatId && profile.vatCheck?.valid);
  const computed = country ? sandboxStripeTax(invoice.tax.netCents, country, origin, business) : null;
  const stripeTax = computed?.taxCents ?? 0;
  return signedSandboxEvent(type, {
    id: invoice.payment.sessionId,
    object: 'checkout.session',
    mode: 'payment',
    status: outcome === 'paid' ? 'complete' : outcome === 'expired' ? 'expired' : 'complete',
    payment_status: outcome === 'paid' ? 'paid' : 'unpaid',
    // As Stripe states a session: the subtotal (net), the tax on top, the total the card pays.
    amount_subtotal: invoice.tax.netCents,
    amount_total: invoice.tax.grossCents + stripeTax,
    total_details: {
      amount_discount: 0,
      amount_shipping: 0,
      amount_tax: invoice.tax.taxCents + stripeTax,
      // As a session read back with `expand: ['total_details.breakdown']` shows it: why Stripe Tax charged what it did.
      ...(computed ? { breakdown: { taxes: [{ amount: stripeTax, taxability_reason: computed.taxabilityReason }] } } : {}),
    },
    customer_details: country ? { address: { country } } : null,
    currency: invoice.currency,
    client_reference_id: invoice.id,
    metadata: { invoice_id: invoice.id, invoice_number: invoice.number },
    payment_intent: `pi_sandbox_${invoice.id.replace(/-/g, '').slice(0, 16)}`,
  });
}

/**
 * The `checkout.session.completed` (setup mode) Stripe would send once the customer saved `card`
 * on the sandbox's card page, signed with the webhook secret (the sandbox only).
 */
export async function sandboxSetupEvent(sessionId: string, card: SandboxCard): Promise<{ body: string; signature: string }> {
  const accountId = /^cs_sandbox_setup_([0-9a-f-]{36})_[0-9a-f]+$/.exec(sessionId)?.[1];
  const item = accountId ? await accessPatterns.autoTopUpOf(accountId) : undefined;
  if (!accountId || !item) throw new ApiError('not_found', 'Card setup session not found');
  return signedSandboxEvent('checkout.session.completed', {
    id: sessionId,
    object: 'checkout.session',
    mode: 'setup',
    status: 'complete',
    payment_status: 'no_payment_required',
    amount_total: null,
    currency: null,
    customer: item.customerId ?? null,
    client_reference_id: accountId,
    metadata: { account_id: accountId, purpose: 'auto_topup_card' },
    setup_intent: `seti_sandbox_${card}`,
  });
}
