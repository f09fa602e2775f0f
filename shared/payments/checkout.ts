import type { z } from 'zod';
import { checkoutBranding } from '../brand/checkout.ts';
import type { BillingConfig, CheckoutRequest, WebhookOutcome } from '../api/schemas.ts';
import { getConfig } from '../config/env.ts';
import type { InvoiceItem } from '../db/items.ts';
import { ApiError } from '../errors.ts';
import { attachSession, findInvoiceItem, openInvoice, toInvoiceView, voidInvoice, wasPaid } from '../invoices/index.ts';
import { errorFields, logger } from '../observability/logger.ts';
import { getSettings } from '../settings/index.ts';
import { requireSeller } from '../invoices/parties.ts';
import type { CheckoutSession } from './checkout-event.ts';
import { creditInvoice, paymentActivity } from './credit.ts';
import { paymentsConfig, returnUrls, stripe } from './stripe-client.ts';
import { checkoutTaxabilityReason, recordTaxTransaction } from './stripe-tax.ts';
import { checkoutLines, stripeTaxParams, topUpTax } from './topup-tax.ts';
import { stripeTaxReason } from '../invoices/tax.ts';

/**
 * Top-ups through Stripe Checkout (ARCHITECTURE.md, "Money"). Checkout opens the invoice and a
 * hosted payment session; only the signed webhook credits (event-router.ts), exactly once per
 * invoice however often and in whatever order Stripe delivers. The sandbox's payment page (dev/)
 * finishes through the very same signed webhook.
 */
export async function billingConfig(): Promise<z.infer<typeof BillingConfig>> {
  const settings = await getSettings();
  const { provider } = getConfig().payments;
  return {
    currency: settings.currency,
    minimumTopUpCents: settings.minimumTopUpCents,
    maximumTopUpCents: settings.maximumTopUpCents,
    bonusPercent: settings.topUpBonusPercent,
    paymentsEnabled: provider !== null,
    provider: provider ?? 'stripe',
  };
}

/** Opens an invoice and a payment session; the customer pays at `url`. */
export async function startCheckout(
  principal: { accountId: string; email: string },
  input: z.infer<typeof CheckoutRequest>,
  baseUrl: string,
): Promise<{ url: string; invoiceNumber: string; invoiceId: string }> {
  const config = await paymentsConfig();
  if (!config.provider) throw new ApiError('payments_unavailable', 'Payments are not configured on this platform');
  const settings = await getSettings();
  if (input.amountCents < settings.minimumTopUpCents || input.amountCents > settings.maximumTopUpCents) {
    throw new ApiError('validation_failed', `amountCents must be between ${settings.minimumTopUpCents} and ${settings.maximumTopUpCents}`, {
      issues: [{ field: 'body.amountCents', message: `must be between ${settings.minimumTopUpCents} and ${settings.maximumTopUpCents}` }],
    });
  }
  // Before the number is taken: an invoice never goes out without a seller.
  await requireSeller();
  const invoice = await openInvoice({
    accountId: principal.accountId,
    amountCents: input.amountCents,
    bonusPercent: settings.topUpBonusPercent,
    provider: config.provider,
    ...(await topUpTax(principal.accountId, input.amountCents, settings.tax)),
  });

  const { successUrl, cancelUrl } = returnUrls(config, baseUrl, input);

  if (config.provider === 'sandbox') {
    const sessionId = `cs_sandbox_${invoice.id.replace(/-/g, '')}`;
    // Kept on the invoice as Stripe keeps them on the session: the sandbox page returns there.
    await attachSession(invoice, principal.accountId, sessionId, { successUrl, cancelUrl });
    return { url: `${baseUrl}/dev/checkout/${invoice.id}`, invoiceNumber: invoice.number, invoiceId: invoice.id };
  }

  const metadata = { invoice_id: invoice.id, invoice_number: invoice.number, account_id: principal.accountId };
  try {
    const session = await (await stripe(config)).checkout.sessions.create(
      {
        mode: 'payment',
        line_items: checkoutLines(invoice, `Credit top-up ${invoice.number}`),
        ...stripeTaxParams(invoice),
        branding_settings: checkoutBranding(settings.brand),
        client_reference_id: invoice.id,
        customer_email: principal.email,
        metadata,
        payment_intent_data: { metadata },
        success_url: successUrl,
        cancel_url: cancelUrl,
        expires_at: Math.floor(Date.now() / 1000) + 3600,
      },
      // Our own key: a retried checkout Lambda gets the same session, not a second one.
      { idempotencyKey: `checkout:${invoice.id}` },
    );
    if (!session.url) throw new Error('Stripe returned a session without a URL');
    await attachSession(invoice, principal.accountId, session.id);
    return { url: session.url, invoiceNumber: invoice.number, invoiceId: invoice.id };
  } catch (err) {
    // The number stays used (no gap); the invoice says what happened.
    await voidInvoice(invoice, principal.accountId, 'payment page could not be opened');
    logger.error('checkout: Stripe session failed', { invoiceId: invoice.id, ...errorFields(err) });
    throw new ApiError('payment_provider_error', 'The payment provider could not open a payment page; nothing was charged, try again', {
      invoiceNumber: invoice.number,
    });
  }
}

// ---- the session's events (routed here by event-router.ts) --------------------------------------

/** Voids an open invoice whose payment will not come; a paid one stays paid. */
export async function voidUnpaid(session: CheckoutSession, eventType: string, reason: string): Promise<WebhookOutcome> {
  const item = await invoiceOf(session);
  if (!item) return 'unknown_invoice';
  const voided = await voidInvoice(toInvoiceView(item), item.accountId, reason);
  // A refunded or disputed invoice was paid: it is kept as paid.
  if (!voided) return `kept_${wasPaid(item.status) ? 'paid' : item.status}` as WebhookOutcome;
  await paymentActivity(item.accountId, toInvoiceView(item), 'billing.invoice_void', { event: eventType });
  return 'voided';
}

/**
 * The tax Stripe Tax added to a paid session: the net it taxed, the tax, the buyer's country, and
 * with none charged the reason Stripe gives (read once: a paid invoice keeps what it states).
 */
async function stripeTaxOf(session: CheckoutSession, item: InvoiceItem) {
  const taxCents = session.total_details?.amount_tax ?? 0;
  const why = taxCents === 0 && !wasPaid(item.status) ? await checkoutTaxabilityReason(session, item.provider) : null;
  return {
    netCents: session.amount_subtotal ?? null,
    taxCents,
    country: session.customer_details?.address?.country ?? null,
    ...stripeTaxReason(taxCents, why),
  };
}

async function invoiceOf(session: CheckoutSession) {
  const invoiceId = session.client_reference_id ?? session.metadata?.invoice_id;
  if (!invoiceId) return undefined;
  const item = await findInvoiceItem(invoiceId);
  if (!item) logger.warn('stripe webhook for an unknown invoice', { invoiceId, sessionId: session.id });
  return item;
}

/** A Checkout Session paid: its invoice is credited (creditInvoice); the invoice, for what the router does next. */
export async function creditCheckout(session: CheckoutSession): Promise<{ outcome: WebhookOutcome; item?: InvoiceItem }> {
  const item = await invoiceOf(session);
  if (!item) return { outcome: 'unknown_invoice' };
  const paymentIntent = typeof session.payment_intent === 'string' ? session.payment_intent : (session.payment_intent?.id ?? null);
  // An auto top-up paid on its page (authentication required) was taxed by its calculation when it opened.
  const statedAtPayment = item.tax?.treatment === 'stripe' && !item.taxCalculationId;
  const outcome = await creditInvoice(item, {
    amountCents: session.amount_total,
    currency: session.currency,
    sessionId: session.id,
    paymentIntentId: paymentIntent,
    note: 'Card top-up',
    ...(statedAtPayment ? { stripeTax: await stripeTaxOf(session, item) } : {}),
  });
  if (outcome === 'credited' || outcome === 'already_fulfilled') await recordTaxTransaction(item);
  return { outcome, item };
}
