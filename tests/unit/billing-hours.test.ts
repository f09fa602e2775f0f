import { describe, expect, it } from 'vitest';
import { chargeForHour, chargeableHours, HOUR_MS, type HistoryEvent } from '../../shared/pricing/hours.ts';
import { hourlyPriceCents, hourlyPriceMillicents } from '../../shared/pricing/index.ts';
import { DEFAULT_SETTINGS } from '../../shared/settings/index.ts';

const H = Date.UTC(2026, 10, 21, 10); // 10:00 UTC
const at = (hours: number, minutes = 0) => new Date(H + hours * HOUR_MS + minutes * 60_000).toISOString();
const active = (t: string, price: number): HistoryEvent => ({ at: t, status: 'active', priceCentsPerHour: price });
const suspended = (t: string): HistoryEvent => ({ at: t, status: 'suspended', priceCentsPerHour: 0 });
const deleted = (t: string): HistoryEvent => ({ at: t, status: 'deleted', priceCentsPerHour: 0 });

describe('what an hour costs', () => {
  const cases: { name: string; history: HistoryEvent[]; hour: number; cents: number }[] = [
    { name: 'created mid-hour: the whole hour', history: [active(at(0, 20), 3)], hour: 0, cents: 3 },
    {
      name: 'created in the last millisecond: the whole hour',
      history: [active(new Date(H + HOUR_MS - 1).toISOString(), 3)],
      hour: 0,
      cents: 3,
    },
    { name: 'not yet created: nothing', history: [active(at(1, 20), 3)], hour: 0, cents: 0 },
    { name: 'resized up mid-hour: the highest price', history: [active(at(0, 0), 1), active(at(0, 30), 5)], hour: 0, cents: 5 },
    { name: 'resized down mid-hour: still the highest price', history: [active(at(0, 0), 5), active(at(0, 30), 1)], hour: 0, cents: 5 },
    { name: 'the hour after a resize: the new price', history: [active(at(0, 0), 5), active(at(0, 30), 1)], hour: 1, cents: 1 },
    { name: 'deleted mid-hour: the whole hour', history: [active(at(0, 0), 3), deleted(at(1, 20))], hour: 1, cents: 3 },
    { name: 'deleted mid-hour: never the hour after', history: [active(at(0, 0), 3), deleted(at(1, 20))], hour: 2, cents: 0 },
    { name: 'deleted exactly on the hour: not that hour', history: [active(at(0, 0), 3), deleted(at(1, 0))], hour: 1, cents: 0 },
    { name: 'created and deleted in one hour: that hour', history: [active(at(0, 10), 3), deleted(at(0, 50))], hour: 0, cents: 3 },
    { name: 'suspended mid-hour: that hour', history: [active(at(0, 0), 3), suspended(at(1, 40))], hour: 1, cents: 3 },
    { name: 'suspended for the whole hour: nothing', history: [active(at(0, 0), 3), suspended(at(1, 40))], hour: 2, cents: 0 },
    {
      name: 'unsuspended mid-hour: that hour',
      history: [active(at(0, 0), 3), suspended(at(0, 40)), active(at(3, 59), 3)],
      hour: 3,
      cents: 3,
    },
  ];
  for (const c of cases) {
    it(c.name, () => expect(chargeForHour(c.history, H + c.hour * HOUR_MS)).toBe(c.cents * 1000));
  }

  it('lists exactly the chargeable hours of a range', () => {
    const history = [active(at(0, 20), 1), active(at(1, 30), 4), suspended(at(2, 10)), active(at(4, 5), 2), deleted(at(5, 1))];
    expect(chargeableHours(history, H, H + 10 * HOUR_MS).map((c) => [(c.hour - H) / HOUR_MS, c.millicents / 1000])).toEqual([
      [0, 1],
      [1, 4],
      [2, 4],
      [4, 2],
      [5, 2],
    ]);
    // Down within an hour: that hour still pays the higher price, whatever the order of events.
    expect(chargeableHours([active(at(0, 0), 5), active(at(0, 30), 1)], H, H + HOUR_MS).map((c) => c.millicents / 1000)).toEqual([5, 1]);
    // A range that starts later or ends earlier.
    expect(chargeableHours(history, H + 2 * HOUR_MS, H + 4 * HOUR_MS).map((c) => (c.hour - H) / HOUR_MS)).toEqual([2, 4]);
    expect(chargeableHours([active(at(0, 0), 1)], H, H - HOUR_MS)).toEqual([]);
  });
});

describe('pricing', () => {
  it('is the worked example of docs/api.md: 4 GiB, 200 %, 20 GiB = 3 cents an hour', () => {
    expect(hourlyPriceCents({ ramMb: 4096, cpuPercent: 200, diskMb: 20480 }, DEFAULT_SETTINGS.prices)).toBe(3);
  });

  it('the exact price is in millicents, rounded down once, never below one', () => {
    // 256 MB, 25 %, 512 MB: 10,240,000 + 7,680,000 + 512,000 = 18,432,000 / 102,400 = 180 millicents.
    expect(hourlyPriceMillicents({ ramMb: 256, cpuPercent: 25, diskMb: 512 }, DEFAULT_SETTINGS.prices)).toBe(180);
    expect(hourlyPriceMillicents({ ramMb: 512, cpuPercent: 50, diskMb: 1024 }, DEFAULT_SETTINGS.prices)).toBe(360);
    expect(hourlyPriceMillicents({ ramMb: 4096, cpuPercent: 200, diskMb: 20480 }, DEFAULT_SETTINGS.prices)).toBe(2400);
    // 1 MB of RAM at 400 millicents a GiB is 0.39 millicents: down to 0, then the floor of 1.
    expect(hourlyPriceMillicents({ ramMb: 1, cpuPercent: 0, diskMb: 0 }, DEFAULT_SETTINGS.prices)).toBe(1);
    // A resize that changes the exact price changes it, even within the same shown cent.
    expect(hourlyPriceMillicents({ ramMb: 1024, cpuPercent: 100, diskMb: 2048 }, DEFAULT_SETTINGS.prices)).toBe(720);
    expect(hourlyPriceCents({ ramMb: 1024, cpuPercent: 100, diskMb: 2048 }, DEFAULT_SETTINGS.prices)).toBe(1);
  });

  it('history entries from before exact prices are charged their whole cents', () => {
    const legacy: HistoryEvent = { at: at(0), status: 'active', priceCentsPerHour: 2 };
    const exact: HistoryEvent = { at: at(0), status: 'active', priceCentsPerHour: 1, priceMillicentsPerHour: 180 };
    expect(chargeForHour([legacy], H)).toBe(2000);
    expect(chargeForHour([exact], H)).toBe(180);
  });

  it('rounds up to whole cents and never charges less than one', () => {
    expect(hourlyPriceCents({ ramMb: 256, cpuPercent: 25, diskMb: 512 }, DEFAULT_SETTINGS.prices)).toBe(1);
    // Exactly 2 cents: 5 GiB RAM at 400 = 2000 millicents.
    expect(hourlyPriceCents({ ramMb: 5120, cpuPercent: 0, diskMb: 0 }, DEFAULT_SETTINGS.prices)).toBe(2);
    // 5121 MB is 2000.39 millicents: exact price 2000 (down to the millicent), shown as 2 cents.
    expect(hourlyPriceCents({ ramMb: 5121, cpuPercent: 0, diskMb: 0 }, DEFAULT_SETTINGS.prices)).toBe(2);
    // 5126 MB is 2002 millicents: shown as 3 cents (up).
    expect(hourlyPriceCents({ ramMb: 5126, cpuPercent: 0, diskMb: 0 }, DEFAULT_SETTINGS.prices)).toBe(3);
  });

  it('follows each per-resource price', () => {
    const prices = { ramMillicentsPerGbHour: 1000, cpuMillicentsPerCoreHour: 0, diskMillicentsPerGbHour: 0 };
    expect(hourlyPriceCents({ ramMb: 10_240, cpuPercent: 400, diskMb: 100_000 }, prices)).toBe(10);
    expect(
      hourlyPriceCents({ ramMb: 0, cpuPercent: 400, diskMb: 0 }, { ...prices, ramMillicentsPerGbHour: 0, cpuMillicentsPerCoreHour: 2500 }),
    ).toBe(10);
    expect(
      hourlyPriceCents(
        { ramMb: 0, cpuPercent: 0, diskMb: 102_400 },
        { ...prices, ramMillicentsPerGbHour: 0, diskMillicentsPerGbHour: 100 },
      ),
    ).toBe(10);
  });
});
