import * as z from 'zod';
import { SCOPES } from '../scopes.ts';
import { Uuid, text, int32, Timestamp, SafeText, listOf, Labels } from './common.ts';

/** API keys (account group). */

export const ScopeSchema = z.enum(SCOPES).meta({ id: 'Scope' });

export const ApiKey = z
  .object({
    id: Uuid,
    name: text(100),
    prefix: text(16).meta({ description: 'The first characters of the secret, to recognise the key.', example: 'cp_live_4Fz' }),
    last4: text(4),
    scopes: z.array(ScopeSchema).max(SCOPES.length),
    createdAt: Timestamp,
    expiresAt: Timestamp.nullable(),
    lastUsedAt: Timestamp.nullable().meta({ description: 'Updated at most every 5 minutes.' }),
    revokedAt: Timestamp.nullable(),
    status: z.enum(['active', 'expired', 'revoked']),
    labels: Labels,
  })
  .meta({ id: 'ApiKey' });

export const ApiKeyWithSecret = ApiKey.extend({
  secret: text(64).optional().meta({
    description: 'The key itself. Returned only by the creating call: it is stored as a SHA-256 hash. An idempotent replay omits it.',
  }),
}).meta({ id: 'ApiKeyWithSecret' });

export const ApiKeyList = listOf(ApiKey, 'ApiKeyList');

export const CreateApiKey = z
  .object({
    name: SafeText.trim().min(1).max(100),
    expiresInDays: int32(1, 3650).optional().meta({ description: 'Omit for a key that does not expire.' }),
    scopes: z
      .array(ScopeSchema)
      .min(1)
      .max(SCOPES.length)
      .optional()
      .meta({ description: 'Omit for every scope the caller holds. A key can never hold a scope its creator lacks.' }),
    labels: Labels.optional().meta({ description: 'Your labels on the key (PATCH /v1/keys/:id replaces them); none when omitted.' }),
  })
  .strict()
  .meta({ id: 'CreateApiKey' });

/** Only the labels of a key change after its creation: its name, scopes and expiry are what it was issued with. */
export const UpdateApiKey = z.object({ labels: Labels }).strict().meta({ id: 'UpdateApiKey' });

export const RevokedKey = z.object({ id: Uuid, revoked: z.literal(true), revokedAt: Timestamp }).meta({ id: 'RevokedKey' });
