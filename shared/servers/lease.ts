import { randomUUID } from 'node:crypto';
import * as accessPatterns from '../db/access-patterns.ts';
import type { ServerItem } from '../db/items.ts';
import { keys } from '../db/keys.ts';
import { isConditionFailed, writeIfFirst, writeItem } from '../db/write.ts';
import { ApiError } from '../errors.ts';
import { errorFields, logger } from '../observability/logger.ts';
import { FINISHING_MS, timeLeftMs } from '../panel/deadline.ts';
import { forgetLiveState } from './live.ts';

/**
 * One operation per server at a time (ARCHITECTURE.md, "The panel boundary"). Resize, delete,
 * power, suspend, unsuspend and the reconciler's repairs take a short lease on the server (a
 * conditional write with an expiry) and release it at the end. A second operation meanwhile gets
 * `409 operation_in_progress` with Retry-After and changes nothing anywhere, so no two requests
 * ever interleave their panel calls and record writes for one server — and compensation after a
 * failure restores what the record holds, which nobody else can have changed under the lease.
 *
 * The system's operations (suspend, unsuspend, reconcile) come first: one that meets a lease marks
 * it (`systemWaitingUntil`, one conditional update), and while the mark stands no customer
 * operation can take the lease, not even right after the holder releases it; the system operation
 * polls until the holder is done (at most SYSTEM_WAIT_MS) and takes it. Without the mark, an
 * account sending power signals back to back from a dozen loops held the lease nearly all the time
 * and the billing pass's suspension found it taken every time.
 *
 * Ending a lease drops the server's cached live state (live.ts), so the next read asks the panel.
 */
export const SYSTEM_LEASE_MS = 90_000;
/** A power signal is one panel call (10 s timeout, never retried) and a few reads. */
export const POWER_LEASE_MS = 15_000;
/** How long a system operation waits for a customer's hold before leaving the work to the pending-repair pass. */
export const SYSTEM_WAIT_MS = 20_000;
const POLL_MS = 100;

export type CustomerOperation =
  | 'resize'
  | 'delete'
  | 'power'
  | 'rename'
  | 'startup'
  | 'reinstall'
  | 'addons'
  | 'users'
  | 'subdomain'
  | FileOperation;
/** Changes inside a server (files.ts, backups.ts, schedules.ts, network.ts, databases.ts): a few panel calls each, under the request's deadline. */
export type FileOperation = 'files' | 'backups' | 'schedules' | 'network' | 'databases';
export type SystemOperation = 'suspend' | 'unsuspend' | 'reconcile';
export type LeasedOperation = CustomerOperation | SystemOperation;

const SYSTEM: ReadonlySet<LeasedOperation> = new Set<SystemOperation>(['suspend', 'unsuspend', 'reconcile']);

/**
 * How long a hold may last before it frees itself (a crashed holder). A customer's hold ends with
 * its request: every panel call is cut to the request's deadline (shared/panel/deadline.ts), so
 * the lease is that plus the time to record; power holds at most POWER_LEASE_MS. Outside a request
 * (the billing pass's retention deletes, the system's own work) the panel calls are bounded by
 * their timeouts and retries, well under SYSTEM_LEASE_MS.
 */
function holdMs(operation: LeasedOperation): number {
  if (SYSTEM.has(operation)) return SYSTEM_LEASE_MS;
  const request = Math.min(SYSTEM_LEASE_MS, timeLeftMs() + FINISHING_MS);
  return operation === 'power' ? Math.min(POWER_LEASE_MS, request) : request;
}

export class OperationInProgressError extends ApiError {
  constructor(operation: string, retryAfterSeconds: number) {
    super(
      'operation_in_progress',
      `Another operation (${operation}) is changing this server; nothing was done. Retry in ${retryAfterSeconds} s.`,
      { operation, retryAfterSeconds },
      { 'Retry-After': String(retryAfterSeconds) },
    );
    this.name = 'OperationInProgressError';
  }
}

/** A server no customer operation may change: 409 `conflict` (deleted, or suspended until the account can pay again). */
export function stateConflict(item: Pick<ServerItem, 'status' | 'suspendedReason'>): ApiError | undefined {
  if (item.status === 'deleted') return new ApiError('conflict', 'The server is deleted');
  if (item.status === 'suspended') {
    return new ApiError(
      'conflict',
      item.suspendedReason === 'admin'
        ? 'The server is suspended by the operator; contact support'
        : item.suspendedReason === 'budget'
          ? "The server is suspended (the month's budget is reached); raise the budget to unsuspend it"
          : 'The server is suspended (the account balance ran out); top up to unsuspend it',
    );
  }
  return undefined;
}

/**
 * The cheap checks a customer's power signal or resize makes before it takes the lease, so an
 * account the billing pass is suspending cannot keep its servers held: a suspended or deleted
 * server is 409 `conflict`, an account at or below zero 402 `insufficient_credit` (its servers
 * are being suspended). Deleting stays open to an account in debt: it stops the charges.
 */
export async function assertCustomerMayHold(item: ServerItem): Promise<void> {
  const conflict = stateConflict(item);
  if (conflict) throw conflict;
  const profile = await accessPatterns.accountById(item.accountId);
  const balanceCents = Number(profile?.balanceCents ?? 0);
  if (balanceCents <= 0) {
    throw new ApiError(
      'insufficient_credit',
      `The balance is ${balanceCents} cents, so this account's servers are being suspended; top up first`,
      {
        balanceCents,
      },
    );
  }
}

const names = { '#until': 'until' };
const seconds = (ms: number) => Math.max(1, Math.ceil(ms / 1000));

/** One conditional put: the lease is ours, or the item as it stands (ALL_OLD) says why not. */
async function tryTake(serverId: string, owner: string, operation: LeasedOperation, now: number): Promise<Record<string, unknown> | null> {
  const until = now + holdMs(operation);
  const customer = !SYSTEM.has(operation);
  try {
    await writeItem({
      Put: {
        Item: {
          ...keys.serverLease(serverId),
          kind: 'server-lease',
          owner,
          operation,
          until,
          expiresAt: Math.ceil(until / 1000) + 3600,
        },
        // A customer also yields to a system operation's standing mark.
        ConditionExpression: customer
          ? '(attribute_not_exists(PK) OR #until < :now) AND (attribute_not_exists(systemWaitingUntil) OR systemWaitingUntil < :now)'
          : 'attribute_not_exists(PK) OR #until < :now',
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: { ':now': now },
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      },
    });
    return null;
  } catch (err) {
    if (!isConditionFailed(err)) throw err;
    return err.current.get('item') ?? {};
  }
}

/** The hold a caller met, as the 409 names it: the running operation, or the system operation waiting for it. */
function busy(held: Record<string, unknown>, now: number): OperationInProgressError {
  const until = Number(held.until ?? 0);
  const mark = Number(held.systemWaitingUntil ?? 0);
  const running = until >= now;
  const operation = String((running ? held.operation : held.systemWaiting) ?? 'another change');
  return new OperationInProgressError(operation, seconds(Math.max(until, mark) - now || 5_000));
}

/** Customers fail fast; the system marks the lease, waits (bounded by SYSTEM_WAIT_MS and a request's deadline) and takes it. */
async function acquire(serverId: string, owner: string, operation: LeasedOperation): Promise<void> {
  let held = await tryTake(serverId, owner, operation, Date.now());
  if (!held) return;
  if (!SYSTEM.has(operation)) throw busy(held, Date.now());
  // Inside a request (an unsuspension after a credit) the wait leaves room for the panel calls.
  const waitUntil = Date.now() + Math.min(SYSTEM_WAIT_MS, Math.max(0, timeLeftMs() - 15_000));
  while (held) {
    const now = Date.now();
    if (now >= waitUntil) throw busy(held, now);
    if (held.owner !== undefined && Number(held.systemWaitingUntil ?? 0) < waitUntil) {
      // On the hold as read: a hold taken meanwhile is met (and marked) on the next round.
      await writeIfFirst({
        Update: {
          Key: keys.serverLease(serverId),
          UpdateExpression: 'SET systemWaitingUntil = :mark, systemWaiting = :op',
          ConditionExpression: '#owner = :holder',
          ExpressionAttributeNames: { '#owner': 'owner' },
          ExpressionAttributeValues: { ':mark': waitUntil, ':op': operation, ':holder': held.owner },
        },
      });
    }
    await new Promise((r) => setTimeout(r, POLL_MS));
    held = await tryTake(serverId, owner, operation, Date.now());
  }
}

/**
 * Ends our own hold only (one that expired and was taken over belongs to its new holder). A hold
 * a system operation is waiting for is freed but kept with its mark, so the customer who asks next
 * cannot slip in before the system's next poll.
 */
async function release(serverId: string, owner: string): Promise<void> {
  const Key = keys.serverLease(serverId);
  const ours = { '#owner': 'owner' };
  try {
    await writeItem({
      Delete: {
        Key,
        ConditionExpression: '#owner = :owner AND attribute_not_exists(systemWaitingUntil)',
        ExpressionAttributeNames: ours,
        ExpressionAttributeValues: { ':owner': owner },
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      },
    });
  } catch (err) {
    if (!isConditionFailed(err) || err.current.get('item')?.owner !== owner) throw err;
    await writeIfFirst({
      Update: {
        Key,
        UpdateExpression: 'SET #until = :free REMOVE #owner, operation',
        ConditionExpression: '#owner = :owner',
        ExpressionAttributeNames: { ...ours, ...names },
        ExpressionAttributeValues: { ':owner': owner, ':free': 0 },
      },
    });
  }
}

export async function withServerLease<T>(serverId: string, operation: LeasedOperation, fn: () => Promise<T>): Promise<T> {
  const owner = randomUUID();
  await acquire(serverId, owner, operation);
  try {
    return await fn();
  } finally {
    await Promise.all([
      // Whatever the operation did (or half did), the cached live state may no longer be true.
      forgetLiveState(serverId),
      release(serverId, owner).catch((err: unknown) =>
        logger.warn('lease release failed; it expires by itself', { serverId, operation, ...errorFields(err) }),
      ),
    ]);
  }
}
