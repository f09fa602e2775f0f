import { createGroupHandler } from '../../shared/http/handler.ts';
import { billingRoutes } from '../../shared/api/routes/billing.ts';
import { billingConfig, startCheckout } from '../../shared/payments/index.ts';
import { getInvoice, listInvoices } from '../../shared/invoices/index.ts';
import { invoicePdf } from '../../shared/invoices/document.ts';

/** Billing group: top-up rules, checkout, invoices. */
export const handler = createGroupHandler('billing', billingRoutes, {
  billingConfig: async () => billingConfig(),

  checkout: async ({ principal, body, baseUrl, audit }) => {
    const result = await startCheckout(principal, body, baseUrl);
    audit.target = `invoice:${result.invoiceId}`;
    audit.details = { invoiceNumber: result.invoiceNumber, amountCents: body.amountCents };
    return result;
  },

  listInvoices: async ({ principal, query }) => listInvoices(principal.accountId, { ...query, boundTo: `invoices:${principal.accountId}` }),

  getInvoice: async ({ principal, params }) => getInvoice(principal.accountId, params.id),

  getInvoicePdf: async ({ principal, params }) => {
    const { filename, bytes } = await invoicePdf(principal.accountId, params.id);
    return { contentType: 'application/pdf', body: bytes, filename };
  },
});
