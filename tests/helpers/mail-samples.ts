import { mailBrand } from '../../shared/mail/brand.ts';
import { type MailContext, type MESSAGE_TYPES, type RenderedMail, TEMPLATES } from '../../shared/mail/templates.ts';
import type { CreditNoteView } from '../../shared/credit-notes/index.ts';
import type { InvoiceView } from '../../shared/invoices/index.ts';
import { DEFAULT_SETTINGS } from '../../shared/settings/index.ts';

/**
 * One sample of each mail message type, rendered with data that tries the escaping (a seller and a
 * server name with markup in them): the golden test (tests/unit/mail-templates.test.ts) and the
 * browser test (tests/browser/mail.test.ts) read the same messages.
 */
export const seller = {
  ...DEFAULT_SETTINGS.invoiceIssuer,
  legalName: 'Blocky Hosting <Ltd> & "Co"',
  address: { ...DEFAULT_SETTINGS.invoiceIssuer.address, line1: '1 Main St', city: 'Dublin', country: 'IE' },
  footer: 'Registered in Ireland, no. 123456',
};
export const context: MailContext = {
  brand: mailBrand({ invoiceIssuer: seller, brand: DEFAULT_SETTINGS.brand }),
  dashboardUrl: 'https://panel.example.com/app/',
};

export const invoice = {
  id: '0190a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a2b',
  number: 'INV-2026-000042',
  currency: 'eur',
  paidCents: 2420,
  creditedCents: 2100,
} as InvoiceView;
const note = {
  id: '0190a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a2c',
  number: 'CN-2026-000007',
  type: 'credit_note',
  reason: 'refund',
  invoice: { id: invoice.id, number: invoice.number },
  currency: 'eur',
  totalCents: 2420,
  debitedCents: 2100,
} as CreditNoteView;

const server = { id: '0190a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a2d', name: 'Survival <world>' };
const serverPage = `https://panel.example.com/app/servers/${server.id}`;

/** Each type's sample, and the link its action points to. */
export const SAMPLES: Record<(typeof MESSAGE_TYPES)[number], [() => RenderedMail, string]> = {
  receipt: [() => TEMPLATES.receipt(invoice, context), 'https://panel.example.com/app/billing'],
  'credit-note': [() => TEMPLATES['credit-note'](note, context), 'https://panel.example.com/app/billing'],
  'low-balance': [
    () => TEMPLATES['low-balance']({ balanceCents: 95, thresholdCents: 100, currency: 'usd' }, context),
    'https://panel.example.com/app/billing',
  ],
  'runway-warning': [
    () =>
      TEMPLATES['runway-warning'](
        { horizonHours: 24, hoursLeft: 23.9, suspendAt: '2026-11-30T14:05:00.000Z', balanceCents: 53, graceMinutes: 120, currency: 'eur' },
        context,
      ),
    'https://panel.example.com/app/billing',
  ],
  'auto-topup-failed': [
    () =>
      TEMPLATES['auto-topup-failed'](
        {
          invoiceNumber: 'INV-2026-000043',
          amountCents: 1000,
          code: 'authentication_required',
          ruleDisabled: true,
          paymentUrl: 'https://checkout.example.com/c/pay/cs_test_1',
          currency: 'eur',
        },
        context,
      ),
    'https://checkout.example.com/c/pay/cs_test_1',
  ],
  'server-suspended': [
    () =>
      TEMPLATES['server-suspended']({ ...server, reason: 'balance', balanceCents: -4, amountNeededCents: 500, currency: 'eur' }, context),
    'https://panel.example.com/app/billing',
  ],
  'server-unsuspended': [() => TEMPLATES['server-unsuspended'](server, context), serverPage],
  'server-installed': [
    () => TEMPLATES['server-installed']({ ...server, address: { host: 'de1.example.com', port: 25565 } }, context),
    serverPage,
  ],
  'server-install-failed': [() => TEMPLATES['server-install-failed']({ ...server, reason: 'failed' }, context), serverPage],
  'webhook-endpoint-disabled': [
    () =>
      TEMPLATES['webhook-endpoint-disabled'](
        { id: '0190a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a2e', url: 'https://hooks.example.com/in', failingSince: '2026-11-26T09:00:00.000Z' },
        context,
      ),
    'https://panel.example.com/app/webhooks',
  ],
  'api-key-created': [
    () =>
      TEMPLATES['api-key-created'](
        {
          name: 'deploy <bot>',
          prefix: 'cp_live_ab12',
          last4: 'wxyz',
          scopes: ['servers:read', 'servers:write'],
          createdAt: '2026-11-29T09:00:00.000Z',
          expiresAt: null,
        },
        context,
      ),
    'https://panel.example.com/app/keys',
  ],
  'sftp-password-set': [
    () => TEMPLATES['sftp-password-set']({ serverIds: [server.id, server.id], at: '2026-11-29T09:00:00.000Z' }, context),
    'https://panel.example.com/app/servers',
  ],
  'email-confirm': [
    () =>
      TEMPLATES['email-confirm'](
        {
          email: 'new<x>@example.com',
          confirmUrl: 'https://api.example.com/v1/account/email/confirm?token=abc.def',
          tokenExpiresAt: '2026-11-30T09:00:00.000Z',
        },
        context,
      ),
    'https://api.example.com/v1/account/email/confirm?token=abc.def',
  ],
  'email-change-notice': [
    () =>
      TEMPLATES['email-change-notice'](
        { email: 'new<x>@example.com', previousEmail: 'old@example.com', at: '2026-11-29T09:00:00.000Z' },
        context,
      ),
    'https://panel.example.com/app/keys',
  ],
  'email-changed': [
    () =>
      TEMPLATES['email-changed'](
        { email: 'new<x>@example.com', previousEmail: 'old@example.com', at: '2026-11-29T10:00:00.000Z' },
        context,
      ),
    'https://panel.example.com/app/',
  ],
};
