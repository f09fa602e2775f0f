import { define } from '../route-def.ts';
import { IdParam, ListQuery } from '../schemas/common.ts';
import { BillingConfig, CheckoutRequest, CheckoutResponse, Invoice, InvoiceList, InvoicePdf } from '../schemas/billing.ts';

/** The billing group: top-up rules, checkout, invoices. */
export const billingRoutes = define({
  billingConfig: {
    method: 'GET',
    path: '/v1/billing/config',
    group: 'billing',
    tag: 'Billing',
    auth: 'bearer',
    scope: 'billing:read',
    summary: 'Top-up rules: currency, minimum and maximum, bonus percentage, whether payments work',
    response: BillingConfig,
  },
  checkout: {
    method: 'POST',
    path: '/v1/billing/checkout',
    group: 'billing',
    tag: 'Billing',
    auth: 'bearer',
    scope: 'billing:write',
    summary: 'Start a top-up: opens an invoice and a hosted payment page',
    description:
      "Redirect the customer to `url`. Only the payment provider's webhook credits the balance (amount plus the bonus), exactly once.",
    body: CheckoutRequest,
    status: 201,
    response: CheckoutResponse,
    idempotent: true,
    audit: 'billing.checkout',
    errors: ['payments_unavailable', 'payment_provider_error'],
  },
  listInvoices: {
    method: 'GET',
    path: '/v1/invoices',
    group: 'billing',
    tag: 'Billing',
    auth: 'bearer',
    scope: 'billing:read',
    summary: 'Your invoices, newest first',
    query: ListQuery,
    response: InvoiceList,
  },
  getInvoice: {
    method: 'GET',
    path: '/v1/invoices/:id',
    group: 'billing',
    tag: 'Billing',
    auth: 'bearer',
    scope: 'billing:read',
    summary: 'One invoice with its line items',
    params: IdParam,
    response: Invoice,
  },
  getInvoicePdf: {
    method: 'GET',
    path: '/v1/invoices/:id/pdf',
    group: 'billing',
    tag: 'Billing',
    auth: 'bearer',
    scope: 'billing:read',
    summary: 'The invoice as a PDF document',
    description:
      'An A4 PDF (`Content-Disposition: attachment; filename="INV-2026-000001.pdf"`): the seller (platform settings), the buyer (your billing profile, else your e-mail address), the number, issue and payment dates, currency, each line with what it charged and credited, the totals, the status and any refunded or disputed amount. Built when asked, so it shows the invoice and the profile as they are now. Characters the PDF\'s standard fonts cannot draw (outside Windows-1252, e.g. CJK) print as `?`; the JSON invoice keeps them.',
    params: IdParam,
    raw: true,
    mediaType: 'application/pdf',
    response: InvoicePdf,
  },
});
