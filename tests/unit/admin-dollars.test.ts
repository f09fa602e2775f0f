import { describe, expect, it } from 'vitest';
import { parseDollars } from '../../web/src/pages/admin/money.ts';

/** The admin grant form's amount: dollars typed as text, read as integer cents without a float product. */
describe('parseDollars', () => {
  it('reads whole and decimal dollars as exact cents', () => {
    expect(parseDollars('10')).toBe(1000);
    expect(parseDollars('12.34')).toBe(1234);
    expect(parseDollars('0.29')).toBe(29); // 0.29 * 100 is 28.999999999999996 in floating point
    expect(parseDollars('5.5')).toBe(550);
    expect(parseDollars('5.')).toBe(500);
    expect(parseDollars('.75')).toBe(75);
    expect(parseDollars(' $1,234.56 ')).toBe(123456);
    expect(parseDollars('+3')).toBe(300);
  });

  it('reads a negative amount as a deduction', () => {
    expect(parseDollars('-2.50')).toBe(-250);
    expect(parseDollars('-$0.01')).toBe(-1);
  });

  it('refuses anything else', () => {
    for (const bad of [
      '',
      ' ',
      '-',
      '.',
      'abc',
      '1.234',
      '1,23',
      '1e3',
      '12..3',
      '$',
      '1 000',
      '0x10',
      'Infinity',
      '99999999999999999999',
    ]) {
      expect(parseDollars(bad), bad).toBeNull();
    }
  });
});
