import type { SettingsValue } from '../api/schemas.ts';

/**
 * The one place prices are computed. Per-resource prices are in millicents (1/1000 cent) per
 * hour: RAM and disk per GiB (1024 MB), CPU per core (cpuPercent 100). A server's exact hourly
 * price is their sum in millicents, rounded DOWN once to a whole millicent (never against the
 * customer), and at least 1. Integer arithmetic only:
 *
 *   priceMillicents = floor( (ramMb·ram·100 + cpuPercent·cpu·1024 + diskMb·disk·100) / (1024·100) )
 *
 * Charges use the exact price (the billing pass carries what is below a cent to the next hour);
 * `priceCentsPerHour` is the exact price rounded UP to a whole cent, for display.
 *
 * Worked example with the default prices (ram 400, cpu 300, disk 10):
 *   4096 MB RAM, 200 % CPU, 20480 MB disk
 *   = 4096·400·100 + 200·300·1024 + 20480·10·100 = 163,840,000 + 61,440,000 + 20,480,000
 *   = 245,760,000 / 102,400 = 2,400 millicents an hour (2.4 ¢; shown as 3 cents).
 *   256 MB, 25 %, 512 MB = 10,240,000 + 7,680,000 + 512,000 = 18,432,000 / 102,400 = 180 millicents (0.18 ¢).
 */
export interface Resources {
  ramMb: number;
  cpuPercent: number;
  diskMb: number;
}

const DENOMINATOR = 1024 * 100;

/** Extra backup slots, databases and ports bought beyond what the settings include (ServerItem.addons). */
export interface Addons {
  backups: number;
  databases: number;
  ports: number;
}

export const NO_ADDONS: Addons = { backups: 0, databases: 0, ports: 0 };

/** What the add-ons cost an hour, in whole millicents (their prices are whole millicents: nothing to round). */
export function addonsMillicents(addons: Addons, prices: SettingsValue['addons']): number {
  return (
    addons.backups * prices.backupMillicentsPerHour +
    addons.databases * prices.databaseMillicentsPerHour +
    addons.ports * prices.portMillicentsPerHour
  );
}

/**
 * A server's exact hourly price: its resources and, when given, its add-ons, in one numerator
 * rounded down once (the add-ons are whole millicents, so the sum is the resources' price plus
 * theirs, exactly).
 */
export function hourlyPriceMillicents(
  resources: Resources,
  prices: SettingsValue['prices'],
  addons?: { bought: Addons; prices: SettingsValue['addons'] },
): number {
  const numerator =
    resources.ramMb * prices.ramMillicentsPerGbHour * 100 +
    resources.cpuPercent * prices.cpuMillicentsPerCoreHour * 1024 +
    resources.diskMb * prices.diskMillicentsPerGbHour * 100 +
    (addons ? addonsMillicents(addons.bought, addons.prices) * DENOMINATOR : 0);
  if (!Number.isSafeInteger(numerator) || numerator < 0) throw new Error('Price out of range');
  return Math.max(1, Math.floor(numerator / DENOMINATOR));
}

/** The hourly price of a server with its add-ons, at the settings' prices. */
export const serverPriceMillicents = (
  resources: Resources,
  addons: Addons | undefined,
  settings: Pick<SettingsValue, 'prices' | 'addons'>,
): number => hourlyPriceMillicents(resources, settings.prices, { bought: addons ?? NO_ADDONS, prices: settings.addons });

/** The add-ons bought beyond those a plan includes. */
export const extrasBeyond = (bought: Addons, included: Addons): Addons => ({
  backups: bought.backups - included.backups,
  databases: bought.databases - included.databases,
  ports: bought.ports - included.ports,
});

/**
 * A server's hourly price with these add-ons. On a plan with a set price (`planPrice`, kept on the
 * server from its deploy): that price, which covers the plan's own add-ons, plus the extras beyond
 * them at the settings' prices; whole millicents, nothing to round. Otherwise from its resources.
 */
export const priceWithAddons = (
  server: { resources: Resources; planPrice?: PlanPrice | undefined },
  addons: Addons,
  settings: Pick<SettingsValue, 'prices' | 'addons'>,
): number =>
  server.planPrice
    ? server.planPrice.setMillicentsPerHour + addonsMillicents(extrasBeyond(addons, server.planPrice.addons), settings.addons)
    : serverPriceMillicents(server.resources, addons, settings);

/** What a server deployed on a plan with a set hourly price keeps of it (ServerItem.planPrice). */
export interface PlanPrice {
  setMillicentsPerHour: number;
  /** The add-ons the set price covers. */
  addons: Addons;
}

/** The panel's feature limits of a server: what every server includes plus the add-ons bought. */
export const featureLimitsOf = (
  addons: Addons | undefined,
  settings: Pick<SettingsValue, 'backupsPerServer' | 'databasesPerServer' | 'portsPerServer'>,
): { databases: number; allocations: number; backups: number } => ({
  databases: settings.databasesPerServer + (addons?.databases ?? 0),
  allocations: settings.portsPerServer + (addons?.ports ?? 0),
  backups: settings.backupsPerServer + (addons?.backups ?? 0),
});

/** The exact hourly price of a server or history entry: those from before exact prices carry only whole cents. */
export const exactPriceOf = (priced: { priceCentsPerHour: number; priceMillicentsPerHour?: number | undefined }): number =>
  priced.priceMillicentsPerHour ?? priced.priceCentsPerHour * 1000;

/** Whole cents for display: up, so a shown price is never less than what an hour costs. */
export const centsUp = (millicents: number): number => Math.ceil(millicents / 1000);

export function hourlyPriceCents(resources: Resources, prices: SettingsValue['prices']): number {
  return Math.max(1, centsUp(hourlyPriceMillicents(resources, prices)));
}

/** Deploys and upsizes need this much credit: 24 hours of every active server's price. */
export const RUNWAY_HOURS = 24;
