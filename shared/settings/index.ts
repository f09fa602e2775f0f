import * as accessPatterns from '../db/access-patterns.ts';
import type { SettingsValue } from '../api/schemas/settings.ts';
import { EMPTY_ADDRESS } from '../api/empty-address.ts';
import { setUpCurrency } from '../config/env.ts';
import { DEFAULT_CURRENCY } from '../currency.ts';
import type { BrandValue } from '../api/schemas/brand.ts';

/**
 * Platform settings with their defaults. The defaults are priced like a budget game host so a
 * fresh stack bills real amounts; docs/api.md "Platform settings" documents each one.
 * A 4 GiB / 200 % CPU / 20 GiB server costs 4×400 + 2×300 + 20×10 = 2,400 millicents = 3 cents an hour
 * (rounded up), about $21.90 for a 730-hour month.
 */
/** The brand before the operator sets one: the name the dashboard always showed and its accent colour. */
export const DEFAULT_BRAND: BrandValue = {
  name: 'Control panel',
  primaryColor: '#2f5fd0',
  supportEmail: null,
  supportUrl: null,
  termsUrl: null,
  privacyUrl: null,
  legalFooter: null,
  logo: null,
};

export const DEFAULT_SETTINGS: SettingsValue = {
  // The set-up's choice (CURRENCY) takes its place until an admin saves the settings (withDefaults).
  currency: DEFAULT_CURRENCY,
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
  // Today's rule unless the operator chooses a grace: suspended as soon as the balance is at or below zero.
  suspensionGraceMinutes: 0,
  runwayWarningHours: [24, 2],
  // No seller details until an admin sets them: the invoice PDF prints what is set.
  invoiceIssuer: { legalName: null, address: EMPTY_ADDRESS, taxId: null, email: null, footer: null },
  // No tax and no reason until the operator chooses (docs/operations.md "Tax").
  tax: { treatment: 'none', reason: null },
  autoTopUpMaxFailures: 3,
  // Backups take node disk outside the server's own disk limit (Wings' local adapter): a few per server.
  backupsPerServer: 3,
  // The panel has no schedule limit of its own; ten covers a restart, a backup and a few announcements.
  schedulesPerServer: 10,
  // Databases and extra ports are add-ons; the primary port is included.
  databasesPerServer: 0,
  portsPerServer: 1,
  // Budget-host prices: a backup slot or a port about 51 ¢ for a 730-hour month, a database about $1.02.
  addons: {
    backupMillicentsPerHour: 70,
    databaseMillicentsPerHour: 140,
    portMillicentsPerHour: 70,
    maxBackups: 20,
    maxDatabases: 10,
    maxPorts: 10,
  },
  // A server the reconciler takes for an orphan is deleted only once an admin confirms it.
  holdOrphansForConfirmation: true,
  // Customers may deploy any size within the caps, not only the plans an admin defines (shared/plans).
  customSizesAllowed: true,
  // White text on the default colour: 5.72:1 (WCAG AA).
  brand: DEFAULT_BRAND,
};

/** Settings change rarely: a process keeps them for a few seconds to spare a read per request. */
const CACHE_MS = 5_000;
let cache: { value: SettingsValue; at: number } | undefined;

export async function getSettings(fresh = false): Promise<SettingsValue> {
  if (!fresh && cache && Date.now() - cache.at < CACHE_MS) return cache.value;
  const item = await accessPatterns.settings();
  const value = withDefaults(item?.value as Partial<SettingsValue> | undefined);
  cache = { value, at: Date.now() };
  return value;
}

/**
 * The stored settings over the defaults, keeping only the settings this code knows; a currency never
 * saved is the set-up's (CURRENCY), and saved settings keep theirs whatever the set-up says later. What is stored
 * was checked against the schema when it was saved (update.ts); reading does not load the schema,
 * so every function's cold start stays free of it (bench/README.md, bundle budget).
 */
export function withDefaults(stored: Partial<SettingsValue> | undefined): SettingsValue {
  const merged = {
    ...DEFAULT_SETTINGS,
    currency: setUpCurrency(),
    ...stored,
    prices: { ...DEFAULT_SETTINGS.prices, ...stored?.prices },
    serverCaps: { ...DEFAULT_SETTINGS.serverCaps, ...stored?.serverCaps },
    addons: { ...DEFAULT_SETTINGS.addons, ...stored?.addons },
    invoiceIssuer: mergeIssuer(DEFAULT_SETTINGS.invoiceIssuer, stored?.invoiceIssuer),
    brand: { ...DEFAULT_SETTINGS.brand, ...stored?.brand },
  };
  return Object.fromEntries(Object.keys(DEFAULT_SETTINGS).map((k) => [k, merged[k as keyof SettingsValue]])) as unknown as SettingsValue;
}

/** What this process keeps: a saved change is seen at once here, within CACHE_MS elsewhere. */
export function rememberSettings(value: SettingsValue): void {
  cache = { value, at: Date.now() };
}

export function clearSettingsCache(): void {
  cache = undefined;
}

/** The seller details are merged field by field like prices, their address too (a partial update keeps the rest). */
export function mergeIssuer(
  base: SettingsValue['invoiceIssuer'],
  update:
    | Partial<Omit<SettingsValue['invoiceIssuer'], 'address'> & { address: Partial<SettingsValue['invoiceIssuer']['address']> }>
    | undefined,
): SettingsValue['invoiceIssuer'] {
  return { ...base, ...update, address: { ...base.address, ...update?.address } };
}
