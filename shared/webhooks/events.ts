import type { EventItem } from '../db/items.ts';
import { keys } from '../db/keys.ts';
import type { NamedWrite } from '../db/write.ts';
import { newId } from '../ids.ts';
import { EVENT_READ_SCOPES, type EventType, readableEventTypes } from '../api/event-types.ts';
import type { EventData } from '../api/schemas/events.ts';

/**
 * Events: what happened to an account, recorded in the same transaction as the change it reports
 * (an outbox), so no event exists for a change that did not happen and none is lost for one that
 * did. Each event item carries a sparse GSI2 entry (OUTBOX#<n>) until the dispatcher has fanned it
 * out to the account's endpoints (shared/webhooks/dispatch.ts). Kept 30 days (TTL).
 */
export { EVENT_TYPES, type EventType } from '../api/event-types.ts';

export const EVENT_RETENTION_DAYS = 30;

/**
 * The event types an endpoint is sent: its subscription (`events`, empty: every type), cut to the
 * types the credential that last set its url or events could read (`scopes`). An endpoint stored
 * before scopes were recorded has none and keeps what it had: every type it subscribed to.
 */
export function receivedTypes(endpoint: { events: readonly string[]; scopes?: readonly string[] | null }): EventType[] {
  const readable = readableEventTypes(endpoint.scopes ?? EVENT_READ_SCOPES);
  return endpoint.events.length === 0 ? readable : readable.filter((t) => endpoint.events.includes(t));
}

/** Whether an endpoint is sent events of `type` (the dispatcher's fan-out asks this). */
export const receivesType = (endpoint: { events: readonly string[]; scopes?: readonly string[] | null }, type: string): boolean =>
  receivedTypes(endpoint).includes(type as EventType);

/** The event item for `type` (its id time-ordered), to put in the transaction of the change. */
export function eventItem<T extends EventType>(accountId: string, type: T, data: EventData<T>, now = new Date()): EventItem {
  const eventId = newId();
  return {
    ...keys.event(accountId, eventId),
    ...keys.outboxEntry(eventId),
    kind: 'event',
    eventId,
    accountId,
    type,
    data,
    createdAt: now.toISOString(),
    expiresAt: Math.floor(now.getTime() / 1000) + EVENT_RETENTION_DAYS * 86_400,
  };
}

/** The named transaction item that records an event with the change (`transact([...change, eventWrite(...)])`). */
export function eventWrite<T extends EventType>(
  accountId: string,
  type: T,
  data: EventData<T>,
  now = new Date(),
  name = `event:${type}`,
): NamedWrite {
  return { name, Put: { Item: eventItem(accountId, type, data, now), ConditionExpression: 'attribute_not_exists(PK)' } };
}
