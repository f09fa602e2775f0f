import { isConditionFailed, writeItem } from '../db/write.ts';
import { keys } from '../db/keys.ts';
import { accessPatterns } from '../db/access-patterns.ts';
import { Settings, type SettingsValue } from '../api/schemas/settings.ts';
import type { z } from 'zod';
import type { SettingsUpdate } from '../api/schemas/settings.ts';
import { ApiError } from '../errors.ts';
import { EMPTY_ADDRESS } from '../api/schemas/billing-profile.ts';

/**
 * Platform settings with their defaults. The defaults are priced like a budget game host so a
 * fresh stack bills real amounts; docs/api.md "Platform settings" documents each one.
 * A 4 GiB / 200 % CPU / 20 GiB server costs 4×400 + 2×300 + 20×10 = 2,400 millicents = 3 cents an hour
 * (rounded up), about $21.90 for a 730-hour month.
 */
export const DEFAULT_SETTINGS: SettingsValue = {
  currency: 'usd',
  prices: { ramMillicentsPerGbHour: 400, cpuMillicentsPerCoreHour: 300, diskMillicentsPerGbHour: 10 },
  trialCreditCents: 500,
  minimumBalanceCents: 100,
  // Below any trial credit worth having, so a trial account spending down is warned before 0.
  lowBalanceThresholdCents: 100,
  serverCaps: { maxRamMb: 16_384, maxCpuPercent: 400, maxDiskMb: 102_400 },
  maxServersPerAccount: 10,
  maxApiKeysPerAccount: 25,
  accountRequestsPerMinute: 600,
  trialMaxApiKeys: 5,
  trialMaxWebhookEndpoints: null,
  topUpBonusPercent: 5,
  minimumTopUpCents: 500,
  maximumTopUpCents: 100_000,
  suspendedRetentionDays: null,
  monthlyCapHours: null,
  // No seller details until an admin sets them: the invoice PDF prints what is set.
  invoiceIssuer: { legalName: null, address: EMPTY_ADDRESS, taxId: null, email: null, footer: null },
  autoTopUpMaxFailures: 3,
  // Backups take node disk outside the server's own disk limit (Wings' local adapter): a few per server.
  backupsPerServer: 3,
};

/** Settings change rarely: a process keeps them for a few seconds to spare a read per request. */
const CACHE_MS = 5_000;
let cache: { value: SettingsValue; at: number } | undefined;

export async function getSettings(fresh = false): Promise<SettingsValue> {
  if (!fresh && cache && Date.now() - cache.at < CACHE_MS) return cache.value;
  const item = await accessPatterns.settings();
  const stored = item?.value as Partial<SettingsValue> | undefined;
  const value = Settings.parse({
    ...DEFAULT_SETTINGS,
    ...stored,
    prices: { ...DEFAULT_SETTINGS.prices, ...stored?.prices },
    serverCaps: { ...DEFAULT_SETTINGS.serverCaps, ...stored?.serverCaps },
    invoiceIssuer: mergeIssuer(DEFAULT_SETTINGS.invoiceIssuer, stored?.invoiceIssuer),
  });
  cache = { value, at: Date.now() };
  return value;
}

export function clearSettingsCache(): void {
  cache = undefined;
}

export interface SettingsChange {
  before: SettingsValue;
  after: SettingsValue;
  changed: string[];
}

/** Applies a partial (or whole) update under the version read; an update that changes nothing is not written. */
export async function updateSettings(update: z.infer<typeof SettingsUpdate>, actorId: string): Promise<SettingsChange> {
  const item = await accessPatterns.settings();
  const before = await getSettings(true);
  const after = Settings.parse({
    ...before,
    ...update,
    prices: { ...before.prices, ...update.prices },
    serverCaps: { ...before.serverCaps, ...update.serverCaps },
    invoiceIssuer: mergeIssuer(before.invoiceIssuer, update.invoiceIssuer),
  });
  if (after.minimumTopUpCents > after.maximumTopUpCents) {
    throw new ApiError('validation_failed', 'minimumTopUpCents must not exceed maximumTopUpCents', {
      issues: [{ field: 'body.minimumTopUpCents', message: 'must not exceed maximumTopUpCents' }],
    });
  }
  const changed = diffPaths(before, after);
  // Sending back what GET returned changes nothing, so nothing is written: the version stays and
  // an admin saving a real change at the same moment does not get a conflict for it.
  if (changed.length === 0) return { before, after: before, changed };
  const version = Number(item?.version ?? 0);
  try {
    await writeItem({
      Put: {
        Item: {
          ...keys.settings(),
          kind: 'settings',
          value: after,
          version: version + 1,
          updatedAt: new Date().toISOString(),
          updatedBy: actorId,
        },
        // Two admins saving at once: the second gets a conflict instead of silently undoing the first.
        ConditionExpression: item ? 'version = :v' : 'attribute_not_exists(PK)',
        ExpressionAttributeValues: item ? { ':v': version } : undefined,
      },
    });
  } catch (err) {
    if (isConditionFailed(err)) {
      throw new ApiError('conflict', 'The settings changed while saving; read them again and retry');
    }
    throw err;
  }
  cache = { value: after, at: Date.now() };
  return { before, after, changed };
}

function diffPaths(a: Record<string, unknown>, b: Record<string, unknown>, prefix = ''): string[] {
  const out: string[] = [];
  for (const key of Object.keys(b)) {
    const x = a[key];
    const y = b[key];
    if (x && y && typeof x === 'object' && typeof y === 'object')
      out.push(...diffPaths(x as Record<string, unknown>, y as Record<string, unknown>, `${prefix}${key}.`));
    else if (x !== y) out.push(`${prefix}${key}`);
  }
  return out;
}

/** The seller details are merged field by field like prices, their address too (a partial update keeps the rest). */
function mergeIssuer(
  base: SettingsValue['invoiceIssuer'],
  update:
    | Partial<Omit<SettingsValue['invoiceIssuer'], 'address'> & { address: Partial<SettingsValue['invoiceIssuer']['address']> }>
    | undefined,
): SettingsValue['invoiceIssuer'] {
  return { ...base, ...update, address: { ...base.address, ...update?.address } };
}
