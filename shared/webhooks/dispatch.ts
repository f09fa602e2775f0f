import { createHash } from 'node:crypto';
import { accessPatterns } from '../db/access-patterns.ts';
import { asKind, type EventItem, type WebhookDeliveryItem, type WebhookEndpointItem } from '../db/items.ts';
import { keys } from '../db/keys.ts';
import { WEBHOOK_SHARDS } from '../db/table.ts';
import { isConditionFailed, transact, writeIfFirst, writeItem } from '../db/write.ts';
import { errorFields, logger } from '../observability/logger.ts';
import { EVENT_RETENTION_DAYS, eventWrite, receivesType } from './events.ts';
import { sendWebhook, type SendResult } from './send.ts';
import { signedHeaders } from './signing.ts';
import { checkDeliveryTarget, TargetRefusedError } from './targets.ts';

/**
 * Delivery of events to the accounts' webhook endpoints, at least once (ARCHITECTURE.md, "Webhooks").
 *
 * 1. Fan-out (`drainOutbox`): every event still in the outbox (sparse GSI2 `OUTBOX#<n>`, written
 *    with the change it reports) becomes one delivery per enabled, subscribed endpoint of its
 *    account, then leaves the outbox. Delivery ids are derived from (event, endpoint) and put
 *    only if absent, so a fan-out cut short and run again never makes a second delivery.
 * 2. Attempts (`runDueDeliveries`): every delivery whose next attempt is due (sparse GSI2
 *    `WHDUE#<n>`, sort key `<dueAt>#<deliveryId>`) is claimed by moving its due time a lease ahead
 *    under a condition on the due time read, so two dispatchers never send the same attempt; a
 *    dispatcher that dies mid-attempt leaves the claim to expire and the attempt is made again.
 *
 * The local stack runs both every 250 ms (dev/webhook-loop.ts); in AWS a function does, every
 * minute (functions/webhooks). Tests call them with a `now` of their choosing to move time.
 */

/** Delay after the n-th failed attempt (1-based; the last one repeats): Svix's schedule. */
export const RETRY_DELAYS_MS = [5_000, 5 * 60_000, 30 * 60_000, 2 * 3_600_000, 5 * 3_600_000, 10 * 3_600_000] as const;
const DAY_MS = 86_400_000;
/** A delivery is retried for 3 days from its first attempt; the last attempt is made at the end of that window. */
export const RETRY_WINDOW_MS = 3 * DAY_MS;
/** An endpoint whose deliveries have failed without a success for this long is disabled at its next failure. */
export const DISABLE_AFTER_MS = 3 * DAY_MS;
/**
 * How long a claimed attempt is ours: longer than an attempt can take (the send timeout, 5 s by
 * default, plus a few table writes), so a live dispatcher never loses its claim, and short enough
 * that an attempt of a dispatcher that died is made again within a minute or two.
 */
export const LEASE_MS = 60_000;
export const DEFAULT_TIMEOUT_MS = 5_000;
/** Attempts kept on a delivery: the first (the retry window starts there) and the newest others. */
export const MAX_ATTEMPTS_KEPT = 20;
/** Items read per shard and query: one pass's work is bounded; the rest waits for the next pass. */
const PAGE = 100;
const MAX_PAGES = 10;

export interface DispatchOptions {
  /** Per attempt, connect to last excerpt byte. */
  timeoutMs?: number;
  /** Attempts in flight at once. */
  concurrency?: number;
}

/**
 * The delivery id of an event for an endpoint: a UUIDv7 whose time is the event's (deliveries list
 * newest first like everything else) and whose other bits hash (event, endpoint), so it is the
 * same every time the fan-out runs.
 */
export function deliveryIdOf(eventId: string, endpointId: string): string {
  const h = createHash('sha256').update(`${eventId}:${endpointId}`).digest('hex');
  const time = eventId.replace(/-/g, '').slice(0, 12);
  const variant = (8 | (Number.parseInt(h[3]!, 16) & 3)).toString(16);
  return `${time.slice(0, 8)}-${time.slice(8, 12)}-7${h.slice(0, 3)}-${variant}${h.slice(4, 7)}-${h.slice(7, 19)}`;
}

// Its subscription cut to what the credential that set it could read (events.ts).
const subscribed = (endpoint: WebhookEndpointItem, type: string): boolean => endpoint.enabled && receivesType(endpoint, type);

// ---- 1. fan-out ----

export async function drainOutbox(now = new Date()): Promise<{ events: number; deliveries: number }> {
  const endpointsOf = new Map<string, Promise<WebhookEndpointItem[]>>();
  let events = 0;
  let deliveries = 0;
  for (let shard = 0; shard < WEBHOOK_SHARDS; shard++) {
    // Pages continue after the last event seen: the index is eventually consistent, so events just
    // fanned out may still be listed at its head.
    let after: string | undefined;
    for (let page = 0; page < MAX_PAGES; page++) {
      const batch = await accessPatterns.outboxOfShard(shard, PAGE, after);
      for (const event of batch) {
        try {
          if (!endpointsOf.has(event.accountId)) endpointsOf.set(event.accountId, allEndpointsOf(event.accountId));
          deliveries += await fanOut(event, await endpointsOf.get(event.accountId)!, now);
          events++;
        } catch (err) {
          // One event's trouble (a throttled write) must not hold up the others; it stays in the outbox.
          endpointsOf.delete(event.accountId);
          logger.error('webhook fan-out failed', { eventId: event.eventId, ...errorFields(err) });
        }
      }
      if (batch.length < PAGE) break;
      after = batch.at(-1)!.eventId;
    }
  }
  return { events, deliveries };
}

async function allEndpointsOf(accountId: string): Promise<WebhookEndpointItem[]> {
  // At most MAX_WEBHOOK_ENDPOINTS (10) per account: one page holds them all.
  return (await accessPatterns.webhookEndpointsOfAccount(accountId, { limit: 100, boundTo: `dispatch:${accountId}` })).data;
}

async function fanOut(event: EventItem, endpoints: WebhookEndpointItem[], now: Date): Promise<number> {
  let made = 0;
  const at = now.toISOString();
  for (const endpoint of endpoints) {
    if (!subscribed(endpoint, event.type)) continue;
    const deliveryId = deliveryIdOf(event.eventId, endpoint.endpointId);
    const item: WebhookDeliveryItem = {
      ...keys.webhookDelivery(endpoint.endpointId, deliveryId),
      ...keys.deliveryDue(deliveryId, at),
      kind: 'webhookDelivery',
      deliveryId,
      endpointId: endpoint.endpointId,
      accountId: event.accountId,
      eventId: event.eventId,
      eventType: event.type,
      status: 'pending',
      attempts: [],
      nextAttemptAt: at,
      createdAt: at,
      updatedAt: at,
      expiresAt: Math.floor(now.getTime() / 1000) + EVENT_RETENTION_DAYS * 86_400,
    };
    if (await writeIfFirst({ Put: { Item: item, ConditionExpression: 'attribute_not_exists(PK)' } })) made++;
  }
  // Out of the outbox only once every delivery exists: a crash before this line means a re-run, not a loss.
  await writeIfFirst({
    Update: {
      Key: keys.event(event.accountId, event.eventId),
      UpdateExpression: 'REMOVE GSI2PK, GSI2SK',
      ConditionExpression: 'attribute_exists(GSI2PK)',
    },
  });
  return made;
}

// ---- 2. attempts ----

export interface DueSummary {
  attempted: number;
  succeeded: number;
  /** Failed attempts that will be retried. */
  retrying: number;
  /** Deliveries that ended failed (window over, endpoint gone or disabled, event expired). */
  failed: number;
}

export async function runDueDeliveries(now = new Date(), options: DispatchOptions = {}): Promise<DueSummary> {
  const summary: DueSummary = { attempted: 0, succeeded: 0, retrying: 0, failed: 0 };
  const due: WebhookDeliveryItem[] = [];
  for (let shard = 0; shard < WEBHOOK_SHARDS; shard++)
    due.push(...(await accessPatterns.dueDeliveriesOfShard(shard, now.toISOString(), PAGE)));
  const worker = async () => {
    for (let next = due.shift(); next; next = due.shift()) {
      try {
        const outcome = await attempt(next, now, options.timeoutMs ?? DEFAULT_TIMEOUT_MS);
        if (outcome !== 'skipped') summary.attempted++;
        if (outcome === 'succeeded' || outcome === 'retrying' || outcome === 'failed') summary[outcome]++;
      } catch (err) {
        // One delivery's trouble (a throttled write) must not stop the others; its claim expires and it is retried.
        logger.error('webhook attempt failed', { deliveryId: next.deliveryId, ...errorFields(err) });
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, options.concurrency ?? 8) }, worker));
  return summary;
}

type Outcome = 'skipped' | 'succeeded' | 'retrying' | 'failed';

async function attempt(seen: WebhookDeliveryItem, now: Date, timeoutMs: number): Promise<Outcome> {
  const claimed = await claim(seen, now);
  if (!claimed) return 'skipped';
  const { item, leasedSk } = claimed;
  const endpoint = await accessPatterns.webhookEndpointOfAccount(item.accountId, item.endpointId);
  if (!endpoint?.enabled) {
    await finish(
      item,
      leasedSk,
      now,
      { status: null, error: endpoint ? 'endpoint_disabled' : 'endpoint_deleted', durationMs: 0, responseExcerpt: null },
      true,
    );
    return 'failed';
  }
  const event = await accessPatterns.eventOfAccount(item.accountId, item.eventId);
  if (!event) {
    await finish(item, leasedSk, now, { status: null, error: 'event_expired', durationMs: 0, responseExcerpt: null }, true);
    return 'failed';
  }
  const result = await send(endpoint, event, now, timeoutMs);
  const outcome = await finish(item, leasedSk, now, result, false);
  await updateHealth(endpoint, result, now);
  return outcome;
}

/** The delivery, claimed for LEASE_MS: its due entry moved ahead under a condition on the entry read. */
async function claim(seen: WebhookDeliveryItem, now: Date): Promise<{ item: WebhookDeliveryItem; leasedSk: string } | undefined> {
  if (!seen.GSI2SK) return undefined;
  // From the clock, not from when the pass began: a pass may last minutes, and a lease counted from
  // its start could already have lapsed, letting an overlapping pass send the same attempt. (Tests
  // drive `now` ahead of the clock.)
  const leaseUntil = new Date(Math.max(now.getTime(), Date.now()) + LEASE_MS).toISOString();
  const due = keys.deliveryDue(seen.deliveryId, leaseUntil);
  try {
    const written = await writeItem({
      Update: {
        Key: keys.webhookDelivery(seen.endpointId, seen.deliveryId),
        UpdateExpression: 'SET GSI2SK = :leased, nextAttemptAt = :until',
        ConditionExpression: 'GSI2SK = :seen',
        ExpressionAttributeValues: { ':leased': due.GSI2SK, ':until': leaseUntil, ':seen': seen.GSI2SK },
        ReturnValues: 'ALL_NEW',
      },
    });
    return { item: asKind(written!, 'webhookDelivery'), leasedSk: due.GSI2SK };
  } catch (err) {
    if (isConditionFailed(err)) return undefined; // another dispatcher has it, or it was redelivered
    throw err;
  }
}

/** The Standard Webhooks request of one attempt, signed with the current secret and (for a day after a rotation) the previous one. */
export function webhookRequest(
  endpoint: WebhookEndpointItem,
  event: EventItem,
  now: Date,
): { body: string; headers: Record<string, string> } {
  const body = JSON.stringify({ id: event.eventId, type: event.type, timestamp: event.createdAt, data: event.data });
  const secrets = [endpoint.secret];
  if (endpoint.previousSecret && endpoint.previousSecretExpiresAt && Date.parse(endpoint.previousSecretExpiresAt) > now.getTime()) {
    secrets.push(endpoint.previousSecret);
  }
  // The signature's timestamp is the wall clock, not `now` (which tests move): receivers refuse
  // timestamps more than a few minutes from their own clock, as a replay protection.
  const timestamp = Math.floor(Date.now() / 1000);
  return {
    body,
    headers: {
      'content-type': 'application/json',
      'user-agent': 'control-plane-webhooks/1',
      // The event id: the same on every attempt and redelivery, so receivers deduplicate on it.
      ...signedHeaders(secrets, event.eventId, timestamp, body),
    },
  };
}

async function send(endpoint: WebhookEndpointItem, event: EventItem, now: Date, timeoutMs: number): Promise<SendResult> {
  let target: ReturnType<typeof checkDeliveryTarget>;
  try {
    target = checkDeliveryTarget(endpoint.url);
  } catch (err) {
    if (err instanceof TargetRefusedError) return { status: null, error: err.message, durationMs: 0, responseExcerpt: null };
    throw err;
  }
  const { body, headers } = webhookRequest(endpoint, event, now);
  return sendWebhook({ url: target.url, body, headers, timeoutMs, guarded: target.guarded });
}

const keepBounded = (attempts: WebhookDeliveryItem['attempts']): WebhookDeliveryItem['attempts'] =>
  attempts.length <= MAX_ATTEMPTS_KEPT ? attempts : [attempts[0]!, ...attempts.slice(-(MAX_ATTEMPTS_KEPT - 1))];

/** When the next attempt is due after this failed one, or null when the retry window is over. */
export function nextAttemptAfter(attempts: WebhookDeliveryItem['attempts'], now: Date, failedCount: number): Date | null {
  const first = attempts.length ? Date.parse(attempts[0]!.at) : now.getTime();
  const windowEnd = first + RETRY_WINDOW_MS;
  if (now.getTime() >= windowEnd) return null;
  const delay = RETRY_DELAYS_MS[Math.min(failedCount, RETRY_DELAYS_MS.length) - 1]!;
  return new Date(Math.min(now.getTime() + delay, windowEnd));
}

/** Records the attempt and the delivery's next state, if the claim is still ours. */
async function finish(item: WebhookDeliveryItem, leasedSk: string, now: Date, result: SendResult, close: boolean): Promise<Outcome> {
  const at = now.toISOString();
  const record = { at, status: result.status, durationMs: result.durationMs, error: result.error, responseExcerpt: result.responseExcerpt };
  const attempts = keepBounded([...(item.attempts ?? []), record]);
  const failedCount = (item.attempts ?? []).filter((a) => a.error !== null).length + 1;
  const next = result.error === null || close ? null : nextAttemptAfter(attempts, now, failedCount);
  const outcome: Outcome = result.error === null ? 'succeeded' : next ? 'retrying' : 'failed';
  const values: Record<string, unknown> = {
    ':attempts': attempts,
    ':status': outcome === 'succeeded' ? 'succeeded' : outcome === 'retrying' ? 'pending' : 'failed',
    ':next': next ? next.toISOString() : null,
    ':at': at,
    ':leased': leasedSk,
  };
  let update = 'SET attempts = :attempts, #status = :status, nextAttemptAt = :next, updatedAt = :at';
  if (next) {
    update += ', GSI2SK = :due';
    values[':due'] = keys.deliveryDue(item.deliveryId, next.toISOString()).GSI2SK;
  } else {
    update += ' REMOVE GSI2PK, GSI2SK';
  }
  try {
    await writeItem({
      Update: {
        Key: keys.webhookDelivery(item.endpointId, item.deliveryId),
        UpdateExpression: update,
        ConditionExpression: 'GSI2SK = :leased',
        ExpressionAttributeNames: { '#status': 'status' },
        ExpressionAttributeValues: values,
      },
    });
  } catch (err) {
    if (!isConditionFailed(err)) throw err;
    // Redelivered while this attempt ran: keep the attempt on record, leave the new schedule as it is.
    await writeIfFirst({
      Update: {
        Key: keys.webhookDelivery(item.endpointId, item.deliveryId),
        UpdateExpression: 'SET attempts = list_append(attempts, :one)',
        ConditionExpression: 'attribute_exists(PK)',
        ExpressionAttributeValues: { ':one': [record] },
      },
    });
  }
  return outcome;
}

/**
 * The endpoint's health after an attempt: a success clears `failingSince`; the first failure sets
 * it; a failure 3 days or more after it disables the endpoint and records
 * `webhook_endpoint.disabled` in the same transaction, so the account hears of it exactly once.
 */
async function updateHealth(endpoint: WebhookEndpointItem, result: SendResult, now: Date): Promise<void> {
  const key = keys.webhookEndpoint(endpoint.accountId, endpoint.endpointId);
  if (result.error === null) {
    if (endpoint.failingSince === null) return;
    await writeIfFirst({
      Update: {
        Key: key,
        UpdateExpression: 'SET failingSince = :null',
        ConditionExpression: 'attribute_exists(PK) AND failingSince = :seen',
        ExpressionAttributeValues: { ':null': null, ':seen': endpoint.failingSince },
      },
    });
    return;
  }
  if (!endpoint.failingSince) {
    await writeIfFirst({
      Update: {
        Key: key,
        UpdateExpression: 'SET failingSince = :now',
        ConditionExpression: 'attribute_exists(PK) AND (attribute_not_exists(failingSince) OR attribute_type(failingSince, :nullType))',
        ExpressionAttributeValues: { ':now': now.toISOString(), ':nullType': 'NULL' },
      },
    });
    return;
  }
  if (now.getTime() - Date.parse(endpoint.failingSince) < DISABLE_AFTER_MS) return;
  try {
    await transact([
      {
        name: 'endpoint',
        Update: {
          Key: key,
          UpdateExpression: 'SET enabled = :false, disabledReason = :reason, updatedAt = :at',
          ConditionExpression: 'attribute_exists(PK) AND enabled = :true AND failingSince = :seen',
          ExpressionAttributeValues: {
            ':false': false,
            ':true': true,
            ':reason': 'failing',
            ':at': now.toISOString(),
            ':seen': endpoint.failingSince,
          },
        },
      },
      eventWrite(
        endpoint.accountId,
        'webhook_endpoint.disabled',
        { id: endpoint.endpointId, url: endpoint.url, disabledReason: 'failing', failingSince: endpoint.failingSince },
        now,
      ),
    ]);
    logger.warn('webhook endpoint disabled', {
      accountId: endpoint.accountId,
      endpointId: endpoint.endpointId,
      failingSince: endpoint.failingSince,
    });
  } catch (err) {
    if (!isConditionFailed(err, 'endpoint')) throw err; // already disabled, re-enabled or recovered meanwhile
  }
}

// ---- manual redelivery ----

/**
 * Schedules a new attempt of a delivery now (the API's redeliver route): status `pending`, due
 * now. Its attempts stay; the webhook-id stays the event's id, so a receiver that already has it
 * can tell. A delivery past its retry window gets this one attempt.
 */
export async function redeliver(item: WebhookDeliveryItem): Promise<WebhookDeliveryItem> {
  const now = new Date().toISOString();
  const due = keys.deliveryDue(item.deliveryId, now);
  const written = await writeItem({
    Update: {
      Key: keys.webhookDelivery(item.endpointId, item.deliveryId),
      UpdateExpression: 'SET #status = :pending, nextAttemptAt = :now, updatedAt = :now, GSI2PK = :pk, GSI2SK = :sk',
      ConditionExpression: 'attribute_exists(PK)',
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: { ':pending': 'pending', ':now': now, ':pk': due.GSI2PK, ':sk': due.GSI2SK },
      ReturnValues: 'ALL_NEW',
    },
  });
  return asKind(written!, 'webhookDelivery');
}
