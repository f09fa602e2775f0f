import type { SettingsValue } from '../api/schemas.ts';

/**
 * The one place prices are computed. Per-resource prices are in millicents (1/1000 cent) per
 * hour: RAM and disk per GiB (1024 MB), CPU per core (cpuPercent 100). A server's hourly price is
 * the sum, rounded UP to whole cents, and at least 1 cent. Integer arithmetic only:
 *
 *   price = ceil( (ramMb·ram·100 + cpuPercent·cpu·1024 + diskMb·disk·100) / (1024·100·1000) )
 *
 * Worked example with the default prices (ram 400, cpu 300, disk 10):
 *   4096 MB RAM, 200 % CPU, 20480 MB disk
 *   = 4096·400·100 + 200·300·1024 + 20480·10·100 = 163,840,000 + 61,440,000 + 20,480,000
 *   = 245,760,000 / 102,400,000 = 2.4 → 3 cents an hour.
 */
export interface Resources {
  ramMb: number;
  cpuPercent: number;
  diskMb: number;
}

const DENOMINATOR = 1024 * 100 * 1000;

export function hourlyPriceCents(resources: Resources, prices: SettingsValue['prices']): number {
  const numerator =
    resources.ramMb * prices.ramMillicentsPerGbHour * 100 +
    resources.cpuPercent * prices.cpuMillicentsPerCoreHour * 1024 +
    resources.diskMb * prices.diskMillicentsPerGbHour * 100;
  if (!Number.isSafeInteger(numerator) || numerator < 0) throw new Error('Price out of range');
  return Math.max(1, Math.ceil(numerator / DENOMINATOR));
}

/** Deploys and upsizes need this much credit: 24 hours of every active server's price. */
export const RUNWAY_HOURS = 24;
