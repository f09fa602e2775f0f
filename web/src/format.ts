/** Money and time as a person reads them. Amounts stay integers until they are shown. */

/**
 * The platform's one currency (GET /v1/billing/config), which every amount is in; the app sets it
 * as it starts (app.tsx), before any amount is shown.
 */
let currencyCode = 'USD';
let centsFormat = moneyFormat(2);
let millicentsFormat = moneyFormat(5);

function moneyFormat(maximumFractionDigits: number): Intl.NumberFormat {
  return new Intl.NumberFormat('en-US', { style: 'currency', currency: currencyCode, minimumFractionDigits: 2, maximumFractionDigits });
}

export function setCurrency(code: string): void {
  currencyCode = code.toUpperCase();
  centsFormat = moneyFormat(2);
  millicentsFormat = moneyFormat(5);
}

/** The currency's code as a label reads it: "EUR". */
export const currency = (): string => currencyCode;

/** An integer as an exact decimal string with `places` decimals: (-1234, 2) → "-12.34"; never a float on the way. */
function decimal(value: number, places: number): `${number}` {
  const digits = String(Math.abs(value)).padStart(places + 1, '0');
  return `${value < 0 ? '-' : ''}${digits.slice(0, -places)}.${digits.slice(-places)}` as `${number}`;
}

/** Cents (hundredths) in the platform's currency: 1234 → "$12.34", "€12.34". */
export const cents = (value: number): string => centsFormat.format(decimal(value, 2));

/** Millicents (1/1000 of a cent) with up to 5 decimals: 1500 → "$0.015". */
export const millicents = (value: number): string => millicentsFormat.format(decimal(value, 5));

/**
 * An amount typed by a person, as integer cents, exactly: the decimal string is split at its point
 * and the parts are read as integers, so "0.29" is 29 cents (never 0.29 × 100 = 28.999…).
 * Accepts an optional sign, an optional currency sign ("$", "€", "£"), thousands commas and at most
 * two decimals: "10", "-5.5", "$1,234.56", ".75". Answers null for anything else or past a safe integer.
 */
export function parseDollars(text: string): number | null {
  const m = /^\s*([+-])?\s*[$€£]?\s*(\d{1,3}(?:,\d{3})+|\d*)(?:\.(\d{0,2}))?\s*$/.exec(text);
  if (!m) return null;
  const [, sign, wholeText = '', fraction] = m;
  if (wholeText === '' && !fraction) return null;
  const whole = wholeText === '' ? 0 : Number(wholeText.replace(/,/g, ''));
  const centsPart = Number((fraction ?? '').padEnd(2, '0'));
  if (!Number.isSafeInteger(whole) || whole > Math.floor((Number.MAX_SAFE_INTEGER - 99) / 100)) return null;
  const total = whole * 100 + centsPart;
  return sign === '-' ? -total : total;
}

/**
 * An amount with its sign written out: signed(2500, cents) → "+$25.00", signed(-3, cents) → "−$0.03"
 * (a real minus sign; the sign is text, not only colour); zero has none.
 */
export function signed(value: number, format: (value: number) => string): string {
  if (value > 0) return `+${format(value)}`;
  if (value < 0) return `−${format(-value)}`;
  return format(0);
}

export const dateTime = (iso: string | null | undefined): string => (iso ? new Date(iso).toLocaleString() : '—');

/** "3 minutes ago", "in 2 days". */
export function relative(iso: string | null | undefined, now = Date.now()): string {
  if (!iso) return '—';
  const seconds = Math.round((new Date(iso).getTime() - now) / 1000);
  const units: [Intl.RelativeTimeFormatUnit, number][] = [
    ['day', 86_400],
    ['hour', 3_600],
    ['minute', 60],
    ['second', 1],
  ];
  const rtf = new Intl.RelativeTimeFormat('en', { numeric: 'auto' });
  for (const [unit, size] of units) {
    if (Math.abs(seconds) >= size || unit === 'second') return rtf.format(Math.trunc(seconds / size), unit);
  }
  return '—';
}

export const mb = (value: number): string => (value >= 1024 ? `${(value / 1024).toFixed(value % 1024 ? 1 : 0)} GB` : `${value} MB`);

export function bytes(value: number): string {
  if (value < 1024) return `${value} B`;
  const units = ['KB', 'MB', 'GB', 'TB'];
  let v = value / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v.toFixed(v < 10 ? 1 : 0)} ${units[i]}`;
}

/** Hours of runway as a person reads them: 1291.4 → "53 d 19 h", 5.9 → "5 h" (whole hours, down: never more than there is). */
export function runwayHours(hours: number): string {
  const whole = Math.max(0, Math.floor(hours));
  const days = Math.floor(whole / 24);
  return days > 0 ? `${days} d ${whole % 24} h` : `${whole} h`;
}
