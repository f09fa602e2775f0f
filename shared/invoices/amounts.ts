import type { InvoiceItem } from '../db/items.ts';

/**
 * An invoice's three amounts: the net (`amountCents`, the credit bought), the tax charged on top of
 * it, and the gross the card pays. Stripe states refunds and disputes in gross card money; the
 * ledger and the balance hold net credit, so what the card got back is split here, once.
 */
type Amounts = Pick<InvoiceItem, 'amountCents' | 'taxCents'>;

export const taxOf = (item: Amounts): number => item.taxCents ?? 0;

export const grossOf = (item: Amounts): number => item.amountCents + taxOf(item);

/** The currency of an invoice; invoices of before the setting were all in US dollars. */
export const currencyOf = (item: Pick<InvoiceItem, 'currency'>): string => item.currency ?? 'usd';

/**
 * Of `grossCents` the card got back (a running total, never per event, so partial refunds never
 * round twice), the net credit and the tax it returns: the net rounded down, the tax the rest,
 * so the balance never loses more credit than the money it returned bought.
 */
export function splitGross(item: Amounts, grossCents: number): { netCents: number; taxCents: number } {
  const gross = grossOf(item);
  if (gross === 0 || grossCents <= 0) return { netCents: 0, taxCents: 0 };
  const taken = Math.min(grossCents, gross);
  const netCents = Math.floor((taken * item.amountCents) / gross);
  return { netCents, taxCents: taken - netCents };
}
