/** Money and time as a person reads them. Amounts stay integers until they are shown. */
const usd = new Intl.NumberFormat('en-US', { style: 'currency', currency: 'USD' });

/** Cents as dollars: 1234 → "$12.34". */
export const cents = (value: number): string => usd.format(value / 100);

/** Millicents (1/1000 of a cent) as dollars with up to 5 decimals: 1500 → "$0.015". */
export const millicents = (value: number): string =>
  new Intl.NumberFormat('en-US', { style: 'currency', currency: 'USD', maximumFractionDigits: 5 }).format(value / 100_000);

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
