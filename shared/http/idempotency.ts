import { createHash } from 'node:crypto';
import { isConditionFailed, writeItem } from '../db/write.ts';
import { keys } from '../db/keys.ts';
import * as accessPatterns from '../db/access-patterns.ts';
import { ApiError } from '../errors.ts';

/**
 * `Idempotency-Key` with Stripe's semantics: the same key with the same request replays the first
 * response; the same key with another request is 409 `idempotency_conflict`. Records live 24 h.
 * A request that fails leaves no record, so it can be retried with the same key.
 */
const RECORD_TTL_SECONDS = 86_400;
/** A crashed request frees its key after this long. */
const LOCK_SECONDS = 60;

export interface StoredResponse {
  statusCode: number;
  body: unknown;
}

export const requestFingerprint = (method: string, path: string, body: unknown): string =>
  createHash('sha256')
    .update(`${method} ${path}\n${JSON.stringify(body ?? null)}`)
    .digest('hex');

export function validateIdempotencyKey(value: string): string {
  if (!/^[\x21-\x7e]{1,255}$/.test(value)) {
    throw new ApiError('validation_failed', 'Idempotency-Key must be 1 to 255 visible ASCII characters', {
      issues: [{ field: 'header.Idempotency-Key', message: 'must be 1 to 255 visible ASCII characters' }],
    });
  }
  return value;
}

/** Claims the key for this request, or returns the response to replay. */
export async function claimIdempotencyKey(accountId: string, key: string, fingerprint: string): Promise<StoredResponse | undefined> {
  const now = Math.floor(Date.now() / 1000);
  try {
    await writeItem({
      Put: {
        Item: {
          ...keys.idempotency(accountId, key),
          kind: 'idempotency',
          fingerprint,
          state: 'in_progress',
          lockedUntil: now + LOCK_SECONDS,
          expiresAt: now + RECORD_TTL_SECONDS,
        },
        ConditionExpression: 'attribute_not_exists(PK) OR expiresAt < :now OR (#state = :progress AND lockedUntil < :now)',
        ExpressionAttributeNames: { '#state': 'state' },
        ExpressionAttributeValues: { ':now': now, ':progress': 'in_progress' },
      },
    });
    return undefined;
  } catch (err) {
    if (!isConditionFailed(err)) throw err;
  }
  const record = await accessPatterns.idempotencyRecord(accountId, key);
  if (!record) return claimIdempotencyKey(accountId, key, fingerprint);
  if (record.fingerprint !== fingerprint) {
    throw new ApiError('idempotency_conflict', 'This Idempotency-Key was used with a different request');
  }
  if (record.state !== 'done') throw new ApiError('conflict', 'A request with this Idempotency-Key is still in progress');
  return record.response as StoredResponse;
}

export async function completeIdempotencyKey(accountId: string, key: string, response: StoredResponse): Promise<void> {
  await writeItem({
    Update: {
      Key: keys.idempotency(accountId, key),
      UpdateExpression: 'SET #state = :done, #response = :response REMOVE lockedUntil',
      ExpressionAttributeNames: { '#state': 'state', '#response': 'response' },
      ExpressionAttributeValues: { ':done': 'done', ':response': response },
    },
  });
}

export async function releaseIdempotencyKey(accountId: string, key: string): Promise<void> {
  await writeItem({ Delete: { Key: keys.idempotency(accountId, key) } });
}
