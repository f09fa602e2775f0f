/**
 * The types of event an account's webhook endpoints can receive (README, "Webhooks"): one list,
 * without zod, so the event writers (shared/webhooks/events.ts) use it without loading schemas.
 */
export const EVENT_TYPES = [
  'server.created',
  'server.resized',
  'server.suspended',
  'server.unsuspended',
  'server.deleted',
  'balance.low',
  'invoice.paid',
  'invoice.void',
  'ledger.entry',
  'webhook_endpoint.disabled',
] as const;

export type EventType = (typeof EVENT_TYPES)[number];
