import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { mailBrand } from '../../shared/mail/brand.ts';
import { buildMime } from '../../shared/mail/message.ts';
import { messageTypesFor } from '../../shared/webhooks/mail-queue.ts';
import { MESSAGE_TYPES, TEMPLATES } from '../../shared/mail/templates.ts';
import { DEFAULT_SETTINGS } from '../../shared/settings/index.ts';
import { context, invoice, SAMPLES, seller } from '../helpers/mail-samples.ts';

/**
 * Each message type's subject and text part against a checked-in file (tests/unit/golden/mail/):
 * a change of wording is a change of that file, seen in review. `UPDATE_GOLDEN=1` rewrites them.
 */
const GOLDEN = join(import.meta.dirname, 'golden', 'mail');

describe('mail templates', () => {
  for (const type of MESSAGE_TYPES) {
    it(`${type}: subject and text as the golden file`, () => {
      const rendered = SAMPLES[type][0]();
      const actual = `Subject: ${rendered.subject}\n\n${rendered.text}`;
      const file = join(GOLDEN, `${type}.txt`);
      if (process.env.UPDATE_GOLDEN === '1') writeFileSync(file, actual);
      expect(existsSync(file), `${file} missing: run with UPDATE_GOLDEN=1`).toBe(true);
      expect(actual).toBe(readFileSync(file, 'utf8'));
    });

    it(`${type}: every interpolated value is escaped in the HTML`, () => {
      const [sample, href] = SAMPLES[type];
      const { html, text } = sample();
      expect(html).toContain('Blocky Hosting &lt;Ltd&gt; &amp; &quot;Co&quot;');
      expect(html).not.toContain('<Ltd>');
      expect(html).not.toContain('<world>');
      expect(html).toContain(`href="${href}"`);
      expect(text).toContain(href);
    });
  }

  it('a value in the body is escaped too', () => {
    const { html } = TEMPLATES.receipt({ ...invoice, number: 'INV-<i>1</i>' }, context);
    expect(html).toContain('INV-&lt;i&gt;1&lt;/i&gt;');
    expect(html).not.toContain('<i>');
  });

  it('a subject stays one line whatever the data holds', () => {
    const rendered = TEMPLATES.receipt({ ...invoice, number: 'INV-1\r\nBcc: someone@example.com' }, context);
    expect(rendered.subject).not.toMatch(/[\r\n]/);
  });

  it('the brand defaults to "Control panel" while no seller is set', () => {
    expect(mailBrand(DEFAULT_SETTINGS).name).toBe('Control panel');
  });

  it("a brand an admin named signs the mail, with its legal footer and support links in place of the seller's", () => {
    const brand = {
      ...DEFAULT_SETTINGS.brand,
      name: 'Blockworks',
      legalFooter: 'Blockworks is a trading name.',
      supportEmail: 'help@blockworks.example',
    };
    const mail = mailBrand({ invoiceIssuer: seller, brand });
    expect(mail.name).toBe('Blockworks');
    expect(mail.footer).toEqual([
      'Blockworks',
      '1 Main St, Dublin, IE',
      'Blockworks is a trading name.',
      'Support: help@blockworks.example',
    ]);
    // Without a brand of its own the seller signs, with the invoice footer.
    expect(mailBrand({ invoiceIssuer: seller, brand: DEFAULT_SETTINGS.brand }).footer).toContain('Registered in Ireland, no. 123456');
  });

  it('queues a credit note message for a credit note, none for a reversal', () => {
    expect(messageTypesFor({ type: 'credit_note.issued', data: { type: 'credit_note' } })).toEqual(['credit-note']);
    expect(messageTypesFor({ type: 'credit_note.issued', data: { type: 'reversal' } })).toEqual([]);
    expect(messageTypesFor({ type: 'ledger.entry', data: {} })).toEqual([]);
  });

  it('an auto top-up that failed for another reason links billing, not a payment page', () => {
    const rendered = TEMPLATES['auto-topup-failed'](
      {
        invoiceNumber: 'INV-2026-000044',
        amountCents: 1000,
        code: 'card_declined',
        ruleDisabled: false,
        paymentUrl: null,
        currency: 'usd',
      },
      context,
    );
    expect(rendered.subject).toBe('Your automatic top-up of $10.00 failed');
    expect(rendered.text).toContain('the card was declined');
    expect(rendered.text).toContain('Check your billing: https://panel.example.com/app/billing');
  });

  it('each event calls for its one message; a reinstall and most events for none', () => {
    const expected: Record<string, string[]> = {
      'invoice.paid': ['receipt'],
      'balance.low': ['low-balance'],
      'balance.runway_warning': ['runway-warning'],
      'auto_topup.failed': ['auto-topup-failed'],
      'server.suspended': ['server-suspended'],
      'server.unsuspended': ['server-unsuspended'],
      'server.installed': ['server-installed'],
      'server.install_failed': ['server-install-failed'],
      'webhook_endpoint.disabled': ['webhook-endpoint-disabled'],
      'api_key.created': ['api-key-created'],
      'account.sftp_password_set': ['sftp-password-set'],
      'account.email_change_requested': ['email-confirm', 'email-change-notice'],
      'account.email_changed': ['email-changed'],
      'server.reinstalled': [],
      'auto_topup.disabled': [],
      'server.created': [],
    };
    for (const [type, types] of Object.entries(expected)) expect(messageTypesFor({ type: type as never, data: {} }), type).toEqual(types);
  });

  it('builds standard MIME: text and HTML alternatives, the attachment, a Message-ID from the idempotency key', async () => {
    const raw = (
      await buildMime(
        {
          type: 'receipt',
          accountId: 'a',
          to: 'player@example.com',
          ...SAMPLES.receipt[0](),
          attachments: [{ filename: 'INV-2026-000042.pdf', contentType: 'application/pdf', content: new Uint8Array([37, 80, 68, 70]) }],
          idempotencyKey: 'mail-1',
        },
        { name: context.brand.name, address: 'billing@example.com' },
      )
    ).toString('utf8');
    expect(raw).toMatch(/^Content-Type: multipart\/mixed/m);
    expect(raw).toMatch(/^Content-Type: multipart\/alternative/m);
    expect(raw).toMatch(/^Content-Type: text\/plain/m);
    expect(raw).toMatch(/^Content-Type: text\/html/m);
    expect(raw).toMatch(/^Content-Type: application\/pdf; name=INV-2026-000042.pdf/m);
    expect(raw).toMatch(/^Message-ID: <mail-1@example.com>/m);
  });
});
