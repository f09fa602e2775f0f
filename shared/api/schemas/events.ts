import * as z from 'zod';
import type { EventType } from '../event-types.ts';
import { Cents, Count, SignedCents, Timestamp, Uuid, text } from './common.ts';
import { Invoice } from './billing.ts';
import { CreditNote } from './credit-notes.ts';
import { ApiKey } from './keys.ts';
import { LedgerEntryView } from './money.ts';
import { ResourcesSchema, Server } from './servers.ts';

/**
 * What each event type carries in `data`: one schema per type, checked by the compiler to cover
 * every type (shared/api/event-types.ts). From these the document gets its `webhooks` section
 * (one entry per type, the body a receiver gets) and `/v1/events` its union discriminated by
 * `type`; outside AWS every event the API answers with is checked against them.
 */
const Suspension = Server.extend({
  reason: z.enum(['balance', 'budget', 'admin']).meta({ description: 'Why the platform suspended it (as `suspendedReason`).' }),
});

/** How an install the watch followed went (docs/webhooks.md). */
const Install = z.object({
  kind: z.enum(['deploy', 'reinstall']),
  startedAt: Timestamp,
  endedAt: Timestamp,
});

/** Which ledger entry moved the balance across zero (or deeper below it): GET /v1/account/transactions shows it. */
const DebtCause = {
  entrySeq: Count.meta({ description: 'The ledger entry (its `seq`).' }),
  invoiceId: Uuid.nullable().meta({ description: 'The invoice the entry is about (a refund, a dispute, a top-up); null otherwise.' }),
  invoiceNumber: text(32).nullable(),
};

export const EVENT_DATA = {
  'server.created': Server,
  'server.resized': Server.extend({ previousResources: ResourcesSchema }),
  'server.suspended': Suspension,
  'server.unsuspended': Server,
  'server.deleted': Server,
  'server.installed': Server.extend({ install: Install }),
  'server.reinstalled': Server.extend({ install: Install }),
  'server.install_failed': Server.extend({
    install: Install.extend({
      reason: z
        .enum(['failed', 'timeout'])
        .meta({ description: '`failed`: the panel says so; `timeout`: still installing after the watch limit.' }),
    }),
  }),
  'balance.low': z.object({
    balanceCents: SignedCents,
    thresholdCents: Cents.meta({ description: 'The threshold in force (the account override, else the platform setting).' }),
  }),
  'invoice.paid': Invoice,
  'invoice.void': Invoice.extend({
    reason: text(200).meta({
      description: 'Why: the checkout expired or failed, the payment page could not be opened, an auto top-up failed.',
    }),
  }),
  'invoice.refunded': Invoice,
  'invoice.disputed': Invoice,
  'credit_note.issued': CreditNote,
  'ledger.entry': LedgerEntryView,
  'account.debt': z.object({
    debtCents: Cents.meta({ description: 'What the account owes now (−balanceCents).' }),
    previousDebtCents: Cents.meta({ description: 'What it owed before this booking (0: it just went below zero).' }),
    balanceCents: SignedCents,
    cause: z
      .enum(['refund', 'dispute', 'deduction', 'charge'])
      .meta({ description: 'The kind of ledger entry that took the balance there.' }),
    ...DebtCause,
  }),
  'account.debt_settled': z.object({
    settledCents: Cents.meta({ description: 'The debt this credit paid off (all of it: the balance is back at zero or above).' }),
    balanceCents: SignedCents,
    cause: z
      .enum(['topup', 'bonus', 'grant', 'refund', 'dispute'])
      .meta({ description: 'The kind of ledger entry that brought the balance back (a top-up, a grant, a failed refund, a won dispute).' }),
    ...DebtCause,
  }),
  'balance.runway_warning': z.object({
    horizonHours: Count.meta({ description: 'The warning horizon reached (setting `runwayWarningHours`).' }),
    hoursLeft: z.number().meta({
      description: 'Hours until the servers would be suspended at the current burn, the grace included (one decimal).',
    }),
    suspendAt: Timestamp.meta({ description: 'When the servers would be suspended (as `suspendAt` of GET /v1/account).' }),
    balanceCents: SignedCents,
    burnMillicentsPerHour: Count.meta({ description: 'What the running servers cost an hour, in millicents.' }),
    graceMinutes: Count.meta({
      description: 'The grace in force (setting `suspensionGraceMinutes`), counted from the balance reaching zero.',
    }),
  }),
  'auto_topup.failed': z.object({
    invoiceId: Uuid,
    invoiceNumber: text(32),
    amountCents: Cents,
    code: text(100).meta({ description: "The payment provider's failure code, e.g. `card_declined`, `authentication_required`." }),
    consecutiveFailures: Count,
    ruleDisabled: z.boolean().meta({ description: 'This failure turned the rule off (`auto_topup.disabled` follows).' }),
    paymentUrl: text(8192).nullable().meta({
      description:
        'Authentication required: where the customer completes this payment (Stripe Checkout); off-session charges stop until then. Null otherwise.',
    }),
  }),
  'auto_topup.disabled': z.object({
    reason: z.enum(['failures', 'authentication_required']),
    consecutiveFailures: Count,
    lastFailure: z.object({ at: Timestamp, code: text(100), invoiceId: Uuid }),
  }),
  'webhook_endpoint.disabled': z.object({
    id: Uuid,
    url: text(4096),
    disabledReason: z.literal('failing'),
    failingSince: Timestamp,
  }),
  'api_key.created': ApiKey,
  'account.sftp_password_set': z.object({
    serverIds: z
      .array(Uuid)
      .max(1000)
      .meta({ description: 'The servers the new password opens now (a server installing or suspended joins at the next set).' }),
  }),
  'account.email_change_requested': z.object({
    requestId: Uuid.meta({ description: 'This request; a newer one replaces it (its link stops working).' }),
    email: text(254).meta({ description: 'The new address, not in use until confirmed from it (never the token).' }),
    previousEmail: text(254).meta({ description: 'The address mail goes to until then.' }),
    tokenExpiresAt: Timestamp,
  }),
  'account.email_changed': z.object({
    requestId: Uuid,
    email: text(254).meta({ description: 'The account’s e-mail from now on.' }),
    previousEmail: text(254),
  }),
} as const satisfies Record<EventType, z.ZodObject>;

/** What an event of `type` carries: the writers (shared/webhooks/events.ts) are held to it by the compiler. */
export type EventData<T extends EventType> = z.input<(typeof EVENT_DATA)[T]>;

/** `server.created` → `ServerCreated`: the name of a type's schemas in the document. */
const pascal = (type: string): string =>
  type
    .split(/[._]/)
    .map((part) => part.charAt(0).toUpperCase() + part.slice(1))
    .join('');

const variants = (Object.entries(EVENT_DATA) as [EventType, z.ZodObject][]).map(([type, data]) => ({ type, data }));

const [firstEvent, ...otherEvents] = variants.map(({ type, data }) =>
  z
    .object({ id: Uuid, type: z.literal(type), createdAt: Timestamp, data })
    .meta({ id: `${pascal(type)}Event`, description: `A \`${type}\` event as GET /v1/events shows it.` }),
);

export const Event = z.discriminatedUnion('type', [firstEvent!, ...otherEvents]).meta({
  id: 'Event',
  description: 'What happened, by `type`: each type has its own `data` (the document lists them under `webhooks` too).',
});

/** The body one delivery POSTs to an endpoint: the event with `timestamp` (when it happened). */
export const WEBHOOK_PAYLOADS = variants.map(({ type, data }) => ({
  type,
  schema: z
    .object({ id: Uuid, type: z.literal(type), timestamp: Timestamp, data })
    .meta({ id: `${pascal(type)}Webhook`, description: `The body of a \`${type}\` delivery.` }),
}));
