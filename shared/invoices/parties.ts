import { getBillingProfile } from '../accounts/billing-profile.ts';
import type { SettingsValue } from '../api/schemas/settings.ts';
import * as accessPatterns from '../db/access-patterns.ts';
import type { InvoiceItem } from '../db/items.ts';
import { ApiError } from '../errors.ts';
import { getSettings } from '../settings/index.ts';
import { printedBrand } from '../brand/printed.ts';

/**
 * Who an invoice is from and to, and the operator's brand it prints. A paid invoice keeps a copy of them, taken when its payment is
 * booked (creditInvoice), so its document never changes with a later profile or seller change;
 * an open or void invoice, and one paid before the copy was kept, is printed from live data.
 */
export type Seller = SettingsValue['invoiceIssuer'];
export type InvoiceParties = NonNullable<InvoiceItem['parties']>;

/** The seller fields an invoice cannot go without: a legal name and an address (street and country). */
const REQUIRED = ['legalName', 'address.line1', 'address.country'] as const;

/**
 * The local stack's seller (dev/stack.ts seeds it when none is set): plainly not a real business,
 * so a document made locally cannot pass for a real invoice.
 */
export const EXAMPLE_SELLER: Seller = {
  legalName: 'Example Hosting Ltd (fictional seller — set invoiceIssuer)',
  address: { line1: '1 Example Street', line2: null, postalCode: 'EX1 1EX', city: 'Exampleton', region: null, country: 'GB' },
  taxId: null,
  email: 'billing@example.invalid',
  footer: 'Made by a local stack: the seller is fictional. An admin sets the real one in the platform setting invoiceIssuer.',
};

/** The required seller fields that are not set (empty: the seller may appear on an invoice). */
export function missingSellerFields(seller: Seller): string[] {
  const value = { legalName: seller.legalName, 'address.line1': seller.address.line1, 'address.country': seller.address.country };
  return REQUIRED.filter((field) => !value[field]).map((field) => `invoiceIssuer.${field}`);
}

/** ok: a seller is set; missing: required fields are not; example: the local stack's fictional seller. */
export function sellerStatus(seller: Seller): { status: 'ok' | 'missing' | 'example'; missingFields: string[] } {
  const missingFields = missingSellerFields(seller);
  if (missingFields.length) return { status: 'missing', missingFields };
  return { status: seller.legalName === EXAMPLE_SELLER.legalName ? 'example' : 'ok', missingFields };
}

/**
 * Refuses to open an invoice (a checkout, an auto top-up) while the seller is not set: no number
 * is taken and nothing is charged, so no invoice ever goes out without a seller.
 */
export async function requireSeller(): Promise<void> {
  const missing = missingSellerFields((await getSettings()).invoiceIssuer);
  if (missing.length === 0) return;
  throw new ApiError(
    'payments_unavailable',
    "Top-ups are off until the platform's seller details are set (an admin sets them in the setting invoiceIssuer); nothing was charged",
    { reason: 'invoice_issuer_missing', missingFields: missing },
  );
}

/** The seller and the brand (settings, read afresh) and the buyer (billing profile and the account's e-mail address) as they are now. */
export async function currentParties(accountId: string): Promise<Omit<InvoiceParties, 'copiedAt'>> {
  const [profile, account, settings] = await Promise.all([
    getBillingProfile(accountId),
    accessPatterns.accountById(accountId),
    getSettings(true),
  ]);
  const { updatedAt: _updatedAt, ...buyer } = profile;
  return { seller: settings.invoiceIssuer, buyer: { ...buyer, email: account?.email ?? null }, brand: printedBrand(settings.brand) };
}

/** The parties a document prints: the copy of a paid invoice, else (open, void, paid before copies were kept) the live ones. */
export async function partiesOf(item: InvoiceItem): Promise<Omit<InvoiceParties, 'copiedAt'>> {
  if (item.parties && item.status !== 'open' && item.status !== 'void') return item.parties;
  return currentParties(item.accountId);
}
