import { creditNotePdf } from '../credit-notes/document.ts';
import type { CreditNoteView } from '../credit-notes/index.ts';
import type { MailItem } from '../db/items.ts';
import { invoicePdf } from '../invoices/document.ts';
import type { InvoiceView } from '../invoices/index.ts';
import { getSettings } from '../settings/index.ts';
import { mailBrand } from './brand.ts';
import type { MailAttachment, MailMessage } from './message.ts';
import { type MailContext, type MessageType, type RenderedMail, TEMPLATES } from './templates.ts';

/**
 * A queued message as it is sent: its template rendered from the event's data, with the document
 * it carries (the invoice or credit note PDF, rendered as GET …/pdf serves it).
 */
export async function renderMail(item: MailItem, to: string, dashboardUrl: string): Promise<MailMessage> {
  const settings = await getSettings();
  const context: MailContext = { brand: mailBrand(settings), dashboardUrl };
  const type = item.messageType as MessageType;
  let rendered: RenderedMail;
  const attachments: MailAttachment[] = [];
  switch (type) {
    case 'receipt': {
      const invoice = item.data as unknown as InvoiceView;
      rendered = TEMPLATES.receipt(invoice, context);
      const pdf = await invoicePdf(item.accountId, invoice.id);
      attachments.push({ filename: pdf.filename, contentType: 'application/pdf', content: pdf.bytes });
      break;
    }
    case 'credit-note': {
      const note = item.data as unknown as CreditNoteView;
      rendered = TEMPLATES['credit-note'](note, context);
      const pdf = await creditNotePdf(item.accountId, note.id);
      attachments.push({ filename: pdf.filename, contentType: 'application/pdf', content: pdf.bytes });
      break;
    }
    case 'low-balance': {
      const data = item.data as { balanceCents: number; thresholdCents: number };
      rendered = TEMPLATES['low-balance']({ ...data, currency: settings.currency }, context);
      break;
    }
    default:
      throw new Error(`unknown message type ${String(item.messageType)}`);
  }
  return { type, accountId: item.accountId, to, ...rendered, attachments, idempotencyKey: item.mailId };
}
