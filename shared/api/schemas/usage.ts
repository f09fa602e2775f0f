import * as z from 'zod';
import { Cents, Count, int32, Timestamp } from './common.ts';

/** A server's usage history and its cost this month (servers group; shared/servers/usage-history.ts, cost.ts). */

export const UsageWindow = z.enum(['hour', 'day', 'week']).meta({
  id: 'UsageWindow',
  description: 'The last hour (5-minute points), day (15-minute points) or week (hourly points).',
});

export const UsageHistoryQuery = z.object({ window: UsageWindow.default('hour') }).strict();

const Bytes = Cents;
const BytesPerSecond = Bytes.nullable();

export const UsagePoint = z
  .object({
    at: Timestamp.meta({ description: 'Start of the point; it covers `pointSeconds`.' }),
    samples: Count.meta({ description: 'Samples averaged into this point.' }),
    cpuAbsolute: z.number().min(0).meta({ description: 'Mean CPU use in percent of one core (as the live usage).' }),
    memoryBytes: Bytes,
    diskBytes: Bytes,
    networkRxBytesPerSecond: BytesPerSecond.meta({ description: 'Mean received bytes a second; null when no two samples tell it.' }),
    networkTxBytesPerSecond: BytesPerSecond.meta({ description: 'Mean sent bytes a second; null when no two samples tell it.' }),
  })
  .meta({ id: 'UsagePoint' });

export const UsageHistory = z
  .object({
    window: UsageWindow,
    from: Timestamp,
    to: Timestamp,
    pointSeconds: int32(1, 86_400),
    points: z
      .array(UsagePoint)
      .max(200)
      .meta({ description: 'Oldest first. A point with no sample (nobody looked at the server then) is left out.' }),
  })
  .meta({
    id: 'UsageHistory',
    description:
      'Samples kept by the live-state refresh (one per server per 5 minutes while someone reads the server), averaged per point. Kept 8 days.',
  });

export const ServerCost = z
  .object({
    month: z
      .string()
      .max(7)
      .regex(/^\d{4}-\d{2}$/)
      .meta({ description: 'The calendar month (UTC), `YYYY-MM`.', example: '2026-11' }),
    soFarCents: Cents.meta({ description: "What the ledger's hourly charges of this server add up to this month, rounded down." }),
    soFarMillicents: Cents,
    projectedCents: Cents.meta({
      description:
        'So far plus every hour of the month not charged yet at the price billing would charge (the monthly cap applied), rounded down.',
    }),
    projectedMillicents: Cents,
    hoursToCome: Count.meta({ description: 'Hours of the month still to be charged (ended hours not billed yet included).' }),
    priceMillicentsPerHour: Cents.meta({ description: 'The exact hourly price now; 0 while the server is not active.' }),
    asOf: Timestamp,
  })
  .meta({ id: 'ServerCost' });
