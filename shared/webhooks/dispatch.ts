import { createHash } from 'node:crypto';
import * as accessPatterns from '../db/access-patterns.ts';
import { asKind, type EventItem, type WebhookDeliveryItem, type WebhookEndpointItem } from '../db/items.ts';
import { keys } from '../db/keys.ts';
import { WEBHOOK_SHARDS } from '../db/table.ts';
import { isConditionFailed, transact, writeIfFirst, writeItem } from '../db/write.ts';
import { errorFields, logger } from '../observability/logger.ts';
import { putMetric } from '../observability/metrics.ts';
import { EVENT_RETENTION_DAYS, eventWrite, receivesType } from './events.ts';
import { FairPool } from './fair-pool.ts';
import { queueMailFor } from './mail-queue.ts';
import { sendWebhook, type SendResult } from './send.ts';
import { signedHeaders } from './signing.ts';
import { checkDeliveryTarget, TargetRefusedError } from './targets.ts';

/**
 * Delivery of events to the accounts' webhook endpoints, at least once (ARCHITECTURE.md, "Webhooks").
 *
 * 1. Fan-out (`Dispatcher.pollOutbox`): every event still in the outbox (sparse GSI2 `OUTBOX#<n>`, written
 *    with the change it reports) becomes one delivery per enabled, subscribed endpoint of its
 *    account, then leaves the outbox. Delivery ids are derived from (event, endpoint) and put
 *    only if absent, so a fan-out cut short and run again never makes a second delivery.
 * 2. Attempts (`Dispatcher.pollDue`): every delivery whose next attempt is due (sparse GSI2
 *    `WHDUE#<n>`, sort key `<dueAt>#<deliveryId>`) is claimed by moving its due time a lease ahead
 *    under a condition on the due time read, so two dispatchers never send the same attempt; a
 *    dispatcher that dies mid-attempt leaves the claim to expire and the attempt is made again.
 *
 * Fair per account: attempts run round-robin across accounts, at most PER_ACCOUNT_CONCURRENCY of
 * one account and OVERALL_CONCURRENCY in all at once, as a continuous scheduler (a freed slot goes
 * to the next account in turn, and a new poll may add work while slow attempts still run). An
 * account holds at most HELD_PER_ACCOUNT due attempts in memory; the rest are deferred in the
 * table (their due time moved to when its slots should be free), so its backlog never sits at the
 * head of the due index in front of another account's attempts.
 *
 * The local stack polls every 250 ms (dev/webhook-loop.ts); in AWS a function runs every minute
 * and polls every second while there is work, for up to RUN_MS (`dispatchFor`, functions/webhooks).
 * Tests call `drainOutbox`/`runDueDeliveries` with a `now` of their choosing to move time.
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
/** Attempts of one account in flight at once in one dispatcher: its hanging receivers hold these slots, never another account's. */
export const PER_ACCOUNT_CONCURRENCY = 4;
/** Attempts in flight at once in one dispatcher. */
export const OVERALL_CONCURRENCY = 32;
/** Due attempts of one account a dispatcher holds (queued or in flight); the rest are deferred in the table. */
export const HELD_PER_ACCOUNT = 4 * PER_ACCOUNT_CONCURRENCY;
/** What an attempt is taken to last before one of the account's attempts has been timed, to spread its deferred ones. */
const ASSUMED_ATTEMPT_MS = 1_000;
/** A deferred attempt is due again no sooner than this. */
const MIN_DEFER_MS = 1_000;
/**
 * Fan-outs (table writes only, no receiver) of one account in flight at once, and in all; and the
 * events of one account a dispatcher holds (the rest wait in the outbox): another account's event
 * is fanned out at the next free slot, never behind thousands.
 */
const FAN_OUT_PER_ACCOUNT = 4;
const FAN_OUT_CONCURRENCY = 16;
const FAN_OUT_HELD_PER_ACCOUNT = 20;
/** An event just fanned out (or failed) is not taken again for this long: the outbox index may still list it. */
const RECENT_MS = 10_000;
/** Deferrals (one conditional write each) at once, in the background of the polls. */
const DEFER_CONCURRENCY = 8;

export interface DispatchOptions {
  /** Per attempt, connect to last excerpt byte. */
  timeoutMs?: number;
  /** Attempts in flight at once (OVERALL_CONCURRENCY). */
  concurrency?: number;
  /** Attempts of one account in flight at once (PER_ACCOUNT_CONCURRENCY). */
  perAccount?: number;
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

/** Fans out what is in the outbox now (tests; the loops use a Dispatcher): polls until no event is new. */
export async function drainOutbox(now = new Date()): Promise<{ events: number; deliveries: number }> {
  const dispatcher = new Dispatcher();
  while (await dispatcher.pollOutbox(now)) await dispatcher.idle();
  await dispatcher.idle();
  return { events: dispatcher.summary.events, deliveries: dispatcher.summary.deliveries };
}

/**
 * Up to MAX_PAGES pages of every shard, each page after the last item of the previous one. One
 * query at a time: the local loop polls every 250 ms next to the API, on the same DynamoDB.
 */
async function readShards<T>(page: (shard: number, after?: T) => Promise<T[]>): Promise<T[]> {
  const items: T[] = [];
  for (let shard = 0; shard < WEBHOOK_SHARDS; shard++) {
    let after: T | undefined;
    for (let n = 0; n < MAX_PAGES; n++) {
      const batch = await page(shard, after);
      items.push(...batch);
      if (batch.length < PAGE) break;
      after = batch.at(-1);
    }
  }
  return items;
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
  // Mail subscribes to the same events (mail-queue.ts): queued before the event leaves the outbox, once.
  await queueMailFor(event, now);
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

export interface DispatchSummary {
  /** Events fanned out, and the deliveries they made. */
  events: number;
  deliveries: number;
  attempted: number;
  succeeded: number;
  /** Failed attempts that will be retried. */
  retrying: number;
  /** Deliveries that ended failed (window over, endpoint gone or disabled, event expired). */
  failed: number;
  /** Due attempts moved later because their account already held HELD_PER_ACCOUNT here. */
  deferred: number;
}
export type DueSummary = Omit<DispatchSummary, 'events' | 'deliveries'>;

interface FanOutTask {
  event: EventItem;
  now: Date;
  /** The endpoints of each account, read once per poll. */
  endpointsOf: Map<string, Promise<WebhookEndpointItem[]>>;
}

interface Queued {
  item: WebhookDeliveryItem;
  /** The poll's `now`, and the clock then: an attempt that waited for a slot is made at `now` plus the wait (whole seconds: a test's exact `now` stays exact). */
  now: Date;
  polledAt: number;
}

/**
 * The webhook work of one process, fed by polls of the outbox and of the due index: fan-outs and
 * attempts each in a FairPool keyed by account, deferrals in the background. Its caps hold per
 * dispatcher; the local stack has one, and in AWS one run at a time (dispatchFor ends before the
 * next minute's run starts).
 */
export class Dispatcher {
  readonly summary: DispatchSummary = { events: 0, deliveries: 0, attempted: 0, succeeded: 0, retrying: 0, failed: 0, deferred: 0 };
  private readonly fanOuts: FairPool<FanOutTask>;
  private readonly attempts: FairPool<Queued>;
  /** Deferrals run in the background, so a long one (a backlog of thousands) never holds up the next poll. */
  private readonly deferrals: FairPool<{ item: WebhookDeliveryItem; until: string }>;
  /** Events and deliveries queued, in flight or being deferred here: a poll does not take them twice. */
  private readonly held = new Set<string>();
  /** Events fanned out (or failed) lately, with when. */
  private readonly recent = new Map<string, number>();
  /** Per account, the recent mean time of an attempt (ms): how far to spread its deferred attempts. */
  private readonly attemptMs = new Map<string, number>();
  private readonly timeoutMs: number;
  private readonly perAccount: number;
  /** The oldest due attempt any poll of this run read, in seconds behind its `now` (undefined before a poll read the index). */
  private backlogAgeSeconds: number | undefined;

  constructor(options: DispatchOptions = {}) {
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.perAccount = Math.max(1, options.perAccount ?? PER_ACCOUNT_CONCURRENCY);
    this.fanOuts = new FairPool((task) => this.fanOut(task), FAN_OUT_PER_ACCOUNT, FAN_OUT_CONCURRENCY);
    this.attempts = new FairPool((queued) => this.run(queued), this.perAccount, Math.max(1, options.concurrency ?? OVERALL_CONCURRENCY));
    this.deferrals = new FairPool((d) => this.defer(d.item, d.until), DEFER_CONCURRENCY, DEFER_CONCURRENCY);
  }

  /** Whether fan-outs, attempts or deferrals are queued or in flight. */
  get busy(): boolean {
    return this.fanOuts.busy || this.attempts.busy || this.deferrals.busy;
  }

  /** Resolves once everything queued has been done. */
  async idle(): Promise<void> {
    while (this.busy) await Promise.all([this.fanOuts.idle(), this.attempts.idle(), this.deferrals.idle()]);
  }

  /** Drops what has not started (it stays in the outbox or due, for the next run: nothing is lost), then waits for what has. */
  async finish(): Promise<void> {
    for (const task of this.fanOuts.clear()) this.held.delete(task.event.eventId);
    for (const queued of this.attempts.clear()) this.held.delete(queued.item.deliveryId);
    for (const deferral of this.deferrals.clear()) this.held.delete(deferral.item.deliveryId);
    await this.idle();
  }

  /**
   * Reads the outbox (every shard, up to MAX_PAGES pages each; pages continue after the last event
   * seen) and queues the events not held here yet, at most FAN_OUT_HELD_PER_ACCOUNT of one account.
   * Resolves once read, not when fanned out; returns how many were queued.
   */
  async pollOutbox(now = new Date()): Promise<number> {
    const outbox = await readShards((shard, after?: EventItem) => accessPatterns.outboxOfShard(shard, PAGE, after?.eventId));
    const endpointsOf = new Map<string, Promise<WebhookEndpointItem[]>>();
    for (const [id, at] of this.recent) if (Date.now() - at > RECENT_MS) this.recent.delete(id);
    let queued = 0;
    for (const event of outbox) {
      if (this.held.has(event.eventId) || this.recent.has(event.eventId)) continue;
      if (this.fanOuts.queued(event.accountId) + this.fanOuts.running(event.accountId) >= FAN_OUT_HELD_PER_ACCOUNT) continue;
      this.held.add(event.eventId);
      this.fanOuts.push(event.accountId, { event, now, endpointsOf });
      queued++;
    }
    return queued;
  }

  private async fanOut({ event, now, endpointsOf }: FanOutTask): Promise<void> {
    try {
      if (!endpointsOf.has(event.accountId)) endpointsOf.set(event.accountId, allEndpointsOf(event.accountId));
      const made = await fanOut(event, await endpointsOf.get(event.accountId)!, now);
      this.summary.deliveries += made;
      this.summary.events++;
    } catch (err) {
      // One event's trouble (a throttled write) must not hold up the others; it stays in the outbox.
      endpointsOf.delete(event.accountId);
      logger.error('webhook fan-out failed', { eventId: event.eventId, ...errorFields(err) });
    } finally {
      this.held.delete(event.eventId);
      this.recent.set(event.eventId, Date.now());
    }
  }

  /**
   * Reads the due attempts, queues those not held here yet (starting what the caps allow) and
   * defers each account's beyond HELD_PER_ACCOUNT. Resolves once they are read, not when they are
   * sent or deferred; returns how many were queued.
   */
  async pollDue(now = new Date()): Promise<number> {
    const nowIso = now.toISOString();
    const due = await readShards((shard, after?: WebhookDeliveryItem) => accessPatterns.dueDeliveriesOfShard(shard, nowIso, PAGE, after));
    this.noteBacklog(due, now);
    const byAccount = new Map<string, WebhookDeliveryItem[]>();
    for (const item of due) {
      if (this.held.has(item.deliveryId)) continue;
      const list = byAccount.get(item.accountId);
      if (list) list.push(item);
      else byAccount.set(item.accountId, [item]);
    }
    const polledAt = Date.now();
    let queued = 0;
    for (const [accountId, items] of byAccount) {
      const room = Math.max(0, HELD_PER_ACCOUNT - this.attempts.queued(accountId) - this.attempts.running(accountId));
      for (const item of items.slice(0, room)) {
        this.held.add(item.deliveryId);
        this.attempts.push(accountId, { item, now, polledAt });
        queued++;
      }
      // The rest come due again about when the account's slots should be free for them, in order.
      const each = this.attemptMs.get(accountId) ?? ASSUMED_ATTEMPT_MS;
      const ahead = this.attempts.queued(accountId) + this.attempts.running(accountId);
      items.slice(room).forEach((item, i) => {
        const delay = Math.max(MIN_DEFER_MS, Math.ceil((ahead + i + 1) / this.perAccount) * each);
        this.held.add(item.deliveryId);
        this.deferrals.push(accountId, { item, until: new Date(now.getTime() + delay).toISOString() });
      });
    }
    return queued;
  }

  /**
   * The backlog's age from what the poll read anyway (no other query): each shard's first page is
   * its oldest due entries, so the oldest entry read is the oldest due in all (0 when none is due).
   * Age counts from when the attempt became due: a deferred or redelivered one from its new time.
   */
  private noteBacklog(due: WebhookDeliveryItem[], now: Date): void {
    let oldest = now.getTime();
    for (const item of due) {
      const dueAt = Date.parse(item.GSI2SK ? keys.deliveryDueAt(item.GSI2SK) : (item.nextAttemptAt ?? ''));
      if (dueAt < oldest) oldest = dueAt;
    }
    const age = Math.floor((now.getTime() - oldest) / 1000);
    this.backlogAgeSeconds = Math.max(this.backlogAgeSeconds ?? 0, age);
  }

  /**
   * `WebhookBacklogOldestAge`, once per run: the oldest its polls saw (0 when nothing was due), so
   * an alarm sees the backlog grow and drain run by run. Nothing when no poll read the index.
   */
  reportBacklog(): void {
    if (this.backlogAgeSeconds === undefined) return;
    putMetric('WebhookBacklogOldestAge', this.backlogAgeSeconds);
    this.backlogAgeSeconds = undefined;
  }

  private async defer(item: WebhookDeliveryItem, until: string): Promise<void> {
    try {
      if (await defer(item, until)) this.summary.deferred++;
    } catch (err) {
      // Left due: a later poll tries again.
      logger.error('webhook attempt deferral failed', { deliveryId: item.deliveryId, ...errorFields(err) });
    } finally {
      this.held.delete(item.deliveryId);
    }
  }

  private async run({ item, now, polledAt }: Queued): Promise<void> {
    const started = Date.now();
    try {
      const waited = Math.floor((started - polledAt) / 1000) * 1000;
      const outcome = await attempt(item, new Date(now.getTime() + waited), this.timeoutMs);
      if (outcome === 'skipped') return;
      putMetric('WebhookDeliveries', 1, { Outcome: OUTCOME_METRIC[outcome] });
      this.summary.attempted++;
      this.summary[outcome]++;
      const took = Date.now() - started;
      const before = this.attemptMs.get(item.accountId);
      this.attemptMs.set(item.accountId, before === undefined ? took : Math.round(before * 0.7 + took * 0.3));
    } catch (err) {
      // One delivery's trouble (a throttled write) must not stop the others; its claim expires and it is retried.
      logger.error('webhook attempt failed', { deliveryId: item.deliveryId, ...errorFields(err) });
    } finally {
      this.held.delete(item.deliveryId);
    }
  }
}

/** One pass as the tests drive it: every due attempt at `now`, fairly, and the outcome once all are made. */
export async function runDueDeliveries(now = new Date(), options: DispatchOptions = {}): Promise<DueSummary> {
  const dispatcher = new Dispatcher(options);
  await dispatcher.pollDue(now);
  await dispatcher.idle();
  dispatcher.reportBacklog();
  const { events: _events, deliveries: _deliveries, ...due } = dispatcher.summary;
  return due;
}

/** How long one AWS run keeps polling (the schedule is a minute: a run ends, attempts in flight included, before the next starts). */
export const RUN_MS = 50_000;
/** Between two polls of one run. */
export const POLL_MS = 1_000;

/**
 * One dispatcher run (functions/webhooks): fan-out and a poll every POLL_MS for up to `runMs`,
 * while there is work; a run that finds nothing ends at once. An event made while a run is busy is
 * sent within about a second; otherwise at the next run. Attempts not started when the time is up
 * stay due for the next run; those in flight are awaited. A failed fan-out is thrown at the end
 * (the attempts go on); a failed poll stops the run and is thrown.
 */
export async function dispatchFor(runMs = RUN_MS, options: DispatchOptions & { pollMs?: number } = {}): Promise<DispatchSummary> {
  const end = Date.now() + runMs;
  const pollMs = options.pollMs ?? POLL_MS;
  const dispatcher = new Dispatcher(options);
  let outboxError: unknown;
  try {
    for (;;) {
      // The clock, not the event's `time`: a retried or late invocation must not act in the past.
      const now = new Date();
      // Both polls at once; a failing outbox read must not stop the due attempts: it is thrown at the end.
      const [events, attempts] = await Promise.all([
        dispatcher.pollOutbox(now).catch((err: unknown) => {
          outboxError ??= err;
          return 0;
        }),
        dispatcher.pollDue(now),
      ]);
      if ((!events && !attempts && !dispatcher.busy) || Date.now() + pollMs >= end) break;
      await new Promise((resolve) => setTimeout(resolve, pollMs));
    }
  } finally {
    await dispatcher.finish();
    dispatcher.reportBacklog();
  }
  if (outboxError) throw outboxError;
  return dispatcher.summary;
}

type Outcome = 'skipped' | 'succeeded' | 'retrying' | 'failed';

/**
 * `WebhookDeliveries` by Outcome, one line per attempt: `delivered`; `failed` (retried later);
 * `given-up` (the delivery ended failed: its window is over, or its endpoint or event is gone).
 */
const OUTCOME_METRIC = { succeeded: 'delivered', retrying: 'failed', failed: 'given-up' } as const;

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

/** Moves a due attempt to `until` (no attempt made), under the same condition as a claim; false when someone else moved it first. */
async function defer(seen: WebhookDeliveryItem, until: string): Promise<boolean> {
  if (!seen.GSI2SK) return false;
  try {
    await writeItem({
      Update: {
        Key: keys.webhookDelivery(seen.endpointId, seen.deliveryId),
        UpdateExpression: 'SET GSI2SK = :later, nextAttemptAt = :until',
        ConditionExpression: 'GSI2SK = :seen',
        ExpressionAttributeValues: { ':later': keys.deliveryDue(seen.deliveryId, until).GSI2SK, ':until': until, ':seen': seen.GSI2SK },
      },
    });
    return true;
  } catch (err) {
    if (isConditionFailed(err)) return false;
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
    putMetric('WebhookEndpointsDisabled', 1);
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
