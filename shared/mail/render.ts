import { creditNotePdf } from '../credit-notes/document.ts';
import * as accessPatterns from '../db/access-patterns.ts';
import type { CreditNoteView } from '../credit-notes/index.ts';
import type { MailItem } from '../db/items.ts';
import { invoicePdf } from '../invoices/document.ts';
import type { InvoiceView } from '../invoices/index.ts';
import { getSettings } from '../settings/index.ts';
import { mailBrand } from './brand.ts';
import type { MailAttachment, MailMessage } from './message.ts';
import {
  type ApiKeyCreatedData,
  type AutoTopUpFailedData,
  type EmailChangeNoticeData,
  type MailContext,
  type MessageType,
  type RenderedMail,
  type RunwayWarningData,
  type ServerInstalledData,
  type ServerInstallFailedData,
  type ServerRef,
  TEMPLATES,
  type WebhookEndpointDisabledData,
} from './templates.ts';

/**
 * A queued message as it is sent: its template rendered from the event's data, with the document
 * it carries (the invoice or credit note PDF, rendered as GET …/pdf serves it).
 */
export async function renderMail(item: MailItem, to: string, dashboardUrl: string, confirmUrl?: string): Promise<MailMessage> {
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
    case 'runway-warning':
      rendered = TEMPLATES['runway-warning']({ ...(item.data as unknown as RunwayWarningData), currency: settings.currency }, context);
      break;
    case 'auto-topup-failed':
      rendered = TEMPLATES['auto-topup-failed']({ ...(item.data as unknown as AutoTopUpFailedData), currency: settings.currency }, context);
      break;
    case 'server-suspended': {
      const server = item.data as unknown as ServerRef & { reason: 'balance' | 'budget' | 'admin' };
      // The balance as it is when the message goes out: the amount it asks for is what lifts the suspension now.
      const balanceCents = (await accessPatterns.accountById(item.accountId))?.balanceCents ?? 0;
      const amountNeededCents = Math.max(1 - balanceCents, settings.minimumTopUpCents);
      rendered = TEMPLATES['server-suspended'](
        { id: server.id, name: server.name, reason: server.reason, balanceCents, amountNeededCents, currency: settings.currency },
        context,
      );
      break;
    }
    case 'server-unsuspended':
      rendered = TEMPLATES['server-unsuspended'](item.data as unknown as ServerRef, context);
      break;
    case 'server-installed':
      rendered = TEMPLATES['server-installed'](item.data as unknown as ServerInstalledData, context);
      break;
    case 'server-install-failed': {
      const data = item.data as unknown as ServerRef & { install: { reason: ServerInstallFailedData['reason'] } };
      rendered = TEMPLATES['server-install-failed']({ id: data.id, name: data.name, reason: data.install.reason }, context);
      break;
    }
    case 'webhook-endpoint-disabled':
      rendered = TEMPLATES['webhook-endpoint-disabled'](item.data as unknown as WebhookEndpointDisabledData, context);
      break;
    case 'api-key-created':
      rendered = TEMPLATES['api-key-created'](item.data as unknown as ApiKeyCreatedData, context);
      break;
    case 'sftp-password-set':
      rendered = TEMPLATES['sftp-password-set'](
        { serverIds: (item.data as { serverIds: string[] }).serverIds, at: item.createdAt },
        context,
      );
      break;
    case 'email-confirm': {
      const data = item.data as { email: string; tokenExpiresAt: string };
      if (!confirmUrl) throw new Error('email-confirm without its link');
      rendered = TEMPLATES['email-confirm']({ email: data.email, tokenExpiresAt: data.tokenExpiresAt, confirmUrl }, context);
      break;
    }
    case 'email-change-notice':
    case 'email-changed': {
      const { email, previousEmail } = item.data as unknown as EmailChangeNoticeData;
      rendered = TEMPLATES[type]({ email, previousEmail, at: item.createdAt }, context);
      break;
    }
    default:
      throw new Error(`unknown message type ${String(item.messageType)}`);
  }
  return { type, accountId: item.accountId, to, ...rendered, attachments, idempotencyKey: item.mailId };
}
