import type { z } from 'zod';
import type { UsageHistory, UsageWindow } from '../api/schemas/usage.ts';
import { currentTime } from '../clock.ts';
import * as accessPatterns from '../db/access-patterns.ts';
import type { PanelLiveAnswer, UsageSampleItem } from '../db/items.ts';
import { keys } from '../db/keys.ts';
import { writeIfFirst } from '../db/write.ts';
import { errorFields, logger } from '../observability/logger.ts';

/**
 * Usage history from the live-state refresh (live.ts): a refresh that got usage from the panel also
 * keeps it as a sample, so history costs no panel call of its own. One item per server per
 * five-minute bucket (the first refresh in a bucket writes it, conditionally): ~100 bytes, one write
 * unit, at most 288 a day for a server someone watches and none for one nobody does. A ring in one
 * item would rewrite the whole ring (a week is ~14 KB, 14 write units) on every sample. Samples go
 * by DynamoDB TTL after the longest window plus a day.
 */
export const SAMPLE_BUCKET_MS = 5 * 60_000;
export const SAMPLE_TTL_SECONDS = 8 * 24 * 3600;

/** Each window's span and the width of its points: 12 points an hour, 96 a day, 168 a week. */
export const USAGE_WINDOWS: Record<z.infer<typeof UsageWindow>, { spanMs: number; pointMs: number }> = {
  hour: { spanMs: 3_600_000, pointMs: SAMPLE_BUCKET_MS },
  day: { spanMs: 24 * 3_600_000, pointMs: 15 * 60_000 },
  week: { spanMs: 7 * 24 * 3_600_000, pointMs: 3_600_000 },
};

export const sampleBucketOf = (ms: number): string => new Date(Math.floor(ms / SAMPLE_BUCKET_MS) * SAMPLE_BUCKET_MS).toISOString();

/**
 * Writes the sample of this bucket unless one exists. Returns the bucket written (or found taken),
 * which the live state remembers so later refreshes in the bucket write nothing. Never throws: the
 * live state it follows is what the reader asked for.
 */
export async function recordUsageSample(
  serverId: string,
  resources: NonNullable<PanelLiveAnswer['resources']>,
  alreadySampledBucket: string | undefined,
): Promise<string | undefined> {
  const now = currentTime();
  const bucket = sampleBucketOf(now);
  if (bucket === alreadySampledBucket) return bucket;
  try {
    await writeIfFirst({
      Put: {
        Item: {
          ...keys.usageSample(serverId, bucket),
          kind: 'usage-sample',
          at: new Date(now).toISOString(),
          cpu: resources.cpuAbsolute,
          mem: resources.memoryBytes,
          disk: resources.diskBytes,
          rx: resources.networkRxBytes,
          tx: resources.networkTxBytes,
          expiresAt: Math.floor(now / 1000) + SAMPLE_TTL_SECONDS,
        } satisfies Omit<UsageSampleItem, 'kind'> & { kind: 'usage-sample' },
        ConditionExpression: 'attribute_not_exists(PK)',
      },
    });
    return bucket;
  } catch (err) {
    logger.warn('usage sample not stored', { serverId, ...errorFields(err) });
    return alreadySampledBucket;
  }
}

type Point = z.infer<typeof UsageHistory>['points'][number];

/** The samples of the window, averaged per point (network: bytes a second from the counters' growth). */
export async function usageHistoryOf(serverId: string, window: z.infer<typeof UsageWindow>): Promise<z.infer<typeof UsageHistory>> {
  const { spanMs, pointMs } = USAGE_WINDOWS[window];
  const now = currentTime();
  const from = now - spanMs;
  const samples = await accessPatterns.usageSamplesOfServer(serverId, sampleBucketOf(from), sampleBucketOf(now));
  return {
    window,
    from: new Date(from).toISOString(),
    to: new Date(now).toISOString(),
    pointSeconds: pointMs / 1000,
    points: downsample(samples, pointMs),
  };
}

/**
 * Groups samples by point (`pointMs` wide, aligned to the epoch) and averages each group. Network
 * rates come from consecutive samples: growth over the seconds between them; a counter that went
 * down (the server restarted) gives no rate for that pair. Points without samples are left out.
 */
export function downsample(
  samples: readonly Pick<UsageSampleItem, 'at' | 'cpu' | 'mem' | 'disk' | 'rx' | 'tx'>[],
  pointMs: number,
): Point[] {
  const sorted = [...samples].sort((a, b) => Date.parse(a.at) - Date.parse(b.at));
  const groups = new Map<number, { cpu: number[]; mem: number[]; disk: number[]; rx: number[]; tx: number[] }>();
  sorted.forEach((s, i) => {
    const t = Date.parse(s.at);
    const key = Math.floor(t / pointMs) * pointMs;
    const g = groups.get(key) ?? { cpu: [], mem: [], disk: [], rx: [], tx: [] };
    groups.set(key, g);
    g.cpu.push(s.cpu);
    g.mem.push(s.mem);
    g.disk.push(s.disk);
    const prev = sorted[i - 1];
    const seconds = prev ? (t - Date.parse(prev.at)) / 1000 : 0;
    if (prev && seconds > 0) {
      if (s.rx >= prev.rx) g.rx.push((s.rx - prev.rx) / seconds);
      if (s.tx >= prev.tx) g.tx.push((s.tx - prev.tx) / seconds);
    }
  });
  return [...groups].map(([start, g]) => ({
    at: new Date(start).toISOString(),
    samples: g.cpu.length,
    cpuAbsolute: round2(mean(g.cpu)!),
    memoryBytes: Math.round(mean(g.mem)!),
    diskBytes: Math.round(mean(g.disk)!),
    networkRxBytesPerSecond: g.rx.length ? Math.round(mean(g.rx)!) : null,
    networkTxBytesPerSecond: g.tx.length ? Math.round(mean(g.tx)!) : null,
  }));
}

const mean = (xs: number[]): number | undefined => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : undefined);
const round2 = (x: number): number => Math.round(x * 100) / 100;
