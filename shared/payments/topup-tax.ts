import { billingProfileChecked } from '../accounts/billing-profile.ts';
import type { SettingsValue } from '../api/schemas/settings.ts';
import { EMPTY_ADDRESS } from '../api/empty-address.ts';
import type { InvoiceView } from '../invoices/index.ts';
import { taxForTopUp } from '../invoices/tax.ts';

/**
 * The tax of a top-up about to open its invoice (Checkout, auto top-up): the rate table needs the
 * buyer's country and a VAT id VIES confirmed; the other treatments need nothing of the buyer.
 */
export async function topUpTax(
  accountId: string,
  netCents: number,
  setting: SettingsValue['tax'],
): Promise<ReturnType<typeof taxForTopUp>> {
  if (setting.treatment !== 'rates') return taxForTopUp(setting, { address: EMPTY_ADDRESS, vatId: null, vatCheck: null }, netCents);
  return taxForTopUp(setting, await billingProfileChecked(accountId), netCents);
}

/**
 * Checkout's lines for an invoice: the net top-up, and the tax as a line of its own, so the card
 * pays the gross. With Stripe Tax there is no tax line yet: the price is net (`exclusive`) and
 * Checkout adds the tax it computes from the address it collects.
 */
export function checkoutLines(invoice: InvoiceView, name: string) {
  const currency = invoice.currency;
  const stripeTax = invoice.tax.treatment === 'stripe';
  return invoice.lineItems
    .filter((line) => line.chargedCents > 0)
    .map((line) => ({
      quantity: 1,
      price_data: {
        currency,
        unit_amount: line.chargedCents,
        product_data: { name: line.type === 'tax' ? line.description : name },
        ...(stripeTax ? { tax_behavior: 'exclusive' as const } : {}),
      },
    }));
}

/** What a Checkout Session asks for Stripe Tax: its calculation, and the address and tax id it needs. */
export const stripeTaxParams = (invoice: InvoiceView) =>
  invoice.tax.treatment === 'stripe'
    ? {
        automatic_tax: { enabled: true },
        billing_address_collection: 'required' as const,
        tax_id_collection: { enabled: true },
      }
    : {};
