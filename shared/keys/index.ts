import type { z } from 'zod';
import { isConditionFailed, transact, writeItem } from '../db/write.ts';
import { keys } from '../db/keys.ts';
import { accessPatterns, type Page, type PageRequest } from '../db/access-patterns.ts';
import { getConfig } from '../config/env.ts';
import { ApiError, notFound } from '../errors.ts';
import type { ApiKey, CreateApiKey } from '../api/schemas.ts';
import type { Principal } from '../auth/principal.ts';
import { displayPrefix, generateApiKey, hashApiKey, lastFour } from '../auth/api-key-format.ts';
import type { ApiKeyHashItem, ApiKeyItem } from '../db/items.ts';
import { newId } from '../ids.ts';

export type ApiKeyView = z.infer<typeof ApiKey>;

const DAY_MS = 86_400_000;
/**
 * lastUsedAt is written at most this often per key: it tells an operator which keys are still in
 * use, to the hour. A write per request would double a GET's DynamoDB cost (README, "What it costs").
 */
export const LAST_USED_INTERVAL_MS = 60 * 60_000;

export function toView(item: Omit<ApiKeyItem, 'PK' | 'SK' | 'kind' | 'hash'>, now = Date.now()): ApiKeyView {
  const expiresAt = item.expiresAt ?? null;
  const revokedAt = item.revokedAt ?? null;
  return {
    id: item.keyId,
    name: item.name,
    prefix: item.prefix,
    last4: item.last4,
    scopes: item.scopes,
    createdAt: item.createdAt,
    expiresAt,
    lastUsedAt: item.lastUsedAt ?? null,
    revokedAt,
    status: revokedAt ? 'revoked' : expiresAt && Date.parse(expiresAt) <= now ? 'expired' : 'active',
  };
}

export interface CreatedKey {
  key: ApiKeyView;
  secret: string;
}

/**
 * Creates a key for the caller's account. Without `scopes` the key gets every scope the caller
 * holds; asking for a scope the caller lacks is refused, so a key never grants more than its creator.
 */
export async function createApiKey(
  principal: Pick<Principal, 'accountId' | 'email' | 'scopes'>,
  input: z.infer<typeof CreateApiKey>,
  secret?: string,
): Promise<CreatedKey> {
  const scopes = input.scopes ? [...new Set(input.scopes)] : [...principal.scopes];
  const missing = scopes.filter((s) => !principal.scopes.has(s));
  if (missing.length) {
    throw new ApiError('forbidden', `A key cannot hold scopes its creator lacks: ${missing.join(', ')}`, { missingScopes: missing });
  }
  const token = secret ?? generateApiKey(getConfig().apiKeyPrefix);
  const keyId = newId();
  const now = new Date();
  const record = {
    keyId,
    accountId: principal.accountId,
    name: input.name,
    prefix: displayPrefix(token),
    last4: lastFour(token),
    scopes,
    createdAt: now.toISOString(),
    expiresAt: input.expiresInDays ? new Date(now.getTime() + input.expiresInDays * DAY_MS).toISOString() : undefined,
  };
  const hash = hashApiKey(token);
  await transact([
    {
      name: 'key',
      Put: {
        Item: { ...keys.apiKey(principal.accountId, keyId), kind: 'api-key', ...record, hash },
        ConditionExpression: 'attribute_not_exists(PK)',
      },
    },
    {
      name: 'hash',
      Put: {
        // The lookup item carries what authentication needs, so a request costs one read.
        Item: {
          ...keys.apiKeyHash(hash),
          kind: 'api-key-hash',
          keyId,
          accountId: principal.accountId,
          email: principal.email,
          scopes,
          expiresAt: record.expiresAt,
        },
        ConditionExpression: 'attribute_not_exists(PK)',
      },
    },
  ]);
  return { key: toView(record), secret: token };
}

export async function listApiKeys(accountId: string, page: PageRequest): Promise<Page<ApiKeyView>> {
  const result = await accessPatterns.apiKeysOfAccount(accountId, page);
  return { data: result.data.map((item) => toView(item)), nextCursor: result.nextCursor };
}

/** Revokes a key; revoking an already revoked key returns the same result. Another account's key is 404. */
export async function revokeApiKey(accountId: string, keyId: string): Promise<{ id: string; revoked: true; revokedAt: string }> {
  const item = await accessPatterns.apiKeyById(accountId, keyId);
  if (!item) throw notFound('API key');
  if (item.revokedAt) return { id: keyId, revoked: true, revokedAt: item.revokedAt };
  const revokedAt = new Date().toISOString();
  await transact([
    {
      name: 'key',
      Update: {
        Key: keys.apiKey(accountId, keyId),
        UpdateExpression: 'SET revokedAt = :at',
        ExpressionAttributeValues: { ':at': revokedAt },
      },
    },
    {
      name: 'hash',
      Update: {
        Key: keys.apiKeyHash(item.hash),
        UpdateExpression: 'SET revokedAt = :at',
        ExpressionAttributeValues: { ':at': revokedAt },
      },
    },
  ]);
  return { id: keyId, revoked: true, revokedAt };
}

/**
 * Records use at most every LAST_USED_INTERVAL_MS: the lookup item first, under a condition that
 * keeps concurrent requests from writing twice, then the listed key item. Two plain writes (2 WRU),
 * not a transaction (4 WRU): a listing that shows the previous hour for a moment is harmless.
 */
export async function touchLastUsed(hashItem: ApiKeyHashItem, now = new Date()): Promise<void> {
  const last = hashItem.lastUsedAt ? Date.parse(hashItem.lastUsedAt) : 0;
  if (now.getTime() - last < LAST_USED_INTERVAL_MS) return;
  const at = now.toISOString();
  const threshold = new Date(now.getTime() - LAST_USED_INTERVAL_MS).toISOString();
  try {
    await writeItem({
      Update: {
        Key: { PK: hashItem.PK, SK: hashItem.SK },
        UpdateExpression: 'SET lastUsedAt = :at',
        ConditionExpression: 'attribute_not_exists(lastUsedAt) OR lastUsedAt < :threshold',
        ExpressionAttributeValues: { ':at': at, ':threshold': threshold },
      },
    });
  } catch (err) {
    // Another request of the same key recorded the use first: nothing to do.
    if (isConditionFailed(err)) return;
    throw err;
  }
  await writeItem({
    Update: {
      Key: keys.apiKey(hashItem.accountId, hashItem.keyId),
      UpdateExpression: 'SET lastUsedAt = :at',
      ConditionExpression: 'attribute_exists(PK)',
      ExpressionAttributeValues: { ':at': at },
    },
  }).catch((err: unknown) => {
    // The key item is gone (the key was deleted meanwhile): nothing to record.
    if (!isConditionFailed(err)) throw err;
  });
}
