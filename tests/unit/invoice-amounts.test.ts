import { describe, expect, it } from 'vitest';
import { currencyOf, grossOf, splitGross } from '../../shared/invoices/amounts.ts';

describe('invoice amounts', () => {
  it('an invoice without tax: gross is net, everything returned is net', () => {
    expect(grossOf({ amountCents: 1000 })).toBe(1000);
    expect(splitGross({ amountCents: 1000 }, 400)).toEqual({ netCents: 400, taxCents: 0 });
  });

  it('splits a refund of a taxed invoice: the net rounded down, the tax the rest', () => {
    // 10.00 net + 19 % VAT = 11.90; 5.00 back is 4.2016… net.
    const item = { amountCents: 1000, taxCents: 190 };
    expect(grossOf(item)).toBe(1190);
    expect(splitGross(item, 500)).toEqual({ netCents: 420, taxCents: 80 });
    expect(splitGross(item, 1190)).toEqual({ netCents: 1000, taxCents: 190 });
  });

  it('never returns more than the invoice, nor anything for nothing', () => {
    const item = { amountCents: 1000, taxCents: 190 };
    expect(splitGross(item, 5000)).toEqual({ netCents: 1000, taxCents: 190 });
    expect(splitGross(item, 0)).toEqual({ netCents: 0, taxCents: 0 });
    expect(splitGross({ amountCents: 0 }, 10)).toEqual({ netCents: 0, taxCents: 0 });
  });

  it('reads invoices of before the currency setting as US dollars', () => {
    expect(currencyOf({})).toBe('usd');
    expect(currencyOf({ currency: 'eur' })).toBe('eur');
  });
});
