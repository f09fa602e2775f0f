import { createGroupHandler } from '../../shared/http/handler.ts';
import { billingRoutes } from '../../shared/api/routes/billing.ts';
import * as payments from '../../shared/payments/checkout.ts';
import * as autoTopUp from '../../shared/payments/autotopup.ts';
import { getInvoice, listInvoices } from '../../shared/invoices/index.ts';
import { invoicePdf } from '../../shared/invoices/document.ts';
import { getCreditNote, listCreditNotes } from '../../shared/credit-notes/index.ts';
import { creditNotePdf } from '../../shared/credit-notes/document.ts';

/** Billing group: top-up rules, checkout, invoices. */
export const handler = createGroupHandler('billing', billingRoutes, {
  billingConfig: async () => payments.billingConfig(),

  checkout: async ({ principal, body, baseUrl, audit }) => {
    const result = await payments.startCheckout(principal, body, baseUrl);
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

  listCreditNotes: async ({ principal, query }) =>
    listCreditNotes(principal.accountId, { ...query, boundTo: `credit-notes:${principal.accountId}` }),

  getCreditNote: async ({ principal, params }) => getCreditNote(principal.accountId, params.id),

  getCreditNotePdf: async ({ principal, params }) => {
    const { filename, bytes } = await creditNotePdf(principal.accountId, params.id);
    return { contentType: 'application/pdf', body: bytes, filename };
  },

  getPaymentMethod: async ({ principal }) => autoTopUp.getPaymentMethod(principal.accountId),

  setupPaymentMethod: async ({ principal, body, baseUrl, audit }) => {
    const result = await autoTopUp.startCardSetup(principal, body, baseUrl);
    audit.details = { sessionId: result.sessionId };
    return result;
  },

  deletePaymentMethod: async ({ principal, params, audit }) => {
    const { before, view } = await autoTopUp.forgetCard(principal.accountId, params.id);
    audit.details = { removed: before.card ? { brand: before.card.brand, last4: before.card.last4 } : null };
    return view;
  },

  getAutoTopUp: async ({ principal }) => autoTopUp.getAutoTopUp(principal.accountId),

  putAutoTopUp: async ({ principal, body, audit }) => {
    const { before, view } = await autoTopUp.setAutoTopUp(principal.accountId, body);
    audit.details = {
      before: { enabled: before.enabled, belowCents: before.belowCents, amountCents: before.amountCents, maxPerDay: before.maxPerDay },
      after: body,
    };
    return view;
  },
});
