import { getInvoiceItem, toInvoiceView } from './index.ts';
import { partiesOf } from './parties.ts';
import { type InvoiceDocument, renderInvoicePdf } from './pdf.ts';

/**
 * GET /v1/invoices/:id/pdf: the caller's invoice (another account's is 404 like an unknown id).
 * A paid invoice (refunded or disputed since too) prints the seller and the buyer it copied when
 * its payment was booked, so a later billing-profile or seller change never alters it. An open or
 * void invoice, and one paid before copies were kept, prints them as they are now: the seller
 * (platform setting `invoiceIssuer`) and the buyer (the billing profile, and the account's e-mail).
 */
export async function invoicePdf(accountId: string, invoiceId: string): Promise<{ filename: string; bytes: Uint8Array }> {
  const item = await getInvoiceItem(accountId, invoiceId);
  const parties = await partiesOf(item);
  const invoice = toInvoiceView(item);
  const document: InvoiceDocument = { invoice, seller: parties.seller, buyer: parties.buyer, brand: parties.brand };
  return { filename: `${invoice.number}.pdf`, bytes: await renderInvoicePdf(document) };
}
