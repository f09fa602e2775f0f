import type { CreditNoteView } from '../credit-notes/index.ts';
import { formatMoney } from '../currency.ts';
import type { InvoiceView } from '../invoices/index.ts';
import type { MailBrand } from './brand.ts';

/**
 * What each message says: one small typed function per message type, from the event's data to a
 * subject, an HTML part and a text part. Every value put into the HTML goes through `escapeHtml`;
 * the subject is one line. docs/mail.md lists the types with their triggers.
 */
export interface RenderedMail {
  subject: string;
  html: string;
  text: string;
}

/** What every template may use besides its data: the sender's brand and where the links point. */
export interface MailContext {
  brand: MailBrand;
  /** The dashboard's address (ends with `/`): links are made against it. */
  dashboardUrl: string;
}

export interface LowBalanceData {
  balanceCents: number;
  thresholdCents: number;
  currency: string;
}

const HTML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Text as HTML: the five characters that could open markup or leave an attribute, escaped. */
export const escapeHtml = (value: string): string => value.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]!);

/** A subject on one line, whatever a value put in it carries. */
const oneLine = (value: string): string => value.replace(/[\r\n\t]+/g, ' ').trim();

const link = (context: MailContext, path: string): string => new URL(path, context.dashboardUrl).toString();

/** A message's two parts from the same paragraphs, so they never say different things. */
function layout(
  context: MailContext,
  input: { subject: string; paragraphs: string[]; action?: { label: string; url: string } },
): RenderedMail {
  const { brand } = context;
  const subject = oneLine(input.subject);
  const text = [
    ...input.paragraphs.flatMap((p) => [p, '']),
    ...(input.action ? [`${input.action.label}: ${input.action.url}`, ''] : []),
    '-- ',
    ...brand.footer,
    '',
  ].join('\n');
  const html = [
    '<!doctype html>',
    '<html lang="en"><head><meta charset="utf-8">',
    `<title>${escapeHtml(subject)}</title></head>`,
    '<body style="font-family:Arial,Helvetica,sans-serif;color:#1f2933;line-height:1.5">',
    '<main style="max-width:560px;margin:0 auto;padding:24px">',
    `<p style="font-weight:bold;font-size:18px">${escapeHtml(brand.name)}</p>`,
    ...input.paragraphs.map((p) => `<p>${escapeHtml(p)}</p>`),
    ...(input.action
      ? [
          `<p><a href="${escapeHtml(input.action.url)}" style="display:inline-block;padding:10px 16px;background:#1d4ed8;color:#ffffff;text-decoration:none;border-radius:4px">${escapeHtml(input.action.label)}</a></p>`,
        ]
      : []),
    '</main>',
    `<footer style="max-width:560px;margin:0 auto;padding:0 24px 24px;font-size:12px;color:#52606d">${brand.footer.map(escapeHtml).join('<br>')}</footer>`,
    '</body></html>',
    '',
  ].join('\n');
  return { subject, html, text };
}

export const TEMPLATES = {
  /** invoice.paid: the receipt, with the invoice PDF attached (shared/mail/render.ts). */
  receipt: (invoice: InvoiceView, context: MailContext): RenderedMail =>
    layout(context, {
      subject: `Receipt for your top-up: invoice ${invoice.number}`,
      paragraphs: [
        `Thank you: we received your payment of ${formatMoney(invoice.paidCents, invoice.currency)}.`,
        `${formatMoney(invoice.creditedCents, invoice.currency)} was added to your balance.`,
        `Invoice ${invoice.number} is attached to this message as a PDF.`,
      ],
      action: { label: 'View your billing', url: link(context, 'billing') },
    }),

  /** credit_note.issued (a credit note, not a reversal): money or credit taken back, with the credit note PDF attached. */
  'credit-note': (note: CreditNoteView, context: MailContext): RenderedMail =>
    layout(context, {
      subject: `Credit note ${note.number} for invoice ${note.invoice.number}`,
      paragraphs: [
        `We issued credit note ${note.number} against invoice ${note.invoice.number} (${REASONS[note.reason]}).`,
        `${formatMoney(note.totalCents, note.currency)} goes back to your card; ${formatMoney(note.debitedCents, note.currency)} was taken off your balance.`,
        `Credit note ${note.number} is attached to this message as a PDF.`,
      ],
      action: { label: 'View your billing', url: link(context, 'billing') },
    }),

  /** balance.low: the balance fell below the account's threshold. */
  'low-balance': (data: LowBalanceData, context: MailContext): RenderedMail =>
    layout(context, {
      subject: `Your balance is low: ${formatMoney(data.balanceCents, data.currency)}`,
      paragraphs: [
        `Your balance is ${formatMoney(data.balanceCents, data.currency)}, below your warning threshold of ${formatMoney(data.thresholdCents, data.currency)}.`,
        'Your servers stop when the credit runs out. Top up to keep them running.',
      ],
      action: { label: 'Top up', url: link(context, 'billing') },
    }),
} as const satisfies Record<string, (data: never, context: MailContext) => RenderedMail>;

export type MessageType = keyof typeof TEMPLATES;
export const MESSAGE_TYPES = Object.keys(TEMPLATES) as MessageType[];

const REASONS: Record<CreditNoteView['reason'], string> = {
  refund: 'a refund',
  dispute_lost: 'a payment dispute',
  admin_deduction: 'a correction of your credit',
  dispute_won: 'a dispute decided in your favour',
  refund_failed: 'a refund that failed',
};
