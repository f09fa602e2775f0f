/**
 * Dollars typed by an admin, as integer cents, exactly: the decimal string is split at its point
 * and the parts are read as integers, so "0.29" is 29 cents (never 0.29 × 100 = 28.999…).
 * Accepts an optional sign, an optional "$", thousands commas and at most two decimals:
 * "10", "-5.5", "$1,234.56", ".75". Answers null for anything else or past a safe integer.
 */
export function parseDollars(text: string): number | null {
  const m = /^\s*([+-])?\s*\$?\s*(\d{1,3}(?:,\d{3})+|\d*)(?:\.(\d{0,2}))?\s*$/.exec(text);
  if (!m) return null;
  const [, sign, wholeText = '', fraction] = m;
  if (wholeText === '' && !fraction) return null;
  const whole = wholeText === '' ? 0 : Number(wholeText.replace(/,/g, ''));
  const centsPart = Number((fraction ?? '').padEnd(2, '0'));
  if (!Number.isSafeInteger(whole) || whole > Math.floor((Number.MAX_SAFE_INTEGER - 99) / 100)) return null;
  const total = whole * 100 + centsPart;
  return sign === '-' ? -total : total;
}

/** The largest grant or deduction the API takes (AdminCredit.amountCents: ±10,000,000 cents). */
export const MAX_CREDIT_CENTS = 10_000_000;
