import { describe, expect, it } from 'vitest';
import { accrue } from '../../shared/ledger/index.ts';
import { bonusFor } from '../../shared/payments/credit.ts';
import { bonusShare } from '../../shared/payments/refunds.ts';
import { heldBack, type Reversal } from '../../shared/invoices/index.ts';
import { runwayOf } from '../../shared/accounts/index.ts';
import { hoursLeftInMonth, restOfMonthCents } from '../../shared/budgets/index.ts';
import { centsUp } from '../../shared/pricing/index.ts';
import { HOUR_MS } from '../../shared/pricing/hours.ts';

/**
 * The money rules that are not about HTTP, called in process (no DynamoDB): the very functions the
 * ledger, the payments, refunds, budgets and the account view use, so `npm run check` fails when
 * one of them is wrong, not only the integration suite. The adversary: a customer who would gain a
 * cent from a rounding in their favour, or an operator report that disagrees with the ledger.
 */
describe('the top-up bonus', () => {
  it('is the percentage of the top-up, rounded down to the cent', () => {
    expect(bonusFor(5000, 5)).toBe(250);
    // 5 % of 19.99 is 99.95 cents: 99, never 100.
    expect(bonusFor(1999, 5)).toBe(99);
    expect(bonusFor(19, 5)).toBe(0);
    expect(bonusFor(5000, 0)).toBe(0);
  });
});

describe('what refunds and disputes hold back of a 2,000 ¢ top-up (heldBack)', () => {
  const top = { amountCents: 2000 };
  const of = (r: Partial<Reversal>): Reversal => ({
    refundTotal: { cents: 0, at: null },
    failedRefunds: [],
    disputes: [],
    bonusReversedCents: 0,
    ...r,
  });
  const failed = (amountCents: number, createdAt: number, failedAt: number) => ({
    id: `re_${createdAt}`,
    amountCents,
    createdAt,
    failedAt,
  });

  it('a refund that failed after the total counting it was stated comes back', () => {
    expect(heldBack(top, of({ refundTotal: { cents: 800, at: 100 }, failedRefunds: [failed(800, 100, 200)] })).refundedCents).toBe(0);
  });

  it('a total stated after the failure already leaves it out, and a refund made after the total is not in it', () => {
    // Failed at 200, total 500 stated at 300 (a later refund): the failure is not taken off again.
    expect(heldBack(top, of({ refundTotal: { cents: 500, at: 300 }, failedRefunds: [failed(800, 100, 200)] })).refundedCents).toBe(500);
    // The 300 ¢ refund made at 400 failed; the known total (stated at 300) never counted it.
    expect(heldBack(top, of({ refundTotal: { cents: 500, at: 300 }, failedRefunds: [failed(300, 400, 500)] })).refundedCents).toBe(500);
    // A failure known before any total: nothing is held, never less than nothing.
    expect(heldBack(top, of({ failedRefunds: [failed(800, 100, 200)] })).refundedCents).toBe(0);
  });

  it('open and lost disputes hold their amount, up to what refunds left; won and prevented hold nothing', () => {
    const dispute = (status: 'open' | 'lost' | 'won' | 'prevented') => [{ id: 'dp_1', amountCents: 2000, status }];
    expect(heldBack(top, of({ disputes: dispute('open') }))).toEqual({ refundedCents: 0, disputedCents: 2000 });
    expect(heldBack(top, of({ disputes: dispute('lost'), refundTotal: { cents: 1500, at: 1 } }))).toEqual({
      refundedCents: 1500,
      disputedCents: 500,
    });
    expect(heldBack(top, of({ disputes: dispute('won') })).disputedCents).toBe(0);
    expect(heldBack(top, of({ disputes: dispute('prevented'), refundTotal: { cents: 2000, at: 1 } }))).toEqual({
      refundedCents: 2000,
      disputedCents: 0,
    });
  });
});

describe('the bonus taken back by refunds and disputes: floor(B × X / T)', () => {
  it('a full refund takes back the whole bonus', () => {
    expect(bonusShare(250, 5000, 5000)).toBe(250);
  });

  it('a partial refund takes back its share, rounded down', () => {
    // 250 × 1999 / 5000 = 99.95: 99.
    expect(bonusShare(250, 1999, 5000)).toBe(99);
    expect(bonusShare(250, 2500, 5000)).toBe(125);
  });

  it('partial refunds together never take back more than the bonus: the share is of the total taken', () => {
    // Three refunds of a third each: the totals taken are 1667, 3334 and 5000 of 5000.
    const totals = [1667, 3334, 5000].map((taken) => bonusShare(250, taken, 5000));
    expect(totals).toEqual([83, 166, 250]);
    // What each booking takes is the difference of the totals, so together exactly the bonus.
    expect(totals.map((t, i) => t - (totals[i - 1] ?? 0)).reduce((a, b) => a + b, 0)).toBe(250);
  });

  it('more taken than the top-up (a refund and a dispute of the same payment) takes no more than the bonus', () => {
    expect(bonusShare(250, 9000, 5000)).toBe(250);
  });

  it('no top-up, no share', () => {
    expect(bonusShare(250, 100, 0)).toBe(0);
  });
});

describe('charging exact prices in whole cents', () => {
  it('carries what is below a cent to the next charge, and charges the whole cents only', () => {
    expect(accrue(0, 2400)).toEqual({ before: 0, after: 400, cents: 2 });
    expect(accrue(400, 2400)).toEqual({ before: 400, after: 800, cents: 2 });
    // 800 + 2400 = 3.2 cents: 3 charged, 200 carried. Rounding would charge 3 here and 4 too early elsewhere.
    expect(accrue(800, 2400)).toEqual({ before: 800, after: 200, cents: 3 });
    expect(accrue(999, 1)).toEqual({ before: 999, after: 0, cents: 1 });
    expect(accrue(0, 999)).toEqual({ before: 0, after: 999, cents: 0 });
  });

  it('over many hours, the cents charged are the exact total rounded down, never more', () => {
    let carried = 0;
    let cents = 0;
    for (let hour = 0; hour < 1000; hour++) {
      const a = accrue(carried, 180);
      carried = a.after;
      cents += a.cents;
    }
    expect(cents).toBe(180); // 1000 × 180 millicents = 180,000 millicents = 180 cents exactly
    expect(carried).toBe(0);
  });

  it('refuses an amount that is not a non-negative integer', () => {
    expect(() => accrue(0, -1)).toThrow();
    expect(() => accrue(0, 0.5)).toThrow();
  });
});

describe('runway', () => {
  const now = Date.UTC(2026, 10, 21, 10);

  it('is the balance less what is carried, over the exact burn', () => {
    // 100 cents less 500 millicents carried = 99,500 millicents at 2,000 an hour: 49.75 hours.
    const runway = runwayOf({ balanceCents: 100, accruedMillicents: 500, burnMillicentsPerHour: 2000 }, now);
    expect(runway).toEqual({ burnMillicentsPerHour: 2000, hours: 49.75, fundedUntil: new Date(now + 49.75 * HOUR_MS).toISOString() });
  });

  it('accounts from before exact prices burn their whole cents; no burn, no runway; no debt below zero', () => {
    expect(runwayOf({ balanceCents: 10, burnCentsPerHour: 2 }, now).hours).toBe(5);
    expect(runwayOf({ balanceCents: 10, burnMillicentsPerHour: 0 }, now)).toEqual({
      burnMillicentsPerHour: 0,
      hours: null,
      fundedUntil: null,
    });
    expect(runwayOf({ balanceCents: -50, burnMillicentsPerHour: 1000 }, now).hours).toBe(0);
  });
});

describe('the budget projection', () => {
  it('counts every hour left in the UTC month, a started hour as a whole one', () => {
    expect(hoursLeftInMonth(Date.UTC(2026, 10, 30, 23))).toBe(1);
    expect(hoursLeftInMonth(Date.UTC(2026, 10, 30, 23, 1))).toBe(1);
    expect(hoursLeftInMonth(Date.UTC(2026, 10, 30, 22, 59))).toBe(2);
    expect(hoursLeftInMonth(Date.UTC(2026, 10, 1))).toBe(30 * 24);
  });

  it('is the exact burn times those hours, rounded up to the cent once', () => {
    // 180 millicents × 2 hours = 360 millicents: 1 cent (not 2, as rounding each hour up would say).
    expect(restOfMonthCents(180, Date.UTC(2026, 10, 30, 22))).toBe(1);
    expect(restOfMonthCents(2400, Date.UTC(2026, 10, 1))).toBe(centsUp(2400 * 720));
    expect(restOfMonthCents(2400, Date.UTC(2026, 10, 1))).toBe(1728);
  });
});
