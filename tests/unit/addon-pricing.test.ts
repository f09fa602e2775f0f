import { describe, expect, it } from 'vitest';
import { addonsMillicents, featureLimitsOf, hourlyPriceMillicents, NO_ADDONS, serverPriceMillicents } from '../../shared/pricing/index.ts';
import { DEFAULT_SETTINGS } from '../../shared/settings/index.ts';

/** A server's price with add-ons (shared/pricing): resources and extras in one numerator, rounded down once. */
describe('add-on pricing', () => {
  const small = { ramMb: 1024, cpuPercent: 100, diskMb: 2048 }; // 720 millicents
  const odd = { ramMb: 1000, cpuPercent: 33, diskMb: 999 }; // 390.625 + 97.0… → rounded down once

  it('adds each extra at its hourly price in whole millicents', () => {
    expect(addonsMillicents({ backups: 2, databases: 1, ports: 3 }, DEFAULT_SETTINGS.addons)).toBe(2 * 70 + 140 + 3 * 70);
    expect(serverPriceMillicents(small, { backups: 2, databases: 1, ports: 3 }, DEFAULT_SETTINGS)).toBe(720 + 490);
    expect(serverPriceMillicents(small, undefined, DEFAULT_SETTINGS)).toBe(720);
  });

  it('rounds once: the price of resources with a fraction plus add-ons is the floor of the whole, never more', () => {
    const resources = hourlyPriceMillicents(odd, DEFAULT_SETTINGS.prices);
    const exactNumerator = odd.ramMb * 400 * 100 + odd.cpuPercent * 300 * 1024 + odd.diskMb * 10 * 100;
    expect(resources).toBe(Math.floor(exactNumerator / 102_400));
    const withAddons = serverPriceMillicents(odd, { backups: 1, databases: 1, ports: 1 }, DEFAULT_SETTINGS);
    expect(withAddons).toBe(Math.floor((exactNumerator + 280 * 102_400) / 102_400));
    expect(withAddons).toBe(resources + 280);
  });

  it('free resources with a paid add-on cost the add-on alone (the minimum of 1 applies to the whole)', () => {
    const free = { ...DEFAULT_SETTINGS, prices: { ramMillicentsPerGbHour: 0, cpuMillicentsPerCoreHour: 0, diskMillicentsPerGbHour: 0 } };
    expect(serverPriceMillicents(small, { ...NO_ADDONS, ports: 1 }, free)).toBe(70);
    expect(serverPriceMillicents(small, NO_ADDONS, free)).toBe(1);
  });

  it('feature limits are what the settings include plus the extras', () => {
    expect(featureLimitsOf(undefined, DEFAULT_SETTINGS)).toEqual({ databases: 0, allocations: 1, backups: 3 });
    expect(featureLimitsOf({ backups: 2, databases: 4, ports: 1 }, DEFAULT_SETTINGS)).toEqual({ databases: 4, allocations: 2, backups: 5 });
  });
});
