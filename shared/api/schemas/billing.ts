import * as z from 'zod';
import { Uuid, text, int32, Cents, Currency, Timestamp, listOf } from './common.ts';
import { CountryCode } from './billing-profile.ts';
import { InvoiceCreditNotes } from './credit-notes.ts';

/** Top-ups and invoices (billing group). */

export const BillingConfig = z
  .object({
    currency: Currency,
    minimumTopUpCents: int32(50, 99_999_999),
    maximumTopUpCents: int32(50, 99_999_999),
    bonusPercent: int32(0, 100),
    paymentsEnabled: z.boolean().meta({ description: 'Checkout works (Stripe configured, or the local sandbox).' }),
    provider: z.enum(['stripe', 'sandbox']),
  })
  .meta({ id: 'BillingConfig' });

const ReturnUrl = z
  .string()
  .max(2000)
  .refine((v) => {
    try {
      const u = new URL(v);
      return u.protocol === 'https:' || u.hostname === '127.0.0.1' || u.hostname === 'localhost';
    } catch {
      return false;
    }
  }, 'must be an https URL')
  .meta({ format: 'uri' });

export const CheckoutRequest = z
  .object({
    amountCents: int32(1, 99_999_999).meta({ description: 'Between the minimum and maximum top-up of GET /v1/billing/config.' }),
    successUrl: ReturnUrl.optional().meta({
      description: 'Where the payment page sends the customer after paying (default: CHECKOUT_SUCCESS_URL).',
    }),
    cancelUrl: ReturnUrl.optional().meta({ description: 'Where the payment page sends the customer who cancels.' }),
  })
  .strict()
  .meta({ id: 'CheckoutRequest' });

export const CheckoutResponse = z
  .object({
    url: z.url().max(8192).meta({ description: 'Send the customer to this hosted payment page.' }),
    invoiceNumber: text(32).meta({ example: 'INV-2026-000042' }),
    invoiceId: Uuid,
  })
  .meta({ id: 'CheckoutResponse' });

export const InvoiceStatus = z.enum(['open', 'paid', 'void', 'refunded', 'partially_refunded', 'disputed']).meta({
  id: 'InvoiceStatus',
  description:
    'open → paid or void. A paid invoice turns partially_refunded or refunded as the card is refunded, and disputed while a chargeback is open or once it is lost (a won dispute returns it to its refund state).',
});

/**
 * One line per ledger entry the invoice stands for: the top-up, and the bonus when it is above 0.
 * Each line says what the card is charged for it and what it credits to the balance, so the bonus
 * is a line (charged 0, credited the bonus) and the charged amounts still sum to the total.
 */
const InvoiceLine = z
  .object({
    type: z.enum(['topup', 'bonus', 'tax']).meta({
      description:
        'topup: the net credit bought; tax: the tax charged on top of it (credits nothing); bonus: the bonus rate applied to the top-up (rounded down).',
    }),
    description: text(500),
    amountCents: Cents.meta({
      description:
        "The line's amount: the top-up, or the bonus. Sum chargedCents for what the card pays, creditedCents for what the balance received.",
    }),
    chargedCents: Cents.meta({ description: 'What the card is charged for this line: the top-up and the tax their amount, the bonus 0.' }),
    creditedCents: Cents.meta({
      description: 'What this line credited to the balance: its amount once paid (the tax line 0), 0 while open or void.',
    }),
  })
  .meta({ id: 'InvoiceLine' });

const InvoiceCredit = z
  .object({
    type: z.enum(['topup', 'bonus']),
    description: text(500),
    amountCents: Cents,
  })
  .meta({ id: 'InvoiceCredit' });

/** How the invoice was taxed, and its three amounts (shared/invoices/tax.ts). */
const InvoiceTax = z
  .object({
    treatment: z
      .enum(['none', 'rates', 'stripe'])
      .meta({ description: "The operator's treatment when the invoice opened (setting `tax`)." }),
    reverseCharge: z.boolean().meta({
      description: 'An EU business buyer (VAT id valid in VIES) in another EU country than the seller: no tax, the buyer accounts for it.',
    }),
    // The country whose rate applied; null: none.
    country: CountryCode.nullable(),
    rateBasisPoints: int32(0, 10_000).meta({ description: 'The rate applied, in basis points (1900 = 19 %).' }),
    label: text(20).meta({ description: 'The name of the tax (VAT, GST, …).' }),
    reason: text(300)
      .nullable()
      .meta({ description: "Why no tax is charged (the operator's reason, or the reverse-charge statement); null when taxed." }),
    netCents: Cents.meta({ description: 'The credit bought: amountCents.' }),
    taxCents: Cents.meta({ description: 'The tax charged on top of the net, rounded down to the cent.' }),
    grossCents: Cents.meta({ description: 'What the card pays: net plus tax (totalCents).' }),
  })
  .meta({ id: 'InvoiceTax' });

export const Invoice = z
  .object({
    id: Uuid,
    number: text(32).meta({ description: 'Sequential and gapless per year.', example: 'INV-2026-000042' }),
    status: InvoiceStatus,
    currency: Currency,
    amountCents: Cents.meta({ description: 'The top-up: the net credit bought (the card pays it plus tax.taxCents).' }),
    bonusPercent: int32(0, 100).meta({ description: 'Bonus rate fixed when the checkout started.' }),
    lineItems: z.array(InvoiceLine).min(1).max(3).meta({
      description:
        'The top-up, its tax when above 0, and once paid the bonus when it is above 0. Their chargedCents sum to totalCents, their creditedCents to creditedCents.',
    }),
    tax: InvoiceTax,
    totalCents: Cents.meta({ description: "The sum of the lines' chargedCents: the amount charged to the card." }),
    paidCents: Cents.meta({ description: 'What the card paid: totalCents once paid, 0 while open or void.' }),
    credits: z.array(InvoiceCredit).max(2).meta({
      deprecated: true,
      description: 'Deprecated: read lineItems and their creditedCents. The lines that credited the balance (empty until paid).',
    }),
    creditedCents: Cents.meta({ description: "The sum of the lines' creditedCents: top-up plus bonus (0 until paid)." }),
    createdAt: Timestamp,
    paidAt: Timestamp.nullable(),
    issuedAt: Timestamp.nullable().meta({
      description:
        "The invoice's date and tax point: when its payment was booked (equal to paidAt), for a paid invoice and one refunded or disputed since. null while open (not yet a tax invoice) or void (cancelled, nothing charged). createdAt stays when the checkout opened and the number was taken.",
    }),
    voidedAt: Timestamp.nullable(),
    refundedCents: Cents.meta({
      description:
        'What was refunded to the card so far, tax included (partial refunds add up; a refund that failed is not counted). The balance gives back its net share.',
    }),
    disputedCents: Cents.meta({
      description: 'What an open or lost dispute (chargeback) took back, at most what refunds left; won or prevented: 0.',
    }),
    bonusReversedCents: Cents.meta({
      description:
        'The bonus taken back with refunds and disputes: floor(bonus × netTaken / amountCents), netTaken being the net share of the card money refunded and disputed (floor((refunded + disputed) × net / gross)).',
    }),
    payment: z.object({
      provider: z.enum(['stripe', 'sandbox']),
      sessionId: text(255).nullable(),
      paymentIntentId: text(255).nullable(),
    }),
    creditNotes: InvoiceCreditNotes.meta({
      description: 'The credit notes issued against it (refunds, lost disputes, admin deductions, and their reversals), oldest first.',
    }),
  })
  .meta({
    id: 'Invoice',
    description:
      'Line items record the top-up and the bonus; each says what it charged and what it credited: totalCents is the sum of what was charged (paidCents once paid), creditedCents the sum of what was credited.',
  });

export const InvoiceList = listOf(Invoice, 'InvoiceList');

/** The bytes of an invoice PDF (GET /v1/invoices/:id/pdf); the document states its media type. */
export const InvoicePdf = z.string().max(10_000_000).meta({ format: 'binary', description: 'An application/pdf document.' });

// ---- auto top-up with a saved card ----------------------------------------------------------------

export const PaymentMethod = z
  .object({
    card: z
      .object({
        id: Uuid.meta({ description: 'This saved card (DELETE /v1/billing/payment-method/:id); a card saved again gets a new id.' }),
        brand: text(32).meta({ example: 'visa' }),
        last4: text(4).regex(/^\d{4}$/),
        savedAt: Timestamp,
      })
      .nullable()
      .meta({ description: 'The saved card as the payment provider shows it (no card data is kept here); null when none is saved.' }),
  })
  .meta({ id: 'PaymentMethod' });

export const PaymentMethodSetupRequest = z
  .object({
    successUrl: ReturnUrl.optional().meta({ description: 'Where the card page sends the customer once the card is saved.' }),
    cancelUrl: ReturnUrl.optional().meta({ description: 'Where the card page sends the customer who cancels.' }),
  })
  .strict()
  .meta({ id: 'PaymentMethodSetupRequest' });

export const PaymentMethodSetupResponse = z
  .object({
    url: z.url().max(8192).meta({ description: 'Send the customer to this hosted page to save a card (Stripe Checkout in setup mode).' }),
    sessionId: text(255),
  })
  .meta({ id: 'PaymentMethodSetupResponse' });

export const AutoTopUpRule = z
  .object({
    enabled: z.boolean().meta({ description: 'Enabling needs a saved card (409 `conflict` otherwise).' }),
    belowCents: int32(1, 99_999_999).meta({ description: 'A debit that leaves the balance below this starts an auto top-up.' }),
    amountCents: int32(1, 99_999_999).meta({
      description: 'What each auto top-up charges: between the minimum and maximum top-up of GET /v1/billing/config.',
    }),
    maxPerDay: int32(1, 10).meta({ description: 'Auto top-ups attempted per UTC day, at most.' }),
  })
  .strict()
  .meta({ id: 'AutoTopUpRule' });

export const AutoTopUp = AutoTopUpRule.extend({
  cardSaved: z.boolean(),
  attemptsToday: int32(0, 10).meta({ description: 'Auto top-ups attempted this UTC day.' }),
  inFlight: z.boolean().meta({ description: 'An attempt waits for the payment provider (one at a time).' }),
  consecutiveFailures: int32(0, 1000).meta({
    description: 'Failed attempts since the last success; at the platform limit the rule turns off.',
  }),
  disabledReason: z
    .enum(['failures', 'card_removed', 'authentication_required'])
    .nullable()
    .meta({ description: 'Why the service turned the rule off; null when it is on or the account turned it off.' }),
  lastFailure: z.object({ at: Timestamp, code: text(64).meta({ example: 'card_declined' }), invoiceId: Uuid }).nullable(),
  pendingPayment: z
    .object({
      invoiceId: Uuid,
      url: text(8192).meta({
        description:
          "The payment provider's hosted page (Stripe Checkout) where the customer pays this invoice; in the local sandbox, its page.",
      }),
      expiresAt: Timestamp,
    })
    .nullable()
    .meta({
      description:
        'The card asked for authentication (`authentication_required`): no more off-session charges until the customer pays this invoice at `url`, which turns the rule back on.',
    }),
})
  .strip()
  .meta({ id: 'AutoTopUp' });
