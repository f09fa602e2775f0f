import { exactPriceOf } from './index.ts';
/**
 * Hour arithmetic of hourly billing (ARCHITECTURE.md, "Money"): a server is charged its hourly price for every
 * UTC clock hour during which it was active for any moment, at the highest price it had in that
 * hour. Pure functions, and the very ones the billing pass calls (shared/billing/pass.ts), so the
 * rule tables of tests/unit/billing-hours.test.ts test what production charges.
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

/** A pass bills an hour only once it ended this long ago: changes recorded just before the hour ended are in. */
export const GRACE_MS = 2 * 60_000;

/** The start of the last hour a pass at `atMs` bills: the last hour that ended at least GRACE_MS before it. */
export const lastBillableHour = (atMs: number): number => hourStart(atMs - GRACE_MS) - HOUR_MS;

/** Servers created this close to the watermark are looked at again (a deploy recorded just after a pass read). */
export const LOOKBACK_MS = 2 * HOUR_MS;

/**
 * The first hour a server may still owe: from its creation, or just after the watermark (the last
 * hour every shard of a pass completed). Hours looked at twice cost nothing: their guards drop them.
 */
export function firstOwedHour(createdAt: number, watermark: number | null): number {
  const created = hourStart(createdAt);
  if (watermark === null || created > watermark - LOOKBACK_MS) return created;
  return watermark + HOUR_MS;
}

/**
 * The operator's monthly cap (`monthlyCapHours`): what an hour at `millicents` still costs when the
 * server has paid `paidThisMonth` millicents in the month; a server never pays more in a month
 * than its hourly price times the cap's hours, and never less than nothing.
 */
export const cappedMillicents = (millicents: number, monthlyCapHours: number, paidThisMonth: number): number =>
  Math.max(0, Math.min(millicents, monthlyCapHours * millicents - paidThisMonth));

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
