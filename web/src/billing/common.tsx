import { parseDollars } from '../format.ts';

/** Dollars typed by a person ("12.5") as integer cents (1250); null when it is not an amount or is negative. */
export function toCents(text: string): number | null {
  const value = parseDollars(text);
  return value !== null && value >= 0 ? value : null;
}

/** Integer cents as the text of a dollar input: 1250 → "12.50". */
export const toDollars = (value: number): string => (value / 100).toFixed(2);
