import { exactPriceOf } from './index.ts';
/**
 * Hour arithmetic of hourly billing (ARCHITECTURE.md, "Money"): a server is charged its hourly price for every
 * UTC clock hour during which it was active for any moment, at the highest price it had in that
 * hour. Pure functions over the server's history, so every rule has a table test.
 */
export const HOUR_MS = 3_600_000;

export interface HistoryEvent {
  at: string;
  status: 'active' | 'suspended' | 'deleted';
  /** The price shown (whole cents, rounded up). */
  priceCentsPerHour: number;
  /** The exact price charged; entries written before it existed are charged their whole cents. */
  priceMillicentsPerHour?: number;
}

export const hourStart = (ms: number): number => Math.floor(ms / HOUR_MS) * HOUR_MS;

/** `2026-11-21T10` for the hour 10:00–11:00 UTC. */
export const hourLabel = (hourMs: number): string => new Date(hourStart(hourMs)).toISOString().slice(0, 13);

export const monthOf = (hourMs: number): string => new Date(hourMs).toISOString().slice(0, 7);

/** Active stretches of time with their price: [start, end) in ms. */
function activeSegments(history: HistoryEvent[]): { start: number; end: number; price: number }[] {
  const events = [...history].sort((a, b) => Date.parse(a.at) - Date.parse(b.at));
  const out: { start: number; end: number; price: number }[] = [];
  events.forEach((e, i) => {
    if (e.status !== 'active') return;
    const start = Date.parse(e.at);
    const next = events[i + 1];
    const end = next ? Date.parse(next.at) : Number.POSITIVE_INFINITY;
    if (end > start) out.push({ start, end, price: exactPriceOf(e) });
  });
  return out;
}

/** What the hour starting at `hourMs` costs, in millicents: the highest price of any active moment in it, else 0. */
export function chargeForHour(history: HistoryEvent[], hourMs: number): number {
  let millicents = 0;
  for (const s of activeSegments(history)) {
    if (s.start < hourMs + HOUR_MS && s.end > hourMs) millicents = Math.max(millicents, s.price);
  }
  return millicents;
}

/** Every hour in [fromHour, toHour] (hour starts, inclusive) that costs something, with its exact price. */
export function chargeableHours(history: HistoryEvent[], fromHour: number, toHour: number): { hour: number; millicents: number }[] {
  const out: { hour: number; millicents: number }[] = [];
  const segments = activeSegments(history);
  if (!segments.length) return out;
  const first = Math.max(fromHour, hourStart(segments[0]!.start));
  const lastEnd = segments.at(-1)!.end;
  const last = Math.min(toHour, Number.isFinite(lastEnd) ? hourStart(lastEnd - 1) : toHour);
  for (let hour = first; hour <= last; hour += HOUR_MS) {
    let millicents = 0;
    for (const s of segments) if (s.start < hour + HOUR_MS && s.end > hour) millicents = Math.max(millicents, s.price);
    if (millicents > 0) out.push({ hour, millicents });
  }
  return out;
}
