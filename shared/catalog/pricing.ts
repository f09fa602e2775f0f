import type { z } from 'zod';
import type { Pricing, PricingRegion } from '../api/schemas/catalog.ts';
import { listInstances } from '../instances/index.ts';
import { errorFields, logger } from '../observability/logger.ts';
import { rejectionOf } from '../placement/index.ts';
import { centsUp, hourlyPriceMillicents, RUNWAY_HOURS } from '../pricing/index.ts';
import { getSettings } from '../settings/index.ts';
import { candidatesOf } from './candidates.ts';
import { topologyOf } from './topology.ts';

/** The month a monthly figure means: 730 hours (8,760 / 12), as cloud price lists count it. */
export const HOURS_PER_MONTH = 730;

/** The smallest server the API deploys (the schema's lower bounds of CreateServer). */
export const SMALLEST_SERVER = { ramMb: 256, cpuPercent: 25, diskMb: 512 } as const;

/**
 * The public price list (GET /v1/pricing): the platform settings and, per region, whether a node
 * there can take the smallest server now. Regions come from the shared topology copies deploys
 * place from, so a request costs no panel call (a copy older than its TTL is refreshed once for
 * everyone); a panel that does not answer leaves its regions out rather than failing the list.
 * The answer is the same for every caller, so caches may keep it (the route's `cacheSeconds`).
 */
export async function publicPricing(): Promise<z.infer<typeof Pricing>> {
  const settings = await getSettings();
  const { prices, serverCaps } = settings;
  const perUnit = (resource: 'ram' | 'cpu' | 'disk', unit: 'GiB' | 'core', millicents: number) => ({
    resource,
    unit,
    millicentsPerUnitHour: millicents,
    millicentsPerUnitMonth: millicents * HOURS_PER_MONTH,
  });
  const perAddon = (addon: 'backups' | 'databases' | 'ports', included: number, max: number, millicents: number) => ({
    addon,
    included,
    max,
    millicentsPerUnitHour: millicents,
    millicentsPerUnitMonth: millicents * HOURS_PER_MONTH,
  });
  const smallest = hourlyPriceMillicents(SMALLEST_SERVER, prices);
  return {
    currency: settings.currency,
    hoursPerMonth: HOURS_PER_MONTH,
    resources: [
      perUnit('ram', 'GiB', prices.ramMillicentsPerGbHour),
      perUnit('cpu', 'core', prices.cpuMillicentsPerCoreHour),
      perUnit('disk', 'GiB', prices.diskMillicentsPerGbHour),
    ],
    addons: [
      perAddon('backups', settings.backupsPerServer, settings.addons.maxBackups, settings.addons.backupMillicentsPerHour),
      perAddon('databases', settings.databasesPerServer, settings.addons.maxDatabases, settings.addons.databaseMillicentsPerHour),
      perAddon('ports', settings.portsPerServer, settings.addons.maxPorts, settings.addons.portMillicentsPerHour),
    ],
    formula:
      'millicents per hour = max(1, floor((ramMb × ram + cpuPercent × cpu × 1024 / 100 + diskMb × disk) / 1024) + extra backups × backup + extra databases × database + extra ports × port); shown as whole cents rounded up',
    smallestServer: {
      ...SMALLEST_SERVER,
      priceMillicentsPerHour: smallest,
      priceCentsPerHour: Math.max(1, centsUp(smallest)),
      monthlyCents: centsUp(smallest * HOURS_PER_MONTH),
    },
    serverLimits: {
      ramMb: { min: SMALLEST_SERVER.ramMb, max: serverCaps.maxRamMb },
      cpuPercent: { min: SMALLEST_SERVER.cpuPercent, max: serverCaps.maxCpuPercent },
      diskMb: { min: SMALLEST_SERVER.diskMb, max: serverCaps.maxDiskMb },
      maxServersPerAccount: settings.maxServersPerAccount,
    },
    monthlyCapHours: settings.monthlyCapHours,
    runwayHours: RUNWAY_HOURS,
    minimumBalanceCents: settings.minimumBalanceCents,
    trialCreditCents: settings.trialCreditCents,
    topUp: { minimumCents: settings.minimumTopUpCents, maximumCents: settings.maximumTopUpCents, bonusPercent: settings.topUpBonusPercent },
    regions: await regionAvailability(),
  };
}

async function regionAvailability(): Promise<z.infer<typeof PricingRegion>[]> {
  const instances = (await listInstances()).filter((i) => i.enabled);
  const regions = new Map<string, z.infer<typeof PricingRegion>>();
  await Promise.all(
    instances.map(async (instance) => {
      try {
        const topology = await topologyOf(instance);
        const names = new Map(topology.locations.map((l) => [l.short, l.long]));
        for (const node of candidatesOf(instance, topology)) {
          if (node.region === null || !node.public) continue;
          const fits = rejectionOf(node, { ...SMALLEST_SERVER, region: node.region }) === undefined;
          const seen = regions.get(node.region);
          regions.set(node.region, {
            region: node.region,
            name: seen?.name ?? names.get(node.region) ?? null,
            available: fits || !!seen?.available,
          });
        }
      } catch (err) {
        logger.warn('pricing: panel unavailable', { instanceId: instance.id, ...errorFields(err) });
      }
    }),
  );
  return [...regions.values()].sort((a, b) => a.region.localeCompare(b.region));
}
