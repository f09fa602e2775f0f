import { describe, expect, it } from 'vitest';
import {
  cappedMillicents,
  chargeableHours,
  firstOwedHour,
  GRACE_MS,
  HOUR_MS,
  type HistoryEvent,
  lastBillableHour,
  LOOKBACK_MS,
} from '../../shared/pricing/hours.ts';
import { hourlyPriceCents, hourlyPriceMillicents } from '../../shared/pricing/index.ts';
import { DEFAULT_SETTINGS } from '../../shared/settings/index.ts';

const H = Date.UTC(2026, 10, 21, 10); // 10:00 UTC
const at = (hours: number, minutes = 0) => new Date(H + hours * HOUR_MS + minutes * 60_000).toISOString();
const active = (t: string, price: number): HistoryEvent => ({ at: t, status: 'active', priceCentsPerHour: price });
const suspended = (t: string): HistoryEvent => ({ at: t, status: 'suspended', priceCentsPerHour: 0 });
const deleted = (t: string): HistoryEvent => ({ at: t, status: 'deleted', priceCentsPerHour: 0 });

/**
 * What the billing pass charges for one hour: `chargeableHours` over a range of that hour alone,
 * the function the pass calls (shared/billing/pass.ts), so these tables test what production charges.
 */
function chargeForHour(history: HistoryEvent[], hourMs: number): number {
  const charged = chargeableHours(history, hourMs, hourMs);
  expect(charged.every((c) => c.hour === hourMs)).toBe(true);
  expect(charged.length).toBeLessThanOrEqual(1);
  return charged[0]?.millicents ?? 0;
}

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

describe('which hours the pass looks at', () => {
  it('bills up to the last hour that ended at least the grace period ago, never the running hour', () => {
    // 11:03, past the grace: the hour 10:00–11:00 is billed, 11:00–12:00 still runs.
    expect(lastBillableHour(H + HOUR_MS + 3 * 60_000)).toBe(H);
    // 11:01, within the grace: a change recorded at 10:59:59 may not be in yet, so 10:00 waits.
    expect(lastBillableHour(H + HOUR_MS + GRACE_MS - 1)).toBe(H - HOUR_MS);
    expect(lastBillableHour(H + HOUR_MS + GRACE_MS)).toBe(H);
    expect(lastBillableHour(H + 2 * HOUR_MS - 1)).toBe(H);
  });

  const W = H + 10 * HOUR_MS; // the watermark: every shard billed through the hour 20:00–21:00

  it('the first pass ever: from the hour of creation', () => {
    expect(firstOwedHour(H + 20 * 60_000, null)).toBe(H);
  });

  it('created long before the watermark: from the hour after it (the hours before are billed)', () => {
    expect(firstOwedHour(H, W)).toBe(W + HOUR_MS);
    expect(firstOwedHour(W - LOOKBACK_MS, W)).toBe(W + HOUR_MS);
  });

  it('created near the watermark: from its creation again, so a deploy recorded after a pass read is not skipped', () => {
    expect(firstOwedHour(W - LOOKBACK_MS + HOUR_MS, W)).toBe(W - LOOKBACK_MS + HOUR_MS);
    expect(firstOwedHour(W + 5 * 60_000, W)).toBe(W);
    expect(firstOwedHour(W + HOUR_MS + 1, W)).toBe(W + HOUR_MS);
  });
});

describe('the monthly cap', () => {
  it('an hour under the cap costs its price', () => {
    expect(cappedMillicents(1800, 720, 0)).toBe(1800);
    expect(cappedMillicents(1800, 720, 718 * 1800)).toBe(1800);
  });

  it('the last hour under the cap costs what is left of it; then hours are free, never negative', () => {
    expect(cappedMillicents(1800, 720, 719 * 1800 + 500)).toBe(1300);
    expect(cappedMillicents(1800, 720, 720 * 1800)).toBe(0);
    // Paid more than this price's cap (it ran larger earlier in the month): free, not a refund.
    expect(cappedMillicents(1800, 720, 800 * 1800)).toBe(0);
  });

  it('counts in the current price: after an upsize the cap is the new price times the hours', () => {
    // 700 hours at 1000, then an upsize to 3000: the cap is now 720 × 3000, so the hour costs 3000.
    expect(cappedMillicents(3000, 720, 700 * 1000)).toBe(3000);
    // The largest cap (744 hours, a 31-day month) never cuts an hour of a month.
    expect(cappedMillicents(3000, 744, 743 * 3000)).toBe(3000);
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
