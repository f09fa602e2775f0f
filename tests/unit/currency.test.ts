import { afterEach, describe, expect, it } from 'vitest';
import { CURRENCIES, currencyWithSymbol, formatMoney, isCurrency, minorToDecimal, parseCurrency } from '../../shared/currency.ts';
import { withDefaults } from '../../shared/settings/index.ts';
import { cents, currency, millicents, setCurrency, signed } from '../../web/src/format.ts';

/** The deployment's currency: which ones, and amounts shown from integer cents without a float. */
describe('the currencies a deployment may choose', () => {
  it('are the two-decimal ones: USD, EUR, GBP in, zero- and three-decimal ones and the whole-unit special cases out', () => {
    for (const code of ['usd', 'eur', 'gbp', 'chf', 'cad', 'pln', 'sek']) expect(isCurrency(code), code).toBe(true);
    // Zero-decimal (JPY, KRW, …), three-decimal (KWD, BHD, …), and Stripe's whole-unit cases (ISK, HUF, TWD).
    for (const code of ['jpy', 'krw', 'vnd', 'clp', 'ugx', 'kwd', 'bhd', 'jod', 'omr', 'tnd', 'isk', 'huf', 'twd', 'EUR', 'xyz']) {
      expect(isCurrency(code), code).toBe(false);
    }
    expect(new Set(CURRENCIES).size).toBe(CURRENCIES.length);
    for (const code of CURRENCIES) expect(code).toMatch(/^[a-z]{3}$/);
  });

  it('reads a set-up value in any case and refuses one it cannot charge in, naming where it came from', () => {
    expect(parseCurrency(' EUR ', 'CURRENCY')).toBe('eur');
    expect(() => parseCurrency('jpy', 'Context currency')).toThrow(/Context currency=jpy: not a currency this platform charges in/);
  });
});

describe('the set-up currency (CURRENCY; context currency in AWS)', () => {
  const before = process.env.CURRENCY;
  afterEach(() => {
    if (before === undefined) delete process.env.CURRENCY;
    else process.env.CURRENCY = before;
  });

  it('is the currency of settings never saved; settings once saved keep theirs whatever the set-up says later', () => {
    process.env.CURRENCY = 'EUR';
    expect(withDefaults(undefined).currency).toBe('eur');
    expect(withDefaults({ trialCreditCents: 7 }).currency).toBe('eur');
    expect(withDefaults({ currency: 'usd' }).currency).toBe('usd');
    delete process.env.CURRENCY;
    expect(withDefaults(undefined).currency).toBe('usd');
    process.env.CURRENCY = 'jpy';
    expect(() => withDefaults(undefined)).toThrow(/CURRENCY=jpy/);
  });
});

describe("currencyWithSymbol (the invoice PDF's currency line)", () => {
  it('names the code and the sign people know it by, the code alone when it is its own sign', () => {
    expect(currencyWithSymbol('eur')).toBe('EUR (€)');
    expect(currencyWithSymbol('gbp')).toBe('GBP (£)');
    expect(currencyWithSymbol('usd')).toBe('USD ($)');
    expect(currencyWithSymbol('chf')).toBe('CHF');
  });
});

describe('formatMoney (the sandbox checkout page)', () => {
  it('shows the currency symbol and two decimals', () => {
    expect(formatMoney(1000, 'eur')).toBe('€10.00');
    expect(formatMoney(1000, 'usd')).toBe('$10.00');
    expect(formatMoney(2250, 'gbp')).toBe('£22.50');
    expect(formatMoney(123_456, 'chf')).toBe('CHF\u00a01,234.56'); // Intl puts a no-break space after a code
    expect(formatMoney(-1_999, 'eur')).toBe('-€19.99');
    expect(formatMoney(5, 'eur')).toBe('€0.05');
  });

  it('is exact from integer cents up to the largest safe integer (no float division)', () => {
    expect(minorToDecimal(Number.MAX_SAFE_INTEGER)).toBe('90071992547409.91');
    expect(formatMoney(Number.MAX_SAFE_INTEGER, 'eur')).toBe('€90,071,992,547,409.91');
    // 0.29 × 100 is 28.999… in floating point; 29 cents stay 29.
    expect(formatMoney(29, 'usd')).toBe('$0.29');
  });
});

describe('the dashboard formatter (web/src/format.ts)', () => {
  afterEach(() => setCurrency('usd'));

  it('shows every amount in the currency the platform answers with', () => {
    expect(cents(1234)).toBe('$12.34');
    setCurrency('eur');
    expect(currency()).toBe('EUR');
    expect(cents(1234)).toBe('€12.34');
    expect(millicents(1500)).toBe('€0.015');
    expect(signed(-3, cents)).toBe('−€0.03');
    setCurrency('gbp');
    expect(cents(Number.MAX_SAFE_INTEGER)).toBe('£90,071,992,547,409.91');
  });
});
