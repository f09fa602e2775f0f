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

export interface RunwayWarningData {
  horizonHours: number;
  hoursLeft: number;
  /** When the servers would be suspended (ISO). */
  suspendAt: string;
  balanceCents: number;
  graceMinutes: number;
  currency: string;
}

export interface AutoTopUpFailedData {
  invoiceNumber: string;
  amountCents: number;
  /** The payment provider's failure code (`card_declined`, `authentication_required`, …). */
  code: string;
  ruleDisabled: boolean;
  /** Authentication required: where the customer completes this payment on-session; null otherwise. */
  paymentUrl: string | null;
  currency: string;
}

/** The part of a server's view the server messages use (never its SFTP access). */
export interface ServerRef {
  id: string;
  name: string;
}

export interface ServerSuspendedData extends ServerRef {
  reason: 'balance' | 'budget' | 'admin';
  /** The balance when the message is sent. */
  balanceCents: number;
  /** Balance suspension: the smallest top-up that lifts the balance above zero (and the checkout's minimum). */
  amountNeededCents: number;
  currency: string;
}

export interface ServerInstalledData extends ServerRef {
  address: { host: string; port: number } | null;
}

export interface ServerInstallFailedData extends ServerRef {
  reason: 'failed' | 'timeout';
}

export interface WebhookEndpointDisabledData {
  id: string;
  url: string;
  failingSince: string;
}

export interface ApiKeyCreatedData {
  name: string;
  prefix: string;
  last4: string;
  scopes: string[];
  createdAt: string;
  expiresAt: string | null;
}

export interface SftpPasswordSetData {
  serverIds: string[];
  /** When the password was set (the message was queued moments after the event). */
  at: string;
}

/** account.email_change_requested, to the NEW address: the link that confirms it. */
export interface EmailConfirmData {
  email: string;
  confirmUrl: string;
  tokenExpiresAt: string;
}

/** The security notices to the previous address: a change asked for (`at` the request), or done (`at` the confirmation). */
export interface EmailChangeNoticeData {
  email: string;
  previousEmail: string;
  at: string;
}

const HTML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Text as HTML: the five characters that could open markup or leave an attribute, escaped. */
export const escapeHtml = (value: string): string => value.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]!);

/** A subject on one line, whatever a value put in it carries. */
const oneLine = (value: string): string => value.replace(/[\r\n\t]+/g, ' ').trim();

/** A moment as people read it in any time zone: `29 Nov 2026, 14:05 UTC`. */
export const formatMoment = (iso: string): string => {
  const d = new Date(iso);
  const date = d.toLocaleDateString('en-GB', { day: 'numeric', month: 'short', year: 'numeric', timeZone: 'UTC' });
  const time = d.toLocaleTimeString('en-GB', { hour: '2-digit', minute: '2-digit', hour12: false, timeZone: 'UTC' });
  return `${date}, ${time} UTC`;
};

const hours = (h: number): string => (h === 1 ? '1 hour' : `${h} hours`);
/** The runway as people say it: whole hours, or less than one. */
const about = (h: number): string => (h < 1 ? 'less than an hour' : `about ${hours(Math.round(h))}`);

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
    // Who it is from, then what it is about as the one heading (screen readers jump to it).
    `<header style="max-width:560px;margin:0 auto;padding:24px 24px 0"><p style="font-weight:bold;font-size:18px;margin:0">${escapeHtml(brand.name)}</p></header>`,
    '<main style="max-width:560px;margin:0 auto;padding:0 24px 24px">',
    `<h1 style="font-size:20px;line-height:1.3">${escapeHtml(subject)}</h1>`,
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

  /** balance.runway_warning: the time left before the servers would be suspended reached a warning horizon. */
  'runway-warning': (data: RunwayWarningData, context: MailContext): RenderedMail =>
    layout(context, {
      subject: `Your servers stop in ${about(data.hoursLeft)}: top up to keep them running`,
      paragraphs: [
        `At what your servers cost now, ${data.graceMinutes > 0 ? 'your credit and the grace period last' : 'your credit lasts'} ${about(data.hoursLeft)}: your servers will be suspended at ${formatMoment(data.suspendAt)}.`,
        `Your balance is ${formatMoney(data.balanceCents, data.currency)}.${data.graceMinutes > 0 ? ` Servers keep running for ${hours(Math.round((data.graceMinutes / 60) * 10) / 10)} after the balance reaches zero; that time is charged too.` : ''}`,
        'Top up before then and nothing stops.',
      ],
      action: { label: 'Top up', url: link(context, 'billing') },
    }),

  /** auto_topup.failed: the saved card's off-session charge failed; authentication required links the on-session payment page. */
  'auto-topup-failed': (data: AutoTopUpFailedData, context: MailContext): RenderedMail => {
    const authenticate = data.code === 'authentication_required' && data.paymentUrl;
    return layout(context, {
      subject: authenticate
        ? `Your automatic top-up needs your confirmation: invoice ${data.invoiceNumber}`
        : `Your automatic top-up of ${formatMoney(data.amountCents, data.currency)} failed`,
      paragraphs: [
        `We could not charge your saved card ${formatMoney(data.amountCents, data.currency)} for invoice ${data.invoiceNumber}: ${TOPUP_FAILURES[data.code] ?? `the payment failed (${data.code})`}.`,
        ...(authenticate
          ? [
              'Your bank asks you to confirm this payment yourself. Open the payment page to complete it; automatic top-ups start again once it is paid.',
            ]
          : data.ruleDisabled
            ? ['Automatic top-ups are now off after repeated failures. Check your card and turn them on again, or top up by hand.']
            : ['We will try again the next time your balance falls below your threshold. Check your card, or top up by hand.']),
      ],
      action: authenticate
        ? { label: 'Complete the payment', url: data.paymentUrl! }
        : { label: 'Check your billing', url: link(context, 'billing') },
    });
  },

  /** server.suspended: why, and (for the balance) the amount that brings it back. */
  'server-suspended': (data: ServerSuspendedData, context: MailContext): RenderedMail =>
    layout(context, {
      subject: `Your server ${data.name} is suspended`,
      paragraphs:
        data.reason === 'balance'
          ? [
              `Your server ${data.name} is suspended: your credit ran out (your balance is ${formatMoney(data.balanceCents, data.currency)}).`,
              `A top-up of at least ${formatMoney(data.amountNeededCents, data.currency)} brings your balance above zero; your servers start again by themselves. Your files are kept.`,
            ]
          : data.reason === 'budget'
            ? [
                `Your server ${data.name} is suspended: this month's spending reached the budget you set.`,
                'Raise the budget to start it again, or it starts again when the new month begins. Your files are kept.',
              ]
            : [
                `Your server ${data.name} was suspended by the operator.`,
                'Please contact support: only the operator can lift this suspension. Your files are kept.',
              ],
      action:
        data.reason === 'admin'
          ? { label: 'View your server', url: link(context, `servers/${encodeURIComponent(data.id)}`) }
          : { label: data.reason === 'balance' ? 'Top up' : 'View your budget', url: link(context, 'billing') },
    }),

  /** server.unsuspended: it may run again. */
  'server-unsuspended': (data: ServerRef, context: MailContext): RenderedMail =>
    layout(context, {
      subject: `Your server ${data.name} runs again`,
      paragraphs: [`The suspension of your server ${data.name} is lifted: it is starting again, and its hours are charged from now.`],
      action: { label: 'View your server', url: link(context, `servers/${encodeURIComponent(data.id)}`) },
    }),

  /** server.installed: a deploy's or a reinstall's install ended well. */
  'server-installed': (data: ServerInstalledData, context: MailContext): RenderedMail =>
    layout(context, {
      subject: `Your server ${data.name} is ready`,
      paragraphs: [
        `Your server ${data.name} is installed and ready.`,
        ...(data.address ? [`Players connect to ${data.address.host}:${data.address.port}.`] : []),
      ],
      action: { label: 'View your server', url: link(context, `servers/${encodeURIComponent(data.id)}`) },
    }),

  /** server.install_failed: the panel says the install failed, or it did not end in time. */
  'server-install-failed': (data: ServerInstallFailedData, context: MailContext): RenderedMail =>
    layout(context, {
      subject: `Your server ${data.name} could not be installed`,
      paragraphs: [
        data.reason === 'timeout'
          ? `The installation of your server ${data.name} did not finish in time.`
          : `The installation of your server ${data.name} failed.`,
        'You can reinstall it from its page; if it fails again, please contact support.',
      ],
      action: { label: 'View your server', url: link(context, `servers/${encodeURIComponent(data.id)}`) },
    }),

  /** webhook_endpoint.disabled (security notice): deliveries to an endpoint stopped after it kept failing. */
  'webhook-endpoint-disabled': (data: WebhookEndpointDisabledData, context: MailContext): RenderedMail =>
    layout(context, {
      subject: 'A webhook endpoint of your account was disabled',
      paragraphs: [
        `Your webhook endpoint ${data.url} was disabled: deliveries to it have failed since ${formatMoment(data.failingSince)}.`,
        'No events are sent to it until you enable it again. If you did not set up this endpoint, check your API keys and endpoints now.',
      ],
      action: { label: 'View your webhooks', url: link(context, 'webhooks') },
    }),

  /** api_key.created (security notice): never the secret, only what identifies the key. */
  'api-key-created': (data: ApiKeyCreatedData, context: MailContext): RenderedMail =>
    layout(context, {
      subject: `A new API key was created for your account: ${data.name}`,
      paragraphs: [
        `An API key named "${data.name}" (${data.prefix}…${data.last4}) was created for your account at ${formatMoment(data.createdAt)}.`,
        `It may: ${data.scopes.join(', ') || 'nothing'}.${data.expiresAt ? ` It expires at ${formatMoment(data.expiresAt)}.` : ' It does not expire.'}`,
        'If you did not create it, revoke it now and check your account.',
      ],
      action: { label: 'View your API keys', url: link(context, 'keys') },
    }),

  /** account.sftp_password_set (security notice): never the password. */
  'sftp-password-set': (data: SftpPasswordSetData, context: MailContext): RenderedMail =>
    layout(context, {
      subject: 'A new SFTP password was set for your servers',
      paragraphs: [
        `A new SFTP password was set for your account at ${formatMoment(data.at)}: it opens ${data.serverIds.length === 1 ? '1 server' : `${data.serverIds.length} servers`}, and the previous one no longer works.`,
        'If you did not set it, set a new one now and check your API keys.',
      ],
      action: { label: 'View your servers', url: link(context, 'servers') },
    }),

  /** account.email_change_requested, sent to the new address only (never to the account's): the link that confirms it. */
  'email-confirm': (data: EmailConfirmData, context: MailContext): RenderedMail =>
    layout(context, {
      subject: 'Confirm your new e-mail address',
      paragraphs: [
        `You asked to receive your account's mail at ${data.email}. Confirm this address to start using it; until then, mail goes to your current address.`,
        `The link works until ${formatMoment(data.tokenExpiresAt)}. If you did not ask for this, ignore this message: nothing changes.`,
      ],
      action: { label: 'Confirm this address', url: data.confirmUrl },
    }),

  /** account.email_change_requested, to the current address (security notice): a change was asked for. */
  'email-change-notice': (data: EmailChangeNoticeData, context: MailContext): RenderedMail =>
    layout(context, {
      subject: 'A change of your account e-mail was requested',
      paragraphs: [
        `At ${formatMoment(data.at)} someone signed in to your account asked to send its mail to ${data.email} instead of ${data.previousEmail}. It changes only once confirmed from the new address.`,
        'If this was not you, your account may be used by someone else: revoke your API keys and change your sign-in password now.',
      ],
      action: { label: 'View your API keys', url: link(context, 'keys') },
    }),

  /** account.email_changed, to the previous address (security notice): the change was confirmed. */
  'email-changed': (data: EmailChangeNoticeData, context: MailContext): RenderedMail =>
    layout(context, {
      subject: 'Your account e-mail was changed',
      paragraphs: [
        `At ${formatMoment(data.at)} your account's e-mail changed from ${data.previousEmail} to ${data.email}: its mail goes there from now on, and this is the last message to this address.`,
        'Signing in does not change. If this was not you, contact support now.',
      ],
      action: { label: 'Open your dashboard', url: link(context, '') },
    }),
} as const satisfies Record<string, (data: never, context: MailContext) => RenderedMail>;

export type MessageType = keyof typeof TEMPLATES;
export const MESSAGE_TYPES = Object.keys(TEMPLATES) as MessageType[];

/** Why an off-session charge failed, in words (the provider's common codes). */
const TOPUP_FAILURES: Record<string, string> = {
  authentication_required: 'your bank asks you to confirm it',
  card_declined: 'the card was declined',
  insufficient_funds: 'the card has insufficient funds',
  expired_card: 'the card has expired',
  incorrect_cvc: 'the card was refused',
  processing_error: 'the payment could not be processed',
};

const REASONS: Record<CreditNoteView['reason'], string> = {
  refund: 'a refund',
  dispute_lost: 'a payment dispute',
  admin_deduction: 'a correction of your credit',
  dispute_won: 'a dispute decided in your favour',
  refund_failed: 'a refund that failed',
};
