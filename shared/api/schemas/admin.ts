import * as z from 'zod';
import { Uuid, int32, Count, SignedCents, SafeText, listOf, text, Timestamp } from './common.ts';
import { Account } from './account.ts';
import { Server, ServerListQuery } from './servers.ts';
import { LedgerEntryView } from './money.ts';
import { Invoice } from './billing.ts';

/** What only the admin group adds: accounts and servers with their owner, credit adjustments. */

export const AdminAccount = Account.extend({
  serverCount: Count.meta({ description: 'Servers currently active or suspended.' }),
}).meta({ id: 'AdminAccount' });

export const AdminAccountList = listOf(AdminAccount, 'AdminAccountList');

export const AdminServer = Server.extend({ accountId: Uuid }).meta({ id: 'AdminServer' });
export const AdminServerList = listOf(AdminServer, 'AdminServerList');

/** GET /v1/admin/servers: the customer list's filters, and one account. */
export const AdminServerListQuery = ServerListQuery.extend({
  accountId: Uuid.optional().meta({
    description: "Only this account's servers (read from the account's own listing: the cheapest filter).",
  }),
});

export const AdminCredit = z
  .object({
    amountCents: int32(-10_000_000, 10_000_000)
      .refine((v) => v !== 0, 'must not be 0')
      .meta({ description: 'Positive grants, negative deducts (the balance may go below zero).' }),
    note: SafeText.trim().min(1).max(500),
    invoiceId: Uuid.optional().meta({
      description:
        "A deduction of paid credit: the account's paid invoice it takes back from (at most what refunds, disputes and earlier deductions left). Issues a credit note (GET /v1/credit-notes). Leave out for free or bonus credit: no note.",
    }),
  })
  .strict()
  .meta({ id: 'AdminCredit' });

export const AdminCreditResult = z
  .object({ accountId: Uuid, entry: LedgerEntryView, balanceCents: SignedCents })
  .meta({ id: 'AdminCreditResult' });

const keyLimit = int32(0, 1_000);
const requestCeiling = int32(1, 1_000_000);
const serverLimit = int32(0, 10_000);

export const AccountLimitsUpdate = z
  .object({
    maxApiKeys: keyLimit.nullable().optional().meta({
      description: 'API keys this account may hold, replacing maxApiKeysPerAccount and the trial limit; null removes the override.',
    }),
    requestsPerMinute: requestCeiling.nullable().optional().meta({
      description:
        "Requests per minute of all this account's credentials together, replacing accountRequestsPerMinute (it may go below one credential's 240); null removes the override.",
    }),
    maxServers: serverLimit.nullable().optional().meta({
      description: 'Active plus suspended servers, replacing maxServersPerAccount; lowering it deletes nothing. Null removes it.',
    }),
  })
  .strict()
  .refine((v) => Object.keys(v).length > 0, { message: 'Give at least one limit to change' })
  .meta({ id: 'AccountLimitsUpdate', description: 'Omitted limits keep their override.' });

export const AccountLimits = z
  .object({
    accountId: Uuid,
    overrides: z
      .object({ maxApiKeys: keyLimit.nullable(), requestsPerMinute: requestCeiling.nullable(), maxServers: serverLimit.nullable() })
      .meta({ description: 'What an admin set for this account (null: the platform setting applies).' }),
    effective: z
      .object({
        maxApiKeys: keyLimit,
        requestsPerMinute: requestCeiling,
        maxServers: serverLimit,
        trial: z.boolean().meta({ description: 'No top-up and no admin grant yet: the trial limits apply where no override does.' }),
      })
      .meta({ description: 'The limits in force (a change reaches every process within a minute).' }),
    apiKeyCount: Count.meta({ description: 'API keys the account holds (not revoked).' }),
  })
  .meta({ id: 'AccountLimits' });

export const AdminRefund = z
  .object({
    amountCents: int32(1, 10_000_000).meta({
      description: 'What to refund to the card, tax included; at most what is left unrefunded of the gross paid.',
    }),
    reason: SafeText.trim().min(1).max(500),
  })
  .strict()
  .meta({ id: 'AdminRefund' });

export const AdminRefundResult = z
  .object({
    refundId: z.string().max(255).meta({ description: "The payment provider's refund id." }),
    amountCents: int32(1, 10_000_000),
    status: z.string().max(64).meta({ description: "The provider's refund status (pending, succeeded, …)." }),
    // The invoice as it is now (a $ref, not a copy): the booking follows with the signed charge.refunded webhook.
    invoice: Invoice,
  })
  .meta({ id: 'AdminRefundResult' });

/** GET /v1/admin/health: what the deployment depends on outside AWS, as read now (or within the last minute). */
export const StripeWebhookHealth = z
  .object({
    status: z.enum(['ok', 'missing_events', 'endpoint_disabled', 'no_endpoint', 'unreachable', 'not_configured', 'sandbox']).meta({
      description:
        "`ok`: the endpoint is enabled and subscribed to every event the service books. `missing_events`: it misses those in `missingEvents` (run `npm run stripe:endpoint`, docs/deploy.md). `endpoint_disabled`: Stripe disabled it. `no_endpoint`: no endpoint at this API's webhook URL. `unreachable`: Stripe did not answer (or refused the key); nothing is known. `not_configured`: payments are off. `sandbox`: the local sandbox, no Stripe.",
    }),
    endpoint: z
      .object({ id: text(255), url: text(2048), status: text(32) })
      .nullable()
      .meta({ description: "The Stripe webhook endpoint at this API's `/v1/webhooks/stripe` (never its signing secret)." }),
    expectedEvents: z.array(text(100)).max(100).meta({ description: 'The Stripe events the service books (one list in code).' }),
    missingEvents: z.array(text(100)).max(100).meta({ description: 'Of `expectedEvents`, those the endpoint is not subscribed to.' }),
    checkedAt: Timestamp.meta({ description: 'When Stripe was asked (answers are kept for a minute).' }),
  })
  .meta({ id: 'StripeWebhookHealth' });

/** Whether invoices can name their seller (shared/invoices/parties.ts). */
export const InvoiceIssuerHealth = z
  .object({
    status: z.enum(['ok', 'missing', 'example']).meta({
      description:
        "`ok`: the seller's legal name and address are set. `missing`: some are not (`missingFields`): checkouts are refused (503 `payments_unavailable`) and auto top-ups wait, so no invoice goes out without a seller. `example`: the local stack's fictional seller; set the real one before charging anyone.",
    }),
    missingFields: z.array(text(64)).max(10).meta({ description: 'The settings to set, e.g. `invoiceIssuer.legalName`.' }),
  })
  .meta({ id: 'InvoiceIssuerHealth' });

export const AdminHealth = z.object({ stripeWebhook: StripeWebhookHealth, invoiceIssuer: InvoiceIssuerHealth }).meta({ id: 'AdminHealth' });
