import { randomUUID } from 'node:crypto';
import { keys } from '../db/keys.ts';
import { isConditionFailed, writeIfFirst, writeItem } from '../db/write.ts';
import { ApiError } from '../errors.ts';
import { errorFields, logger } from '../observability/logger.ts';
import { forgetLiveState } from './live.ts';

/**
 * One operation per server at a time (ARCHITECTURE.md, "The panel boundary"). Resize, delete,
 * power, suspend, unsuspend and the reconciler's repairs take a short lease on the server (a
 * conditional write with an expiry) and release it at the end. A second operation meanwhile gets
 * `409 operation_in_progress` with Retry-After and changes nothing anywhere, so no two requests
 * ever interleave their panel calls and record writes for one server — and compensation after a
 * failure restores what the record holds, which nobody else can have changed under the lease.
 *
 * Ending a lease drops the server's cached live state (live.ts), so the next read asks the panel.
 *
 * The expiry frees a server whose holder crashed; it is longer than any operation may take
 * (panel calls are bounded by their timeouts and retries).
 */
export const LEASE_MS = 90_000;

export type LeasedOperation = 'resize' | 'delete' | 'power' | 'suspend' | 'unsuspend' | 'reconcile';

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

export async function withServerLease<T>(serverId: string, operation: LeasedOperation, fn: () => Promise<T>): Promise<T> {
  const owner = randomUUID();
  const now = Date.now();
  const key = keys.serverLease(serverId);
  try {
    await writeItem({
      Put: {
        Item: {
          ...key,
          kind: 'server-lease',
          owner,
          operation,
          until: now + LEASE_MS,
          expiresAt: Math.ceil((now + LEASE_MS) / 1000) + 3600,
        },
        ConditionExpression: 'attribute_not_exists(PK) OR #until < :now',
        ExpressionAttributeNames: { '#until': 'until' },
        ExpressionAttributeValues: { ':now': now },
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      },
    });
  } catch (err) {
    if (!isConditionFailed(err)) throw err;
    const held = err.current.get('item');
    const until = Number(held?.until ?? now + 5_000);
    throw new OperationInProgressError(String(held?.operation ?? 'another change'), Math.max(1, Math.ceil((until - now) / 1000)));
  }
  try {
    return await fn();
  } finally {
    await Promise.all([
      // Whatever the operation did (or half did), the cached live state may no longer be true.
      forgetLiveState(serverId),
      // Only our own lease: one that expired and was taken over belongs to its new holder.
      writeIfFirst({
        Delete: {
          Key: key,
          ConditionExpression: '#owner = :owner',
          ExpressionAttributeNames: { '#owner': 'owner' },
          ExpressionAttributeValues: { ':owner': owner },
        },
      }).catch((err: unknown) => logger.warn('lease release failed; it expires by itself', { serverId, operation, ...errorFields(err) })),
    ]);
  }
}
