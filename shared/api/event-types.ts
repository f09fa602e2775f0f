import type { Scope } from './scopes.ts';

/**
 * The types of event an account's webhook endpoints can receive (docs/webhooks.md), each with
 * the scope that reads its data elsewhere in the API: one table, without zod, so the event writers
 * (shared/webhooks/events.ts) use it without loading schemas. The scope is derived from the type,
 * never stored on the event, so events written before a scope changed read by the new rule.
 */
export const EVENT_SCOPES = {
  'server.created': 'servers:read',
  'server.resized': 'servers:read',
  'server.suspended': 'servers:read',
  'server.unsuspended': 'servers:read',
  'server.deleted': 'servers:read',
  // The install watch (shared/servers/install-watch.ts): a deploy's or a reinstall's install ended.
  'server.installed': 'servers:read',
  'server.reinstalled': 'servers:read',
  'server.install_failed': 'servers:read',
  // Balances, ledger entries and invoices are what GET /v1/account/transactions and /v1/invoices show.
  'balance.low': 'billing:read',
  'invoice.paid': 'billing:read',
  'invoice.void': 'billing:read',
  'invoice.refunded': 'billing:read',
  'invoice.disputed': 'billing:read',
  // A credit note (or its reversal) issued against a paid invoice, as GET /v1/credit-notes/:id shows it.
  'credit_note.issued': 'billing:read',
  'ledger.entry': 'billing:read',
  // Debt: a booking took the balance below zero (or deeper), and a credit brought it back to zero or above.
  'account.debt': 'billing:read',
  'account.debt_settled': 'billing:read',
  // Auto top-up: a saved card's off-session charge failed (no credit), and the rule turned off after repeated failures.
  // The time left before the servers would be suspended (the credit's runway plus the grace) fell to a warning horizon.
  'balance.runway_warning': 'billing:read',
  'auto_topup.failed': 'billing:read',
  'auto_topup.disabled': 'billing:read',
  'webhook_endpoint.disabled': 'webhooks:read',
  // Security notices: a credential or a login to the servers was made (the owner is told by mail too, docs/mail.md).
  'api_key.created': 'account:read',
  'account.sftp_password_set': 'servers:read',
  // The account's e-mail (GET /v1/account): a change asked for, and confirmed from the new address.
  'account.email_change_requested': 'account:read',
  'account.email_changed': 'account:read',
} as const satisfies Record<string, Scope>;

export type EventType = keyof typeof EVENT_SCOPES;

export const EVENT_TYPES = Object.keys(EVENT_SCOPES) as [EventType, ...EventType[]];

/** The scopes that read some event type: what an endpoint records of the credential that set it up. */
export const EVENT_READ_SCOPES: readonly Scope[] = [...new Set(Object.values(EVENT_SCOPES))];

/** Whether a holder of `scopes` may read events of `type`. */
export const canReadEvent = (scopes: Iterable<string>, type: EventType): boolean => new Set(scopes).has(EVENT_SCOPES[type]);

/** The event types a holder of `scopes` may read, in EVENT_TYPES order. */
export const readableEventTypes = (scopes: Iterable<string>): EventType[] => {
  const held = new Set(scopes);
  return EVENT_TYPES.filter((t) => held.has(EVENT_SCOPES[t]));
};
