import type { BillingProfileView } from '../accounts/billing-profile.ts';
import type { SettingsValue } from '../api/schemas/settings.ts';
import type { InvoiceItem, InvoiceTax } from '../db/items.ts';

/**
 * The tax on a top-up, decided when its invoice opens (checkout, auto top-up) from the operator's
 * treatment (setting `tax`) and the buyer's billing profile. `amountCents` is the net credit bought;
 * the tax is charged on top and the ledger credits the net. Tax is a whole number of cents, worked
 * out once on the whole net and rounded down, so rounding never goes against the customer.
 * Stripe Tax states its own figure when the payment arrives (shared/payments/credit.ts).
 */

/** The member states of the EU (ISO 3166-1 alpha-2: Greece is GR here, EL only in VAT ids). */
export const EU_COUNTRIES: ReadonlySet<string> = new Set(
  'AT BE BG CY CZ DE DK EE ES FI FR GR HR HU IE IT LT LU LV MT NL PL PT RO SE SI SK'.split(' '),
);

/** What the invoice states for an EU reverse charge (Council Directive 2006/112/EC, Articles 44, 196 and 226). */
export const REVERSE_CHARGE_STATEMENT =
  'Reverse charge: VAT to be accounted for by the recipient (Article 196, Council Directive 2006/112/EC).';

/**
 * What the invoice states when Stripe Tax charged nothing, by the `taxability_reason` Stripe gives
 * (a Checkout Session's tax breakdown, a Tax Calculation's): a reverse charge is stated as the rate
 * table states it.
 */
const STRIPE_TAX_STATEMENTS: Record<string, string> = {
  reverse_charge: REVERSE_CHARGE_STATEMENT,
  customer_exempt: 'No tax charged: the customer is exempt from tax.',
  not_collecting: "No tax charged: the seller is not registered to collect tax in the customer's location.",
  not_subject_to_tax: "No tax charged: not subject to tax in the customer's location.",
  not_supported: "No tax charged: no tax is calculated for the customer's location.",
  product_exempt: "No tax charged: the service is exempt from tax in the customer's location.",
  product_exempt_holiday: "No tax charged: the service is exempt from tax in the customer's location.",
  zero_rated: 'Zero-rated supply: tax at 0 %.',
};

/** The reason an invoice Stripe Tax charged nothing prints (null when tax was charged); an unknown reason, a plain one. */
export function stripeTaxReason(
  taxCents: number,
  taxabilityReason: string | null | undefined,
): { reason: string | null; reverseCharge: boolean } {
  if (taxCents > 0) return { reason: null, reverseCharge: false };
  return {
    reason: (taxabilityReason && STRIPE_TAX_STATEMENTS[taxabilityReason]) || 'No tax charged.',
    reverseCharge: taxabilityReason === 'reverse_charge',
  };
}

type Buyer = Pick<BillingProfileView, 'address' | 'vatId' | 'vatCheck'>;

/** The tax of a top-up of `netCents`: its cents (charged on top) and what the invoice says of it. */
export function taxForTopUp(setting: SettingsValue['tax'], buyer: Buyer, netCents: number): { taxCents: number; tax: InvoiceTax } {
  if (setting.treatment === 'none') {
    return {
      taxCents: 0,
      tax: { treatment: 'none', reverseCharge: false, country: null, rateBasisPoints: 0, label: 'Tax', reason: setting.reason },
    };
  }
  if (setting.treatment === 'stripe') {
    // Stripe Tax computes it in Checkout from the address it collects; the payment states it.
    return {
      taxCents: 0,
      tax: { treatment: 'stripe', reverseCharge: false, country: null, rateBasisPoints: 0, label: 'Tax', reason: null },
    };
  }
  const country = buyer.address.country ?? setting.sellerCountry;
  const base = { treatment: 'rates' as const, country, label: setting.label };
  if (isReverseCharge(setting.sellerCountry, country, buyer)) {
    return { taxCents: 0, tax: { ...base, reverseCharge: true, rateBasisPoints: 0, reason: REVERSE_CHARGE_STATEMENT } };
  }
  const rate = setting.rates[country as keyof typeof setting.rates];
  if (rate === undefined) {
    return { taxCents: 0, tax: { ...base, reverseCharge: false, rateBasisPoints: 0, reason: setting.otherCountriesReason } };
  }
  return {
    taxCents: Math.floor((netCents * rate) / 10_000),
    tax: { ...base, reverseCharge: false, rateBasisPoints: rate, reason: rate === 0 ? setting.otherCountriesReason : null },
  };
}

/** An EU business (its VAT id confirmed by VIES) buying from a seller in another EU member state. */
function isReverseCharge(sellerCountry: string, buyerCountry: string, buyer: Buyer): boolean {
  return (
    Boolean(buyer.vatId) &&
    buyer.vatCheck?.valid === true &&
    EU_COUNTRIES.has(sellerCountry) &&
    EU_COUNTRIES.has(buyerCountry) &&
    buyerCountry !== sellerCountry
  );
}

/** Basis points as a percentage with no needless decimals: 1900 → `19 %`, 550 → `5.5 %`, 2050 → `20.5 %`. */
export function formatRate(basisPoints: number): string {
  const whole = Math.floor(basisPoints / 100);
  const fraction = String(basisPoints % 100)
    .padStart(2, '0')
    .replace(/0+$/, '');
  return `${whole}${fraction ? `.${fraction}` : ''} %`;
}

/** The tax line of an invoice (charged to the card, credits nothing): `VAT 19 %`. */
export const taxLine = (tax: InvoiceTax, taxCents: number): InvoiceItem['lineItems'][number] => ({
  type: 'tax',
  description: `${tax.label} ${formatRate(tax.rateBasisPoints)}${tax.country ? ` (${tax.country})` : ''}`,
  amountCents: taxCents,
});
