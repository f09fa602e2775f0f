import type { z } from 'zod';
import type {
  CreateWebhookEndpoint,
  Event,
  UpdateWebhookEndpoint,
  WebhookDelivery,
  WebhookEndpoint,
  WebhookSecretRotation,
} from '../api/schemas.ts';
import * as accessPatterns from '../db/access-patterns.ts';
import type { Page, PageRequest } from '../db/access-patterns.ts';
import { decodeCursor } from '../db/cursor.ts';
import type { EventItem, WebhookDeliveryItem, WebhookEndpointItem } from '../db/items.ts';
import { keys } from '../db/keys.ts';
import { isConditionFailed, retrying, transact, writeItem } from '../db/write.ts';
import { ApiError, notFound } from '../errors.ts';
import { newId } from '../ids.ts';
import { canReadEvent, EVENT_READ_SCOPES, EVENT_SCOPES, EVENT_TYPES, readableEventTypes } from '../api/event-types.ts';
import { WEBHOOK_DESCRIPTION_MAX, WEBHOOK_URL_MAX } from '../api/webhook-limits.ts';
import { type EventType, receivedTypes } from './events.ts';
import { endpointLimitOf } from '../settings/limits.ts';
import { newSigningSecret } from './signing.ts';
import { redeliver } from './dispatch.ts';
import { storedTargetUrl } from './targets.ts';

/**
 * An account's webhook endpoints (the API side; delivery is shared/webhooks/dispatch.ts). The
 * signing secret is stored (it must sign every delivery) but shown only by the creating call and a
 * rotation; every view leaves it out.
 */
export type WebhookEndpointView = z.infer<typeof WebhookEndpoint>;
export type WebhookDeliveryView = z.infer<typeof WebhookDelivery>;
export type EventView = z.infer<typeof Event>;

const clip = (v: string | null | undefined, max: number): string | null => (v == null ? null : v.slice(0, max));

/** Endpoints per account: each event is delivered to each subscribed endpoint, so this bounds the fan-out of one event. */
export const MAX_WEBHOOK_ENDPOINTS = 10;
/** How long the previous secret keeps signing after a rotation: a day to deploy the new one on the receiver. */
export const PREVIOUS_SECRET_TTL_MS = 24 * 3_600_000;

/**
 * The view of a stored endpoint. Strings are clipped to what the API documents: earlier code stored
 * a url checked only before percent-encoding (up to 9 times longer), and such a row must still list.
 */
export function toEndpointView(item: WebhookEndpointItem, now = Date.now()): WebhookEndpointView {
  const previousLive = item.previousSecretExpiresAt && Date.parse(item.previousSecretExpiresAt) > now;
  return {
    id: item.endpointId,
    url: item.url.slice(0, WEBHOOK_URL_MAX),
    events: item.events as EventType[],
    receivedTypes: receivedTypes(item),
    description: clip(item.description, WEBHOOK_DESCRIPTION_MAX),
    enabled: item.enabled,
    disabledReason: item.disabledReason ?? null,
    failingSince: item.failingSince ?? null,
    previousSecretExpiresAt: previousLive ? item.previousSecretExpiresAt : null,
    createdAt: item.createdAt,
    updatedAt: item.updatedAt,
    labels: item.labels ?? {},
  };
}

export function toDeliveryView(item: WebhookDeliveryItem): WebhookDeliveryView {
  return {
    id: item.deliveryId,
    endpointId: item.endpointId,
    eventId: item.eventId,
    eventType: item.eventType as EventType,
    status: item.status,
    // The newest 100 attempts, each clipped to what the API documents.
    attempts: (item.attempts ?? []).slice(-100).map((a) => ({
      at: a.at,
      status: a.status,
      durationMs: a.durationMs,
      error: clip(a.error, 500),
      responseExcerpt: clip(a.responseExcerpt, 1024),
    })),
    nextAttemptAt: item.nextAttemptAt ?? null,
    createdAt: item.createdAt,
    updatedAt: item.updatedAt,
  };
}

/**
 * Who may point an endpoint at events: a credential sets an endpoint's url or events only if it
 * could read every type the endpoint is then sent (an explicit type it cannot read is 403, like a
 * route it lacks the scope for) and, when it changes an existing endpoint, every type the endpoint
 * is sent now (else a key could point an endpoint that carries billing events, and its pending
 * deliveries and redeliveries, at its own receiver). The endpoint records the credential's
 * event-reading scopes: an empty `events` means every type that credential could read.
 */
function checkSubscription(scopes: ReadonlySet<string>, types: readonly EventType[]): string[] {
  const unreadable = types.find((t) => !canReadEvent(scopes, t));
  if (unreadable) {
    const requiredScope = EVENT_SCOPES[unreadable];
    throw new ApiError('forbidden', `This credential lacks the scope ${requiredScope}, which ${unreadable} events need`, {
      requiredScope,
      eventType: unreadable,
    });
  }
  return EVENT_READ_SCOPES.filter((s) => scopes.has(s));
}

export const toEventView = (item: EventItem): EventView => ({
  id: item.eventId,
  type: item.type as EventType,
  createdAt: item.createdAt,
  data: item.data,
});

/** The caller's endpoint, or 404 (another account's endpoint is answered like an unknown id). */
export async function getOwnedEndpoint(accountId: string, endpointId: string): Promise<WebhookEndpointItem> {
  const item = await accessPatterns.webhookEndpointOfAccount(accountId, endpointId);
  if (!item) throw notFound('Webhook endpoint');
  return item;
}

const limitExceeded = (limit: number) =>
  new ApiError('limit_exceeded', `An account can have at most ${limit} webhook endpoints`, { limit });

/**
 * Adds an endpoint. The limit is a condition on the profile's endpoint count, moved in the same
 * transaction, so concurrent creates cannot pass it.
 */
export async function createEndpoint(
  accountId: string,
  input: z.infer<typeof CreateWebhookEndpoint>,
  scopes: ReadonlySet<string>,
): Promise<{ endpoint: WebhookEndpointView; secret: string }> {
  // Every check before the one write: a refused create stores nothing.
  const url = storedTargetUrl(input.url, WEBHOOK_URL_MAX);
  const events = [...new Set(input.events ?? [])];
  const recorded = checkSubscription(scopes, events);
  const now = new Date().toISOString();
  const endpointId = newId();
  const secret = newSigningSecret();
  const item: WebhookEndpointItem = {
    ...keys.webhookEndpoint(accountId, endpointId),
    kind: 'webhookEndpoint',
    endpointId,
    accountId,
    url,
    events,
    scopes: recorded,
    description: input.description || null,
    labels: input.labels ?? {},
    enabled: true,
    disabledReason: null,
    secret,
    previousSecret: null,
    previousSecretExpiresAt: null,
    failingSince: null,
    createdAt: now,
    updatedAt: now,
  };
  // A trial account's limit may be lower (platform settings).
  const limit = await endpointLimitOf(accountId, MAX_WEBHOOK_ENDPOINTS);
  try {
    await transact([
      { name: 'endpoint', Put: { Item: item, ConditionExpression: 'attribute_not_exists(PK)' } },
      {
        name: 'profile',
        Update: {
          Key: keys.account(accountId),
          UpdateExpression: 'SET webhookEndpointCount = if_not_exists(webhookEndpointCount, :zero) + :one',
          ConditionExpression: 'attribute_exists(PK) AND (attribute_not_exists(webhookEndpointCount) OR webhookEndpointCount < :max)',
          ExpressionAttributeValues: { ':zero': 0, ':one': 1, ':max': limit },
        },
      },
    ]);
  } catch (err) {
    if (isConditionFailed(err, 'profile')) throw limitExceeded(limit);
    throw err;
  }
  return { endpoint: toEndpointView(item), secret };
}

export async function listEndpoints(accountId: string, page: PageRequest): Promise<Page<WebhookEndpointView>> {
  const result = await accessPatterns.webhookEndpointsOfAccount(accountId, page);
  return { data: result.data.map((item) => toEndpointView(item)), nextCursor: result.nextCursor };
}

export async function getEndpoint(accountId: string, endpointId: string): Promise<WebhookEndpointView> {
  return toEndpointView(await getOwnedEndpoint(accountId, endpointId));
}

/**
 * Changes what is given; enabling clears why the service disabled it and since when it was failing.
 * A change of url or events is checked against the endpoint as read (checkSubscription) and written
 * under a condition on that read, so a concurrent change is checked again rather than overwritten.
 */
export async function updateEndpoint(
  accountId: string,
  endpointId: string,
  input: z.infer<typeof UpdateWebhookEndpoint>,
  scopes: ReadonlySet<string>,
): Promise<WebhookEndpointView> {
  const events = input.events === undefined ? undefined : [...new Set(input.events)];
  return retrying(
    async () => {
      // Another account's endpoint is 404 whatever the body holds, as an unknown id is.
      const current = await getOwnedEndpoint(accountId, endpointId);
      const url = input.url === undefined ? undefined : storedTargetUrl(input.url, WEBHOOK_URL_MAX);
      const sets: string[] = ['updatedAt = :now'];
      const values: Record<string, unknown> = { ':now': new Date().toISOString(), ':read': current.updatedAt };
      const names: Record<string, string> = {};
      if (url !== undefined) {
        sets.push('#url = :url');
        names['#url'] = 'url';
        values[':url'] = url;
      }
      if (events !== undefined) {
        sets.push('events = :events');
        values[':events'] = events;
      }
      if (url !== undefined || events !== undefined) {
        checkSubscription(scopes, receivedTypes(current));
        sets.push('scopes = :scopes');
        values[':scopes'] = checkSubscription(scopes, (events ?? current.events) as EventType[]);
      }
      if (input.description !== undefined) {
        sets.push('description = :description');
        values[':description'] = input.description || null;
      }
      if (input.labels !== undefined) {
        sets.push('labels = :labels');
        values[':labels'] = input.labels;
      }
      if (input.enabled !== undefined) {
        sets.push('enabled = :enabled');
        values[':enabled'] = input.enabled;
        if (input.enabled) sets.push('disabledReason = :null, failingSince = :null');
        else sets.push('disabledReason = :null');
        values[':null'] = null;
      }
      const after = await writeItem({
        Update: {
          Key: keys.webhookEndpoint(accountId, endpointId),
          UpdateExpression: `SET ${sets.join(', ')}`,
          // Deleted meanwhile: the next read answers 404 rather than an endpoint brought back half-written.
          ConditionExpression: 'attribute_exists(PK) AND updatedAt = :read',
          ...(Object.keys(names).length ? { ExpressionAttributeNames: names } : {}),
          ExpressionAttributeValues: values,
          ReturnValues: 'ALL_NEW',
        },
      });
      return toEndpointView(after as unknown as WebhookEndpointItem);
    },
    {
      retryIf: () => true,
      exhausted: () => new ApiError('conflict', 'The endpoint kept changing while it was being updated; try again'),
    },
  );
}

/**
 * Deletes an endpoint and stops its pending deliveries: each loses its place in the retry queue
 * (GSI2) and ends `failed`. A delivery fanned out in the moment between the two is skipped by the
 * dispatcher, which finds no endpoint for it.
 */
export async function deleteEndpoint(
  accountId: string,
  endpointId: string,
): Promise<{ id: string; deleted: true; stoppedDeliveries: number }> {
  await getOwnedEndpoint(accountId, endpointId);
  try {
    await transact([
      { name: 'endpoint', Delete: { Key: keys.webhookEndpoint(accountId, endpointId), ConditionExpression: 'attribute_exists(PK)' } },
      {
        name: 'profile',
        Update: {
          Key: keys.account(accountId),
          UpdateExpression: 'SET webhookEndpointCount = webhookEndpointCount - :one',
          ConditionExpression: 'webhookEndpointCount > :zero',
          ExpressionAttributeValues: { ':one': 1, ':zero': 0 },
        },
      },
    ]);
  } catch (err) {
    // A concurrent delete got there first.
    if (isConditionFailed(err, 'endpoint')) throw notFound('Webhook endpoint');
    throw err;
  }
  const now = new Date().toISOString();
  let stopped = 0;
  for (const delivery of await accessPatterns.pendingDeliveriesOf(endpointId)) {
    try {
      await writeItem({
        Update: {
          Key: keys.webhookDelivery(endpointId, delivery.deliveryId),
          UpdateExpression: 'SET #status = :failed, nextAttemptAt = :null, updatedAt = :now REMOVE GSI2PK, GSI2SK',
          ConditionExpression: '#status = :pending',
          ExpressionAttributeNames: { '#status': 'status' },
          ExpressionAttributeValues: { ':failed': 'failed', ':pending': 'pending', ':null': null, ':now': now },
        },
      });
      stopped++;
    } catch (err) {
      // Its attempt finished meanwhile: nothing left to stop.
      if (!isConditionFailed(err)) throw err;
    }
  }
  return { id: endpointId, deleted: true, stoppedDeliveries: stopped };
}

/** A new current secret; the previous one keeps signing (a second signature) for PREVIOUS_SECRET_TTL_MS. */
export async function rotateSecret(accountId: string, endpointId: string): Promise<z.infer<typeof WebhookSecretRotation>> {
  const current = await getOwnedEndpoint(accountId, endpointId);
  const secret = newSigningSecret();
  const now = new Date();
  const previousSecretExpiresAt = new Date(now.getTime() + PREVIOUS_SECRET_TTL_MS).toISOString();
  try {
    await writeItem({
      Update: {
        Key: keys.webhookEndpoint(accountId, endpointId),
        UpdateExpression: 'SET secret = :new, previousSecret = :old, previousSecretExpiresAt = :until, updatedAt = :now',
        // Against the secret read: two rotations at once would otherwise drop a secret a receiver may already hold.
        ConditionExpression: 'secret = :old',
        ExpressionAttributeValues: { ':new': secret, ':old': current.secret, ':until': previousSecretExpiresAt, ':now': now.toISOString() },
      },
    });
  } catch (err) {
    if (isConditionFailed(err)) throw new ApiError('conflict', 'The endpoint changed while rotating its secret; try again');
    throw err;
  }
  return { secret, previousSecretExpiresAt };
}

export async function listDeliveries(accountId: string, endpointId: string, page: PageRequest): Promise<Page<WebhookDeliveryView>> {
  // A bad cursor is refused before any read, as on every listing (400, not the endpoint's 404).
  await decodeCursor(page.cursor, page.boundTo);
  await getOwnedEndpoint(accountId, endpointId);
  const result = await accessPatterns.deliveriesOfEndpoint(endpointId, page);
  return { data: result.data.map(toDeliveryView), nextCursor: result.nextCursor };
}

/** Schedules a delivery of the caller's endpoint again now (shared/webhooks/dispatch.ts makes the attempt). */
export async function redeliverDelivery(accountId: string, endpointId: string, deliveryId: string): Promise<WebhookDeliveryView> {
  const endpoint = await getOwnedEndpoint(accountId, endpointId);
  const delivery = await accessPatterns.deliveryOfEndpoint(endpointId, deliveryId);
  if (!delivery || delivery.accountId !== accountId) throw notFound('Webhook delivery');
  if (!endpoint.enabled) throw new ApiError('conflict', 'The endpoint is disabled; enable it before redelivering');
  return toDeliveryView(await redeliver(delivery));
}

/**
 * The caller's events that its scopes could read elsewhere (shared/api/event-types.ts): the others
 * are left out of the page by the query's filter, so pages and cursors stay those of the listing it
 * may see. Asking for a type by name that the credential cannot read is 403, as its route would be.
 */
export async function listEvents(
  accountId: string,
  page: PageRequest,
  scopes: ReadonlySet<string>,
  type?: EventType,
): Promise<Page<EventView>> {
  if (type) checkSubscription(scopes, [type]);
  const readable = readableEventTypes(scopes);
  // A credential that reads every type needs no filter: the listing reads as it always has.
  const types = type ? [type] : readable.length === EVENT_TYPES.length ? undefined : readable;
  const result = await accessPatterns.eventsOfAccount(accountId, page, types);
  return { data: result.data.map(toEventView), nextCursor: result.nextCursor };
}

/**
 * One event of the caller's, while it is kept (an expired one awaiting TTL deletion is 404), and
 * only if the credential could read its data elsewhere: one it cannot is 404 like an unknown id,
 * as the listing leaves it out (a 403 would say that the id exists and what it is).
 */
export async function getEvent(accountId: string, eventId: string, scopes: ReadonlySet<string>): Promise<EventView> {
  const item = await accessPatterns.eventOfAccount(accountId, eventId);
  if (!item || item.expiresAt <= Math.floor(Date.now() / 1000)) throw notFound('Event');
  if (!canReadEvent(scopes, item.type as EventType)) throw notFound('Event');
  return toEventView(item);
}
