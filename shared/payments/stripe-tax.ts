import type Stripe from 'stripe';
import { type BillingProfileView, billingProfileChecked } from '../accounts/billing-profile.ts';
import type { InvoiceItem, InvoiceTax } from '../db/items.ts';
import { keys } from '../db/keys.ts';
import { writeIfFirst } from '../db/write.ts';
import { ApiError } from '../errors.ts';
import { EU_COUNTRIES, stripeTaxReason } from '../invoices/tax.ts';
import { errorFields, logger } from '../observability/logger.ts';
import type { CheckoutSession } from './checkout-event.ts';
import { sandbox } from './sandbox.ts';
import { paymentsConfig, stripe } from './stripe-client.ts';

/**
 * Stripe Tax (setting `tax` treatment `stripe`) where no Checkout Session computes it: an auto
 * top-up's off-session PaymentIntent. Before the charge a Tax Calculation on the net, from the
 * billing profile's address (and its VAT id once VIES confirmed it, as the rate table asks); the
 * invoice opens with its tax, the card pays its `amount_total`, and once the payment is booked a
 * Tax Transaction records the sale at Stripe (its reports and filings), once per invoice. Without
 * a calculation nothing is charged. Also why Stripe Tax charged nothing on a paid Checkout Session
 * (its tax breakdown's `taxability_reason`). The sandbox answers calculations from its fixed rates.
 */

/** The fields of a Tax Calculation read here: Stripe's answer, or the sandbox's. */
export interface TaxCalculation {
  id: string | null;
  amount_total: number;
  customer_details: { address: { country: string | null } | null };
  tax_breakdown: { amount: number; taxability_reason: string; tax_rate_details: { country: string | null } | null }[];
}

/** Stripe's code for an address it cannot place a tax on; used as well when the profile has none to send. */
export const TAX_LOCATION_INVALID = 'customer_tax_location_invalid';

type TaxIdType = Stripe.Tax.CalculationCreateParams.CustomerDetails.TaxId.Type;
const VAT_ID_TYPES: Record<string, TaxIdType> = { GB: 'gb_vat', CH: 'ch_vat', NO: 'no_vat' };
const vatIdType = (country: string): TaxIdType | undefined => (EU_COUNTRIES.has(country) ? 'eu_vat' : VAT_ID_TYPES[country]);

/** The calculation's request from the billing profile; null without a country (Stripe requires one). */
export function calculationParams(
  profile: BillingProfileView,
  netCents: number,
  currency: string,
): Stripe.Tax.CalculationCreateParams | null {
  const { address } = profile;
  if (!address.country) return null;
  const type = vatIdType(address.country);
  // A VAT id counts once VIES confirmed it, as with the rate table: Stripe Tax takes a given id as valid.
  const vatId = profile.vatId && profile.vatCheck?.valid === true && type ? [{ type, value: profile.vatId.replace(/\s+/g, '') }] : [];
  const given = (value: string | null) => value ?? undefined;
  return {
    currency,
    line_items: [{ amount: netCents, reference: 'topup', tax_behavior: 'exclusive' }],
    customer_details: {
      address: {
        country: address.country,
        line1: given(address.line1),
        line2: given(address.line2),
        city: given(address.city),
        postal_code: given(address.postalCode),
        state: given(address.region),
      },
      address_source: 'billing',
      ...(vatId.length ? { tax_ids: vatId } : {}),
    },
  };
}

export type AutoTopUpTax =
  | { calculated: true; taxCalculationId: string; taxCents: number; tax: InvoiceTax }
  | { calculated: false; code: string };

/** The tax of an auto top-up of `netCents`, calculated by Stripe Tax (or the sandbox) before anything is charged. */
export async function calculateAutoTopUpTax(
  accountId: string,
  netCents: number,
  currency: string,
  provider: 'stripe' | 'sandbox',
): Promise<AutoTopUpTax> {
  const params = calculationParams(await billingProfileChecked(accountId), netCents, currency);
  if (!params) return { calculated: false, code: TAX_LOCATION_INVALID };
  let calculation: TaxCalculation;
  try {
    calculation =
      provider === 'sandbox'
        ? await sandbox().calculateTax(params)
        : await (await stripe(await paymentsConfig())).tax.calculations.create(params);
  } catch (err) {
    const refused = err as { statusCode?: number; code?: string };
    const code = refused.statusCode && refused.statusCode < 500 ? (refused.code ?? 'tax_calculation_refused') : 'provider_unreachable';
    logger.warn('auto top-up: Stripe Tax calculation failed; nothing charged', { accountId, code, ...errorFields(err) });
    return { calculated: false, code };
  }
  const taxCents = calculation.amount_total - netCents;
  if (!calculation.id || taxCents < 0) return { calculated: false, code: 'tax_calculation_refused' };
  const taxed = calculation.tax_breakdown.find((line) => line.amount > 0) ?? calculation.tax_breakdown[0];
  return {
    calculated: true,
    taxCalculationId: calculation.id,
    taxCents,
    tax: {
      treatment: 'stripe',
      country: taxed?.tax_rate_details?.country ?? calculation.customer_details.address?.country ?? null,
      // As for Checkout (shared/payments/credit.ts): the rate the tax makes of the net, rounded down.
      rateBasisPoints: netCents > 0 ? Math.floor((taxCents * 10_000) / netCents) : 0,
      label: 'Tax',
      ...stripeTaxReason(taxCents, taxed?.taxability_reason),
    },
  };
}

/**
 * Records the sale of a paid invoice taxed by a calculation as a Tax Transaction, once: skipped
 * when the invoice holds its id, sent under a key of the invoice, its reference the invoice number.
 * Stripe unreachable: a 502, so the webhook is delivered again (the credit is booked already, once).
 */
export async function recordTaxTransaction(item: InvoiceItem): Promise<void> {
  if (!item.taxCalculationId || item.taxTransactionId || item.provider !== 'stripe') return;
  let transactionId: string;
  try {
    const client = await stripe(await paymentsConfig());
    transactionId = (
      await client.tax.transactions.createFromCalculation(
        { calculation: item.taxCalculationId, reference: item.number },
        { idempotencyKey: `tax-transaction:${item.invoiceId}` },
      )
    ).id;
  } catch (err) {
    logger.error('stripe tax: the transaction was not recorded', { invoiceId: item.invoiceId, ...errorFields(err) });
    throw new ApiError('payment_provider_error', 'Stripe Tax did not record the sale; the payment is booked, deliver again');
  }
  await writeIfFirst({
    Update: {
      Key: keys.invoice(item.accountId, item.number),
      UpdateExpression: 'SET taxTransactionId = :id',
      ConditionExpression: 'attribute_exists(PK) AND attribute_not_exists(taxTransactionId)',
      ExpressionAttributeValues: { ':id': transactionId },
    },
  });
}

/**
 * Why Stripe Tax charged nothing on a paid Checkout Session: the first tax line's
 * `taxability_reason`. Events never carry the breakdown (Stripe includes it only when asked), so
 * the session is read back expanded; the sandbox's events carry it. Unreadable: a 502 before
 * anything is booked (the invoice is frozen when paid), so Stripe delivers the event again.
 */
export async function checkoutTaxabilityReason(session: CheckoutSession, provider: 'stripe' | 'sandbox'): Promise<string | null> {
  const given = session.total_details?.breakdown?.taxes;
  if (given || provider === 'sandbox') return given?.[0]?.taxability_reason ?? null;
  try {
    const read = await (await stripe(await paymentsConfig())).checkout.sessions.retrieve(session.id, {
      expand: ['total_details.breakdown'],
    });
    return read.total_details?.breakdown?.taxes[0]?.taxability_reason ?? null;
  } catch (err) {
    logger.error('stripe tax: the session breakdown could not be read; not credited yet', { sessionId: session.id, ...errorFields(err) });
    throw new ApiError('payment_provider_error', 'The tax breakdown could not be read from Stripe; nothing was booked, deliver again');
  }
}
