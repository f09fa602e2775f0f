import * as z from 'zod';
import { Uuid, text, int32, int64, Count, Currency, INT32_MAX, PanelId, SignedMb } from './common.ts';

/** The catalog (catalog group): deployable instances, regions, eggs. */

export const PublicInstance = z
  .object({
    id: Uuid,
    name: text(100),
    priority: int32(0, 10_000),
    controlAvailable: z.boolean().meta({
      description:
        "Power, console and files are expected to work: the instance has a client key and the operator's last test of it succeeded (false until then).",
    }),
  })
  .meta({ id: 'PublicInstance' });

export const PublicInstanceList = z.object({ data: z.array(PublicInstance) }).meta({ id: 'PublicInstanceList' });

export const Region = z
  .object({
    region: text(60).meta({ description: 'Region tag: the panel location `short` code.', example: 'eu-central' }),
    name: text(65_535).nullable().meta({ description: 'The location description.' }),
    displayName: text(65_535).meta({
      description: "What to show: the admin's name for the region, else the location description, else the tag.",
    }),
    city: text(100).nullable().meta({ description: 'Set by an admin (PUT /v1/admin/regions/{region}); null: not set.' }),
    country: text(2).nullable().meta({ description: 'ISO 3166-1 alpha-2, set by an admin; null: not set.' }),
    instances: z.array(Uuid),
    nodes: Count.meta({ description: 'Nodes that can take servers (not in maintenance, instance enabled).' }),
    freeMemoryMb: SignedMb.meta({
      description: 'Sum over those nodes of capacity × (1 + overallocate %) − allocated (negative when overallocated).',
    }),
    freeDiskMb: SignedMb,
    largestFreeMemoryMb: SignedMb.meta({ description: 'Biggest server (RAM) one node can still take.' }),
  })
  .meta({ id: 'Region' });

export const RegionList = z
  .object({
    data: z.array(Region),
    unavailableInstances: z.array(Uuid).meta({ description: 'Enabled instances whose panel did not answer.' }),
  })
  .meta({ id: 'RegionList' });

export const EggSummary = z
  .object({
    instanceId: Uuid,
    instanceName: text(100),
    eggId: PanelId,
    name: text(191),
    description: text(65_535).nullable(),
    nestId: PanelId,
    nestName: text(191),
    dockerImages: z.record(text(191), text(1024)),
    pictureUrl: text(2000)
      .nullable()
      .meta({ description: 'A picture set by an admin (PUT /v1/admin/eggs/{instanceId}/{eggId}); null: none.' }),
    category: text(191).meta({ description: "The storefront's grouping: set by an admin, else the nest's name." }),
  })
  .meta({ id: 'EggSummary' });

export const EggList = z.object({ data: z.array(EggSummary), unavailableInstances: z.array(Uuid) }).meta({ id: 'EggList' });

export const EggVariable = z
  .object({
    env: text(191).meta({ example: 'SERVER_JARFILE' }),
    name: text(191),
    description: text(65_535),
    default: text(65_535)
      .nullable()
      .meta({ description: 'Used when a deploy omits the variable. Hidden (null) for variables the panel marks not viewable.' }),
    editable: z.boolean().meta({ description: 'Only editable variables may be set at deploy.' }),
    rules: text(65_535).meta({ description: 'Laravel validation rules the value must pass.', example: 'required|string|max:20' }),
  })
  .meta({ id: 'EggVariable' });

export const EggDetail = EggSummary.extend({
  startup: text(65_535),
  defaultDockerImage: text(1024),
  variables: z.array(EggVariable),
}).meta({ id: 'EggDetail' });

export const EggParams = z.object({
  instanceId: Uuid,
  eggId: z.coerce
    .number()
    .int()
    .min(1)
    .max(2 ** 31)
    .meta({ format: 'int64' }),
});

const Millicents = int64(0, Number.MAX_SAFE_INTEGER);

const ResourcePrice = z
  .object({
    resource: z.enum(['ram', 'cpu', 'disk']),
    unit: z.enum(['GiB', 'core']).meta({ description: 'GiB = 1024 MB (ramMb, diskMb); core = cpuPercent 100.' }),
    millicentsPerUnitHour: Millicents.meta({ description: 'The exact price of one unit for one hour, in 1/1000 cent.' }),
    millicentsPerUnitMonth: Millicents.meta({ description: 'The same for a 730-hour month (× 730).' }),
  })
  .meta({ id: 'ResourcePrice' });

const AddonPrice = z
  .object({
    addon: z
      .enum(['backups', 'databases', 'ports'])
      .meta({ description: 'The `addons` field of a deploy or PUT /v1/servers/{id}/addons.' }),
    included: int32(0, 100).meta({ description: 'How many every server has without buying any.' }),
    max: int32(0, 100).meta({ description: 'The most extras one server may buy (0: not sold).' }),
    millicentsPerUnitHour: Millicents.meta({ description: 'The exact price of one extra for one hour, in 1/1000 cent.' }),
    millicentsPerUnitMonth: Millicents.meta({ description: 'The same for a 730-hour month (× 730).' }),
  })
  .meta({ id: 'AddonPrice' });

const Range = (min: number, max: number) => z.object({ min: int32(min, max), max: int32(min, max) });

export const PricingRegion = z
  .object({
    region: text(60),
    name: text(65_535).nullable(),
    available: z.boolean().meta({ description: 'At least one node there can take the smallest server now (from the cached topology).' }),
  })
  .meta({ id: 'PricingRegion' });

export const Pricing = z
  .object({
    currency: Currency,
    hoursPerMonth: z.literal(730),
    resources: z.array(ResourcePrice).max(3),
    addons: z.array(AddonPrice).max(3).meta({
      description: "Extras a server may buy beyond what it includes, each added to the server's hourly price (no rounding of its own).",
    }),
    formula: text(500).meta({
      description: "How a server's hourly price follows from its resources; the exact price is rounded down once, to a whole millicent.",
    }),
    smallestServer: z
      .object({
        ramMb: int32(0, INT32_MAX),
        cpuPercent: int32(0, INT32_MAX),
        diskMb: int32(0, INT32_MAX),
        priceMillicentsPerHour: Millicents,
        priceCentsPerHour: Millicents.meta({ description: 'The exact hourly price rounded up to a whole cent, as a server shows it.' }),
        monthlyCents: Millicents.meta({
          description: '730 hours at the exact price, rounded up to a whole cent (before any monthly cap).',
        }),
      })
      .meta({ description: 'The smallest deployable server and what it costs.' }),
    serverLimits: z.object({
      ramMb: Range(0, INT32_MAX),
      cpuPercent: Range(0, INT32_MAX),
      diskMb: Range(0, INT32_MAX),
      maxServersPerAccount: int32(0, 10_000),
    }),
    monthlyCapHours: int32(1, 744)
      .nullable()
      .meta({ description: 'A server never pays more than this many hours of its price in a calendar month (UTC); null: no cap.' }),
    runwayHours: int32(0, 10_000).meta({
      description: "A deploy or upsize needs this many hours of every active server's price in credit.",
    }),
    minimumBalanceCents: int32(0, INT32_MAX),
    trialCreditCents: int32(0, INT32_MAX).meta({ description: 'Granted once to every new account.' }),
    topUp: z.object({ minimumCents: int32(0, INT32_MAX), maximumCents: int32(0, INT32_MAX), bonusPercent: int32(0, 100) }),
    regions: z.array(PricingRegion).max(1000),
  })
  .meta({ id: 'Pricing' });
