import type Stripe from 'stripe';
import type { z } from 'zod';
import { getConfig, type PaymentsConfig } from '../config/env.ts';
import type { InvoiceItem } from '../db/items.ts';
import { SECRET_CACHE_MS } from '../secrets/index.ts';
import { ApiError } from '../errors.ts';
import type { WebhookOutcome } from '../api/schemas.ts';
import { getSettings } from '../settings/index.ts';
import { appendLedger } from '../ledger/index.ts';
import { unsuspendAfterCredit } from '../servers/suspension.ts';
import {
  attachSession,
  findInvoiceItem,
  invoicePaidEvent,
  invoicePaidWrite,
  openInvoice,
  paymentIntentPointer,
  wasPaid,
  toInvoiceView,
  voidInvoice,
  type InvoiceView,
} from '../invoices/index.ts';
import { logger, errorFields } from '../observability/logger.ts';
import { recordSystemActivity } from '../audit/index.ts';
import { type CheckoutSession, EventEnvelope, parseEvent, readCheckoutEvent } from './checkout-event.ts';
import { isHandledStripeEvent } from './stripe-events.ts';
import { readReversalEvent } from './refund-event.ts';
import { signedSandboxEvent } from './sandbox.ts';
import { bookReversal } from './refunds.ts';
import { autoTopUpFailed, autoTopUpPaid, resumeAfterPayment, saveCard } from './autotopup.ts';
import { readAutoTopUpEvent } from './autotopup-event.ts';
import type { BillingConfig, CheckoutRequest } from '../api/schemas.ts';

/**
 * Top-ups through Stripe Checkout (ARCHITECTURE.md, "Money"). Checkout opens the invoice
 * and a hosted payment session; only the signed webhook credits, exactly once per invoice however
 * often and in whatever order Stripe delivers. Without STRIPE_SECRET_KEY the local stack runs a
 * sandbox: its payment page finishes through the very same signed webhook.
 */
let stripeClient: { key: string; client: Stripe } | undefined;

/**
 * Stripe's library (≈ 240 KB) is loaded on the first checkout or webhook, not at every cold start
 * of the billing and payments functions (a lazily loaded chunk of their bundles, infra/bundle.ts).
 */
export async function stripe(config: PaymentsConfig): Promise<Stripe> {
  // The sandbox only signs and verifies webhooks; it never calls Stripe, so any key will do.
  const key = config.stripeSecretKey ?? 'sk_test_sandbox';
  const id = `${key}|${config.stripeApiUrl ?? ''}`;
  if (stripeClient?.key !== id) {
    const { default: Stripe } = await import('stripe');
    const api = config.stripeApiUrl ? new URL(config.stripeApiUrl) : undefined;
    stripeClient = {
      key: id,
      client: new Stripe(key, {
        maxNetworkRetries: 2,
        timeout: 10_000,
        telemetry: false,
        ...(api
          ? {
              host: api.hostname,
              port: Number(api.port || (api.protocol === 'https:' ? 443 : 80)),
              protocol: api.protocol.replace(':', '') as 'http' | 'https',
            }
          : {}),
      }),
    };
  }
  return stripeClient.client;
}

/**
 * The payment configuration. In AWS the Stripe keys live in Secrets Manager (STRIPE_SECRET_ARN,
 * JSON `{"secretKey", "webhookSecret"}`), read on first use and kept for SECRET_CACHE_MS, so a
 * rotated key is picked up without a deploy; elsewhere they come from the environment.
 */
let stripeSecret: { arn: string; at: number; value: { secretKey: string; webhookSecret: string } } | undefined;
let secretsClient: import('@aws-sdk/client-secrets-manager').SecretsManagerClient | undefined;

export async function paymentsConfig(): Promise<PaymentsConfig> {
  const config = getConfig().payments;
  if (!config.stripeSecretArn) return config;
  if (!stripeSecret || stripeSecret.arn !== config.stripeSecretArn || Date.now() - stripeSecret.at > SECRET_CACHE_MS) {
    const sm = await import('@aws-sdk/client-secrets-manager');
    secretsClient ??= new sm.SecretsManagerClient({});
    const out = await secretsClient.send(new sm.GetSecretValueCommand({ SecretId: config.stripeSecretArn }));
    const value = JSON.parse(out.SecretString ?? '{}') as { secretKey?: string; webhookSecret?: string };
    if (!value.secretKey || !value.webhookSecret) throw new Error('The Stripe secret must hold {"secretKey", "webhookSecret"}');
    stripeSecret = {
      arn: config.stripeSecretArn,
      at: Date.now(),
      value: { secretKey: value.secretKey, webhookSecret: value.webhookSecret },
    };
  }
  return { ...config, stripeSecretKey: stripeSecret.value.secretKey, webhookSecret: stripeSecret.value.webhookSecret };
}

export async function billingConfig(): Promise<z.infer<typeof BillingConfig>> {
  const settings = await getSettings();
  const { provider } = getConfig().payments;
  return {
    currency: 'usd',
    minimumTopUpCents: settings.minimumTopUpCents,
    maximumTopUpCents: settings.maximumTopUpCents,
    bonusPercent: settings.topUpBonusPercent,
    paymentsEnabled: provider !== null,
    provider: provider ?? 'stripe',
  };
}

export const bonusFor = (amountCents: number, bonusPercent: number): number => Math.floor((amountCents * bonusPercent) / 100);

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
  const invoice = await openInvoice({
    accountId: principal.accountId,
    amountCents: input.amountCents,
    bonusPercent: settings.topUpBonusPercent,
    provider: config.provider,
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
        line_items: [
          {
            quantity: 1,
            price_data: { currency: 'usd', unit_amount: input.amountCents, product_data: { name: `Credit top-up ${invoice.number}` } },
          },
        ],
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

// ---- the webhook --------------------------------------------------------------------------------

/** Stripe's default tolerance: its library refuses a signature older than this, and we one dated further ahead. */
const SIGNATURE_TOLERANCE_S = 300;

/** Verifies the signature over the raw body with Stripe's own library, and its timestamp both ways. */
export async function verifyStripeEvent(rawBody: string, signature: string | undefined, receivedAtMs = Date.now()): Promise<Stripe.Event> {
  const config = await paymentsConfig();
  if (!config.webhookSecret) throw new ApiError('payments_unavailable', 'Webhooks are not configured (STRIPE_WEBHOOK_SECRET)');
  if (!signature) return refuseSignature('no signature');
  const client = await stripe(config);
  let event: Stripe.Event;
  try {
    event = client.webhooks.constructEvent(rawBody, signature, config.webhookSecret, SIGNATURE_TOLERANCE_S, undefined, receivedAtMs);
  } catch {
    return refuseSignature('signature mismatch or too old');
  }
  if (isDatedAhead(signature, receivedAtMs)) return refuseSignature('timestamp in the future');
  return event;
}

/**
 * Stripe's library refuses only old timestamps. One from the future is as suspect: a clock far
 * off, or a delivery signed ahead to be replayed later, after an old one would have run out.
 */
function isDatedAhead(signature: string, receivedAtMs: number): boolean {
  const signedAt = signedAtSeconds(signature);
  return !Number.isFinite(signedAt) || signedAt > Math.floor(receivedAtMs / 1000) + SIGNATURE_TOLERANCE_S;
}

/** The signed `t=` of a Stripe-Signature, read as Stripe's library reads it (the last `t=` wins). */
function signedAtSeconds(signature: string): number {
  const timestamps = signature
    .split(',')
    .map((part) => part.split('='))
    .filter(([name]) => name === 't');
  return Number.parseInt(timestamps.at(-1)?.[1] ?? '', 10);
}

function refuseSignature(reason: 'no signature' | 'signature mismatch or too old' | 'timestamp in the future'): never {
  // A metric filter counts these (an alarm watches for forged or misconfigured deliveries).
  logger.warn('stripe webhook rejected', { reason });
  throw new ApiError(
    'invalid_signature',
    reason === 'no signature'
      ? 'Missing Stripe-Signature header'
      : 'The Stripe-Signature does not match this body, or its timestamp is more than 5 minutes from the time it arrived',
  );
}

/** Where a checkout returns to: the caller's URLs, else the platform's, else the API reference. */
export function returnUrls(
  config: Pick<PaymentsConfig, 'successUrl' | 'cancelUrl'>,
  baseUrl: string,
  input: { successUrl?: string; cancelUrl?: string } = {},
): { successUrl: string; cancelUrl: string } {
  const fallback = config.successUrl ?? `${baseUrl}/docs`;
  return { successUrl: input.successUrl ?? fallback, cancelUrl: input.cancelUrl ?? config.cancelUrl ?? fallback };
}

/**
 * Acts on a verified event (a webhook delivery, or one the reconciliation run listed from Stripe);
 * an event of a listed type it cannot read is 400 before anything changes.
 */
export async function handleStripeEvent(event: unknown): Promise<WebhookOutcome> {
  // Only the types of the one list (stripe-events.ts) are booked: a type handled below but not listed
  // there would be missed by the endpoint's subscription and the reconciliation run alike.
  if (!isHandledStripeEvent(parseEvent(EventEnvelope, event).type)) return 'ignored';
  const reversal = readReversalEvent(event);
  if (reversal === 'ignored') return 'ignored';
  if (reversal) return bookReversal(reversal);
  // An auto top-up's off-session PaymentIntent (a Checkout payment's own PaymentIntent events are ignored).
  const autoTopUp = readAutoTopUpEvent(event);
  if (autoTopUp)
    return autoTopUp.type === 'payment_intent.succeeded' ? autoTopUpPaid(autoTopUp.data.object) : autoTopUpFailed(autoTopUp.data.object);
  const checkout = readCheckoutEvent(event);
  if (!checkout) return 'ignored';
  const session = checkout.data.object;
  // A card saved for auto top-up (Checkout in setup mode): nothing to credit.
  if (session.mode === 'setup') return checkout.type === 'checkout.session.completed' ? saveCard(session) : 'ignored';
  switch (checkout.type) {
    case 'checkout.session.completed':
      return session.payment_status === 'paid' ? fulfil(session) : 'awaiting_payment';
    case 'checkout.session.async_payment_succeeded':
      return fulfil(session);
    case 'checkout.session.expired':
      return voidUnpaid(session, checkout.type, 'payment session expired');
    case 'checkout.session.async_payment_failed':
      return voidUnpaid(session, checkout.type, 'payment failed');
  }
}

/** Voids an open invoice whose payment will not come; a paid one stays paid. */
async function voidUnpaid(session: CheckoutSession, eventType: string, reason: string): Promise<WebhookOutcome> {
  const item = await invoiceOf(session);
  if (!item) return 'unknown_invoice';
  const voided = await voidInvoice(toInvoiceView(item), item.accountId, reason);
  // A refunded or disputed invoice was paid: it is kept as paid.
  if (!voided) return `kept_${wasPaid(item.status) ? 'paid' : item.status}` as WebhookOutcome;
  await paymentActivity(item.accountId, toInvoiceView(item), 'billing.invoice_void', { event: eventType });
  return 'voided';
}

async function invoiceOf(session: CheckoutSession) {
  const invoiceId = session.client_reference_id ?? session.metadata?.invoice_id;
  if (!invoiceId) return undefined;
  const item = await findInvoiceItem(invoiceId);
  if (!item) logger.warn('stripe webhook for an unknown invoice', { invoiceId, sessionId: session.id });
  return item;
}

/** A Checkout Session paid: its invoice is credited (creditInvoice). */
async function fulfil(session: CheckoutSession): Promise<WebhookOutcome> {
  const item = await invoiceOf(session);
  if (!item) return 'unknown_invoice';
  const paymentIntent = typeof session.payment_intent === 'string' ? session.payment_intent : (session.payment_intent?.id ?? null);
  const outcome = await creditInvoice(item, {
    amountCents: session.amount_total,
    currency: session.currency,
    sessionId: session.id,
    paymentIntentId: paymentIntent,
    note: 'Card top-up',
  });
  // An auto top-up that needed the customer's authentication, paid on its page: the rule turns back on.
  if (outcome === 'credited' || outcome === 'already_fulfilled') await resumeAfterPayment(item.accountId, item.invoiceId);
  return outcome;
}

/**
 * Paid: the top-up and the bonus as two ledger entries, and the invoice turning paid, in one
 * transaction whose guard keys (`topup:<invoice>`, `bonus:<invoice>`) make it happen once. The one
 * path for every payment: a Checkout Session, and an auto top-up's PaymentIntent (autotopup.ts).
 */
export async function creditInvoice(
  item: InvoiceItem,
  paid: { amountCents: number | null; currency: string | null; sessionId: string | null; paymentIntentId: string | null; note: string },
): Promise<WebhookOutcome> {
  const invoice: InvoiceView = toInvoiceView(item);
  if (paid.amountCents !== invoice.amountCents || (paid.currency ?? '').toLowerCase() !== invoice.currency) {
    logger.error('stripe webhook amount does not match the invoice; not credited', {
      invoiceId: invoice.id,
      expected: invoice.amountCents,
      got: paid.amountCents,
      currency: paid.currency,
    });
    return 'amount_mismatch';
  }
  const accountId = item.accountId;
  const bonus = bonusFor(invoice.amountCents, invoice.bonusPercent);
  const reference = { invoiceId: invoice.id, invoiceNumber: invoice.number };
  const paymentIntent = paid.paymentIntentId;
  const result = await appendLedger(
    accountId,
    [
      {
        type: 'topup',
        amountCents: invoice.amountCents,
        idempotencyKey: `topup:${invoice.id}`,
        reference: { ...reference, note: paid.note },
      },
      ...(bonus > 0
        ? [
            {
              type: 'bonus' as const,
              amountCents: bonus,
              idempotencyKey: `bonus:${invoice.id}`,
              reference: { ...reference, note: `Top-up bonus ${invoice.bonusPercent} %` },
            },
          ]
        : []),
    ],
    {
      extraItems: () => {
        const payment = { paidAt: new Date().toISOString(), bonusCents: bonus, sessionId: paid.sessionId, paymentIntentId: paymentIntent };
        // The invoice turns paid and its `invoice.paid` event is recorded with the credit, or neither.
        return [
          invoicePaidWrite(accountId, invoice, payment),
          invoicePaidEvent(item, payment),
          // Refunds and disputes name the PaymentIntent, not our invoice (shared/payments/refunds.ts).
          ...(paymentIntent ? [paymentIntentPointer(paymentIntent, invoice.id, accountId)] : []),
        ];
      },
    },
  );
  if (!result.applied) return 'already_fulfilled';
  await paymentActivity(accountId, invoice, 'billing.payment', {
    creditedCents: invoice.amountCents + bonus,
    bonusCents: bonus,
    ...(paid.sessionId ? { sessionId: paid.sessionId } : { paymentIntentId: paymentIntent }),
  });
  await unsuspendAfterCredit(accountId, 'top-up');
  return 'credited';
}

/** The account's activity log shows what the payment provider did (the webhook has no caller to log). */
async function paymentActivity(accountId: string, invoice: InvoiceView, action: string, details: Record<string, unknown>): Promise<void> {
  await recordSystemActivity({
    accountId,
    actor: 'stripe',
    action,
    target: `invoice:${invoice.id}`,
    details: { invoiceNumber: invoice.number, ...details },
  });
}

// ---- admin refunds ------------------------------------------------------------------------------

/**
 * Asks the provider to refund part or all of a paid invoice. Nothing is booked here: the signed
 * `charge.refunded` webhook books it (shared/payments/refunds.ts), exactly as for a refund made in
 * Stripe's dashboard, so one path books every refund once. The sandbox, which has no Stripe,
 * signs the charge.refunded event Stripe would send and hands it to the same webhook code.
 */
export async function refundInvoice(
  invoiceId: string,
  input: { amountCents: number; reason: string },
  idempotencyKey: string,
): Promise<{ refundId: string; amountCents: number; status: string; invoice: InvoiceView }> {
  const config = await paymentsConfig();
  if (!config.provider) throw new ApiError('payments_unavailable', 'Payments are not configured on this platform');
  const item = await findInvoiceItem(invoiceId);
  if (!item) throw new ApiError('not_found', 'Invoice not found');
  if (!wasPaid(item.status) || !item.paymentIntentId) {
    throw new ApiError('conflict', `Invoice ${item.number} is ${item.status}: there is no payment to refund`);
  }
  const left = item.amountCents - (item.refundedCents ?? 0);
  if (input.amountCents > left) {
    throw new ApiError('validation_failed', `amountCents must be at most ${left} (what is left unrefunded of ${item.number})`, {
      issues: [{ field: 'body.amountCents', message: `must be at most ${left}` }],
    });
  }
  const metadata = { invoice_id: item.invoiceId, invoice_number: item.number, reason: input.reason };
  if (config.provider === 'sandbox') {
    const refundId = `re_sandbox_${idempotencyKey.replace(/[^A-Za-z0-9]/g, '').slice(0, 24)}`;
    const { body, signature } = await signedSandboxEvent('charge.refunded', {
      id: `ch_sandbox_${item.paymentIntentId}`,
      object: 'charge',
      amount: item.amountCents,
      amount_refunded: (item.refundedCents ?? 0) + input.amountCents,
      currency: 'usd',
      payment_intent: item.paymentIntentId,
      metadata,
    });
    await handleStripeEvent(await verifyStripeEvent(body, signature));
    return { refundId, amountCents: input.amountCents, status: 'succeeded', invoice: toInvoiceView((await findInvoiceItem(invoiceId))!) };
  }
  try {
    const refund = await (await stripe(config)).refunds.create(
      { payment_intent: item.paymentIntentId, amount: input.amountCents, metadata },
      // The admin's Idempotency-Key (or the request id): a retried call is the same refund, not a second one.
      { idempotencyKey: `refund:${item.invoiceId}:${idempotencyKey}` },
    );
    return { refundId: refund.id, amountCents: refund.amount, status: refund.status ?? 'pending', invoice: toInvoiceView(item) };
  } catch (err) {
    logger.error('refund: Stripe refused or failed', { invoiceId: item.invoiceId, ...errorFields(err) });
    throw new ApiError(
      'payment_provider_error',
      'The payment provider did not refund; nothing was booked, check the payment and try again',
    );
  }
}
