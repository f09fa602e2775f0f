/**
 * The five cron fields of a schedule, checked as the panel checks them (its
 * Utilities::getScheduleNextRunDate through dragonmantank/cron-expression): each field is a list of
 * `*`, a value, a range `a-b`, each with an optional step `/n`; months may be JAN..DEC and days of
 * the week SUN..SAT (0 and 7 are Sunday); `?` stands for any day. The library's `L`, `W` and `#`
 * are not taken here (the dashboard never sends them). An expression that never matches (31 February)
 * is refused too, as the panel refuses it. Times are UTC, the panel's default timezone.
 */
export interface CronFields {
  minute: string;
  hour: string;
  dayOfMonth: string;
  month: string;
  dayOfWeek: string;
}

const MONTHS = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'];
const DAYS = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'];
const SPEC: Record<keyof CronFields, { min: number; max: number; names?: string[]; first?: number }> = {
  minute: { min: 0, max: 59 },
  hour: { min: 0, max: 23 },
  dayOfMonth: { min: 1, max: 31 },
  month: { min: 1, max: 12, names: MONTHS, first: 1 },
  dayOfWeek: { min: 0, max: 7, names: DAYS, first: 0 },
};
const ORDER: (keyof CronFields)[] = ['minute', 'hour', 'dayOfMonth', 'month', 'dayOfWeek'];

/** The values a field allows, or a reason it is not valid. */
function expandField(field: keyof CronFields, raw: string): Set<number> | string {
  const spec = SPEC[field];
  const range = `${spec.min}-${spec.max}`;
  const bad = `must be a cron field: *, a value (${range}), a range a-b, a list a,b and an optional step /n`;
  const value = (s: string): number | undefined => {
    const named = spec.names?.indexOf(s.toUpperCase()) ?? -1;
    if (named >= 0) return named + (spec.first ?? 0);
    if (!/^\d{1,2}$/.test(s)) return undefined;
    const n = Number(s);
    return n >= spec.min && n <= spec.max ? n : undefined;
  };
  const out = new Set<number>();
  if (raw === '?' && (field === 'dayOfMonth' || field === 'dayOfWeek')) {
    for (let i = spec.min; i <= spec.max; i++) out.add(i);
    return out;
  }
  for (const part of raw.split(',')) {
    const [span = '', stepText, extra] = part.split('/');
    if (extra !== undefined || span === '') return bad;
    let step = 1;
    if (stepText !== undefined) {
      if (!/^\d{1,2}$/.test(stepText) || Number(stepText) < 1 || Number(stepText) > spec.max) return `step must be 1 to ${spec.max}`;
      step = Number(stepText);
    }
    let from: number | undefined;
    let to: number | undefined;
    if (span === '*') [from, to] = [spec.min, spec.max];
    else if (span.includes('-')) {
      const [a = '', b = '', more] = span.split('-');
      if (more !== undefined) return bad;
      [from, to] = [value(a), value(b)];
      if (from !== undefined && to !== undefined && from > to) return `range ${span} runs backwards`;
    } else {
      from = value(span);
      to = stepText !== undefined ? spec.max : from;
    }
    if (from === undefined || to === undefined) return `${bad}; ${part} is out of ${range}`;
    for (let i = from; i <= to; i += step) out.add(field === 'dayOfWeek' && i === 7 ? 0 : i);
  }
  return out;
}

/** The first field that is not valid and why, or the expression's next run after `from` (UTC). */
export function checkCron(cron: CronFields, from = new Date()): { field: keyof CronFields; message: string } | { next: Date } {
  const sets = {} as Record<keyof CronFields, Set<number>>;
  for (const field of ORDER) {
    const raw = cron[field];
    if (!/^\S+$/.test(raw)) return { field, message: 'must be one cron field (no spaces)' };
    const set = expandField(field, raw);
    if (typeof set === 'string') return { field, message: set };
    sets[field] = set;
  }
  const next = nextMatch(cron, sets, from);
  return next ? { next } : { field: 'dayOfMonth', message: 'the cron fields never match a date (e.g. 30 February)' };
}

function nextMatch(cron: CronFields, sets: Record<keyof CronFields, Set<number>>, from: Date): Date | undefined {
  const domAny = cron.dayOfMonth === '*' || cron.dayOfMonth === '?';
  const dowAny = cron.dayOfWeek === '*' || cron.dayOfWeek === '?';
  const start = Math.floor(from.getTime() / 60_000) * 60_000 + 60_000;
  const startDate = new Date(start);
  const day = new Date(Date.UTC(startDate.getUTCFullYear(), startDate.getUTCMonth(), startDate.getUTCDate()));
  const hours = [...sets.hour].sort((a, b) => a - b);
  const minutes = [...sets.minute].sort((a, b) => a - b);
  // Eight years cover every leap-day and weekday combination.
  for (let d = 0; d < 366 * 8; d++, day.setUTCDate(day.getUTCDate() + 1)) {
    if (!sets.month.has(day.getUTCMonth() + 1)) continue;
    const domOk = sets.dayOfMonth.has(day.getUTCDate());
    const dowOk = sets.dayOfWeek.has(day.getUTCDay());
    // Both restricted: either matches (cron's rule); one restricted: that one.
    if (!(domAny && dowAny ? true : domAny ? dowOk : dowAny ? domOk : domOk || dowOk)) continue;
    for (const h of hours) {
      for (const m of minutes) {
        const at = day.getTime() + h * 3_600_000 + m * 60_000;
        if (at >= start) return new Date(at);
      }
    }
  }
  return undefined;
}
