import * as accessPatterns from '../db/access-patterns.ts';
import type { AccountItem } from '../db/items.ts';
import { keys } from '../db/keys.ts';
import { isConditionFailed, writeItem } from '../db/write.ts';
import { getConfig } from '../config/env.ts';
import { notFound } from '../errors.ts';
import { getSettings } from './index.ts';

/**
 * Per-account limits that stop one tenant from multiplying its share (docs/api.md "Platform settings"):
 * how many API keys it holds, how many requests all its credentials make together, and the tighter
 * key and webhook-endpoint limits of a trial account. Each comes from the platform settings unless
 * an admin set an override on the account (`limits` on the profile).
 */
export type LimitOverrides = NonNullable<AccountItem['limits']>;

/** The account's profile, or 404. */
export async function profileOf(accountId: string): Promise<AccountItem> {
  const profile = await accessPatterns.accountById(accountId);
  if (!profile) throw notFound('Account');
  return profile;
}

/** Ledger entry types that end the trial: money paid in, or credit an admin chose to give. */
const PAID_TYPES: ReadonlySet<string> = new Set(['topup', 'grant']);

/**
 * A trial account has never had a top-up nor an admin grant (its only credit is the trial's and
 * the bonuses). The profile remembers the first such entry found (`paidAt`); until then the ledger
 * is read, only where a trial limit applies (creating a key or a webhook endpoint): a trial
 * account's ledger is short (its credit is the trial's), and a paying one is read once, then remembered.
 */
export async function isTrialAccount(profile: AccountItem): Promise<boolean> {
  if (profile.paidAt) return false;
  let cursor: string | undefined;
  do {
    const page = await accessPatterns.ledgerOfAccount(profile.accountId, { limit: 100, cursor, boundTo: `trial:${profile.accountId}` });
    const paid = page.data.find((entry) => PAID_TYPES.has(entry.type) && entry.amountCents > 0);
    if (paid) {
      await writeItem({
        Update: {
          Key: keys.account(profile.accountId),
          UpdateExpression: 'SET paidAt = if_not_exists(paidAt, :at)',
          ConditionExpression: 'attribute_exists(PK)',
          ExpressionAttributeValues: { ':at': paid.at },
        },
      }).catch((err: unknown) => {
        if (!isConditionFailed(err)) throw err;
      });
      return false;
    }
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  return true;
}

/**
 * The most API keys the account may hold: its override, else the platform's, else the trial's
 * below it. An admin account is never held to the trial's: it is the platform's own.
 */
export async function apiKeyLimitOf(profile: AccountItem, admin: boolean): Promise<number> {
  const override = profile.limits?.maxApiKeys;
  if (override !== undefined) return override;
  const settings = await getSettings();
  const trialLimit = settings.trialMaxApiKeys;
  if (!admin && trialLimit !== null && trialLimit < settings.maxApiKeysPerAccount && (await isTrialAccount(profile))) return trialLimit;
  return settings.maxApiKeysPerAccount;
}

/** The most webhook endpoints the account may hold: `paidLimit` (the fan-out bound), or the trial setting below it. */
export async function endpointLimitOf(accountId: string, paidLimit: number): Promise<number> {
  const trialLimit = (await getSettings()).trialMaxWebhookEndpoints;
  if (trialLimit === null || trialLimit >= paidLimit) return paidLimit;
  return (await isTrialAccount(await profileOf(accountId))) ? trialLimit : paidLimit;
}

/**
 * Requests a minute of all the account's credentials together. The platform setting never goes
 * below one credential's limit (that would make the per-credential limit meaningless, and a stack
 * that raises RATE_LIMIT_PER_MINUTE raises both); an admin's override may, to slow one account down.
 */
export function requestCeiling(settingsCeiling: number, override: number | undefined): number {
  return override ?? Math.max(settingsCeiling, getConfig().rateLimitPerMinute);
}

/**
 * The ceiling is needed on every request that claims rate-limit units, so a process keeps each
 * account's for a minute: an override or a settings change takes effect within a minute, and a
 * busy account costs one profile read a minute per process, not one per claim.
 */
const CEILING_CACHE_MS = 60_000;
/** Concurrent first requests of an account share one lookup (the promise is what is kept). */
const ceilings = new Map<string, { value: Promise<number>; at: number }>();

export function requestCeilingOf(accountId: string, now = Date.now()): Promise<number> {
  const cached = ceilings.get(accountId);
  if (cached && now - cached.at < CEILING_CACHE_MS) return cached.value;
  const value = Promise.all([getSettings(), accessPatterns.accountById(accountId)]).then(([settings, profile]) =>
    requestCeiling(settings.accountRequestsPerMinute, profile?.limits?.requestsPerMinute),
  );
  // A failed read is not kept: the next request tries again.
  value.catch(() => {
    if (ceilings.get(accountId)?.value === value) ceilings.delete(accountId);
  });
  // A spray of accounts must not grow the map without bound: drop it whole now and then (a re-read each).
  if (ceilings.size > 10_000) ceilings.clear();
  ceilings.set(accountId, { value, at: now });
  return value;
}

export function clearCeilingCache(): void {
  ceilings.clear();
}

export interface AccountLimitsView {
  accountId: string;
  overrides: { maxApiKeys: number | null; requestsPerMinute: number | null; maxServers: number | null };
  effective: { maxApiKeys: number; requestsPerMinute: number; maxServers: number; trial: boolean };
  apiKeyCount: number;
}

async function viewOf(profile: AccountItem): Promise<AccountLimitsView> {
  const settings = await getSettings();
  const trial = await isTrialAccount(profile);
  const overrides = profile.limits ?? {};
  // ADMIN_EMAILS against the recorded e-mail, as the credential check decides admin (shared/accounts
  // imports this folder, so its helper cannot be imported here).
  const keyLimit = await apiKeyLimitOf(profile, getConfig().adminEmails.has(profile.email.toLowerCase()));
  return {
    accountId: profile.accountId,
    overrides: {
      maxApiKeys: overrides.maxApiKeys ?? null,
      requestsPerMinute: overrides.requestsPerMinute ?? null,
      maxServers: overrides.maxServers ?? null,
    },
    effective: {
      maxApiKeys: keyLimit,
      requestsPerMinute: requestCeiling(settings.accountRequestsPerMinute, overrides.requestsPerMinute),
      maxServers: overrides.maxServers ?? settings.maxServersPerAccount,
      trial,
    },
    apiKeyCount: profile.apiKeyCount ?? 0,
  };
}

export async function getAccountLimits(accountId: string): Promise<AccountLimitsView> {
  return viewOf(await profileOf(accountId));
}

/**
 * Sets or clears (null) an account's overrides; omitted ones keep their value. Lowering the key
 * limit below what the account holds revokes nothing: it only refuses new keys until revocations
 * bring the count under it.
 */
export async function setAccountLimits(
  accountId: string,
  update: { maxApiKeys?: number | null; requestsPerMinute?: number | null; maxServers?: number | null },
): Promise<{ before: AccountLimitsView['overrides']; view: AccountLimitsView }> {
  const profile = await profileOf(accountId);
  const before = profile.limits ?? {};
  const after: LimitOverrides = { ...before };
  for (const field of ['maxApiKeys', 'requestsPerMinute', 'maxServers'] as const) {
    const value = update[field];
    if (value === null) delete after[field];
    else if (value !== undefined) after[field] = value;
  }
  await writeItem({
    Update: {
      Key: keys.account(accountId),
      UpdateExpression: 'SET limits = :limits',
      ConditionExpression: 'attribute_exists(PK)',
      ExpressionAttributeValues: { ':limits': after },
    },
  });
  ceilings.delete(accountId);
  return {
    before: {
      maxApiKeys: before.maxApiKeys ?? null,
      requestsPerMinute: before.requestsPerMinute ?? null,
      maxServers: before.maxServers ?? null,
    },
    view: await viewOf({ ...profile, limits: after }),
  };
}
