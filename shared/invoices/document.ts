import * as accessPatterns from '../db/access-patterns.ts';
import { getBillingProfile } from '../accounts/billing-profile.ts';
import { getSettings } from '../settings/index.ts';
import { getInvoice } from './index.ts';
import { type InvoiceDocument, renderInvoicePdf } from './pdf.ts';

/**
 * GET /v1/invoices/:id/pdf: the caller's invoice (another account's is 404 like an unknown id),
 * with the seller (platform setting `invoiceIssuer`) and the buyer (the billing profile, and the
 * account's e-mail address) as they are now.
 */
export async function invoicePdf(accountId: string, invoiceId: string): Promise<{ filename: string; bytes: Uint8Array }> {
  const invoice = await getInvoice(accountId, invoiceId);
  const [profile, account, settings] = await Promise.all([
    getBillingProfile(accountId),
    accessPatterns.accountById(accountId),
    getSettings(),
  ]);
  const document: InvoiceDocument = {
    invoice,
    seller: settings.invoiceIssuer,
    buyer: { ...profile, email: account?.email ?? null },
  };
  return { filename: `${invoice.number}.pdf`, bytes: await renderInvoicePdf(document) };
}
