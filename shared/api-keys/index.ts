import type { z } from 'zod';
import { isConditionFailed, type NamedWrite, transact, writeItem } from '../db/write.ts';
import { apiKeyLimitOf, profileOf } from '../settings/limits.ts';
import { keys } from '../db/keys.ts';
import * as accessPatterns from '../db/access-patterns.ts';
import type { Page, PageRequest } from '../db/access-patterns.ts';
import { getConfig } from '../config/env.ts';
import { ApiError, notFound } from '../errors.ts';
import type { ApiKey, CreateApiKey } from '../api/schemas.ts';
import type { Principal } from '../auth/principal.ts';
import { displayPrefix, generateApiKey, hashApiKey, lastFour } from '../auth/api-key-format.ts';
import type { ApiKeyItem } from '../db/items.ts';
import { newId } from '../ids.ts';
import { eventWrite } from '../webhooks/events.ts';

export type ApiKeyView = z.infer<typeof ApiKey>;

const DAY_MS = 86_400_000;

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
    labels: item.labels ?? {},
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
    labels: input.labels ?? {},
  };
  const hash = hashApiKey(token);
  const items: NamedWrite[] = [
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
    // A security notice with the key (never its secret): the owner is told by mail (docs/mail.md).
    eventWrite(principal.accountId, 'api_key.created', toView(record, now.getTime()), now),
  ];
  await withKeySlot(principal.accountId, principal.scopes.has('admin'), items);
  return { key: toView(record), secret: token };
}

/**
 * Writes a new key's items together with a move of the profile's key count, under a condition
 * that it is below the account's limit: keys created at once cannot pass it (each key brings its
 * own request rate, so unlimited keys would multiply it). An account from before the count was
 * kept has it set from its keys first; a concurrent create that set it meanwhile makes this one
 * read again.
 */
async function withKeySlot(accountId: string, admin: boolean, items: NamedWrite[]): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    const profile = await profileOf(accountId);
    const counted = profile.apiKeyCount;
    const held = counted ?? (await countUnrevokedKeys(accountId));
    const limit = await apiKeyLimitOf(profile, admin);
    if (held >= limit) throw keyLimitExceeded(limit);
    const slot: NamedWrite =
      counted === undefined
        ? {
            name: 'profile',
            Update: {
              Key: keys.account(accountId),
              UpdateExpression: 'SET apiKeyCount = :next',
              ConditionExpression: 'attribute_exists(PK) AND attribute_not_exists(apiKeyCount)',
              ExpressionAttributeValues: { ':next': held + 1 },
            },
          }
        : {
            name: 'profile',
            Update: {
              Key: keys.account(accountId),
              UpdateExpression: 'SET apiKeyCount = apiKeyCount + :one',
              ConditionExpression: 'apiKeyCount < :max',
              ExpressionAttributeValues: { ':one': 1, ':max': limit },
            },
          };
    try {
      await transact([...items, slot]);
      return;
    } catch (err) {
      if (!isConditionFailed(err, 'profile')) throw err;
      if (counted === undefined && attempt === 0) continue;
      throw keyLimitExceeded(limit);
    }
  }
}

const keyLimitExceeded = (limit: number) =>
  new ApiError('limit_exceeded', `An account can have at most ${limit} API keys; revoke one to make room`, { limit });

async function countUnrevokedKeys(accountId: string): Promise<number> {
  let count = 0;
  let cursor: string | undefined;
  do {
    const page = await accessPatterns.apiKeysOfAccount(accountId, { limit: 100, cursor, boundTo: `key-count:${accountId}` });
    count += page.data.filter((k) => !k.revokedAt).length;
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  return count;
}

export async function listApiKeys(accountId: string, page: PageRequest): Promise<Page<ApiKeyView>> {
  const result = await accessPatterns.apiKeysOfAccount(accountId, page);
  return { data: result.data.map((item) => toView(item)), nextCursor: result.nextCursor };
}

/** Replaces a key's labels (one conditional write; a revoked key keeps its listing, so its labels may change too). Another account's key is 404. */
export async function updateApiKeyLabels(accountId: string, keyId: string, labels: Record<string, string>): Promise<ApiKeyView> {
  try {
    await writeItem({
      Update: {
        Key: keys.apiKey(accountId, keyId),
        UpdateExpression: 'SET labels = :labels',
        ConditionExpression: 'attribute_exists(PK)',
        ExpressionAttributeValues: { ':labels': labels },
      },
    });
  } catch (err) {
    if (isConditionFailed(err)) throw notFound('API key');
    throw err;
  }
  const item = await accessPatterns.apiKeyById(accountId, keyId);
  if (!item) throw notFound('API key');
  return toView(item);
}

/** Revokes a key; revoking an already revoked key returns the same result. Another account's key is 404. */
export async function revokeApiKey(accountId: string, keyId: string): Promise<{ id: string; revoked: true; revokedAt: string }> {
  const item = await accessPatterns.apiKeyById(accountId, keyId);
  if (!item) throw notFound('API key');
  if (item.revokedAt) return { id: keyId, revoked: true, revokedAt: item.revokedAt };
  const revokedAt = new Date().toISOString();
  const profile = await accessPatterns.accountById(accountId);
  // Revoking frees a slot under the key limit; the condition on the key keeps two revocations at
  // once from freeing two.
  const slot: NamedWrite[] =
    profile?.apiKeyCount === undefined
      ? []
      : [
          {
            name: 'profile',
            Update: {
              Key: keys.account(accountId),
              UpdateExpression: 'SET apiKeyCount = apiKeyCount - :one',
              ConditionExpression: 'apiKeyCount > :zero',
              ExpressionAttributeValues: { ':one': 1, ':zero': 0 },
            },
          },
        ];
  try {
    await revokeItems(accountId, keyId, item.hash, revokedAt, slot).catch((err: unknown) => {
      // A count already at 0 (it was set from the keys while this one was being revoked): revoke anyway.
      if (isConditionFailed(err, 'profile') && !isConditionFailed(err, 'key'))
        return revokeItems(accountId, keyId, item.hash, revokedAt, []);
      throw err;
    });
  } catch (err) {
    if (!isConditionFailed(err, 'key')) throw err;
    const now = await accessPatterns.apiKeyById(accountId, keyId);
    if (now?.revokedAt) return { id: keyId, revoked: true, revokedAt: now.revokedAt };
    throw err;
  }
  return { id: keyId, revoked: true, revokedAt };
}

async function revokeItems(accountId: string, keyId: string, hash: string, revokedAt: string, slot: NamedWrite[]): Promise<void> {
  await transact([
    {
      name: 'key',
      Update: {
        Key: keys.apiKey(accountId, keyId),
        UpdateExpression: 'SET revokedAt = :at',
        ConditionExpression: 'attribute_exists(PK) AND attribute_not_exists(revokedAt)',
        ExpressionAttributeValues: { ':at': revokedAt },
      },
    },
    {
      name: 'hash',
      Update: {
        Key: keys.apiKeyHash(hash),
        UpdateExpression: 'SET revokedAt = :at',
        ExpressionAttributeValues: { ':at': revokedAt },
      },
    },
    ...slot,
  ]);
}
