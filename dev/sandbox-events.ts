import { accessPatterns } from '../shared/db/access-patterns.ts';
import { ApiError } from '../shared/errors.ts';
import { findInvoiceItem, toInvoiceView } from '../shared/invoices/index.ts';
import type { SandboxCard } from '../shared/payments/autotopup.ts';
import { signedSandboxEvent } from '../shared/payments/sandbox.ts';

/**
 * What the local sandbox's pages send when the customer clicks (dev/handler.ts): the signed events
 * Stripe would send after a checkout or a card setup. Local only: never deployed.
 */

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
  return signedSandboxEvent(type, {
    id: invoice.payment.sessionId,
    object: 'checkout.session',
    mode: 'payment',
    status: outcome === 'paid' ? 'complete' : outcome === 'expired' ? 'expired' : 'complete',
    payment_status: outcome === 'paid' ? 'paid' : 'unpaid',
    amount_total: invoice.amountCents,
    currency: 'usd',
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
