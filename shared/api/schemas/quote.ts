import * as z from 'zod';
import { Cents, int32, SignedCents, text, Uuid } from './common.ts';
import { ResourcesSchema } from './servers.ts';
import { Addons } from './addons.ts';

/** The dry run of a deploy (servers group): what `POST /v1/servers` with the same body would do. */
const QuoteLine = z
  .object({
    item: z.enum(['resources', 'backups', 'databases', 'ports']),
    quantity: int32(0, 100).meta({ description: 'Extras bought (1 for resources).' }),
    unitMillicentsPerHour: Cents.meta({ description: 'One extra for one hour (resources: their price).' }),
    millicentsPerHour: Cents.meta({ description: 'quantity × unit; the lines add up to `priceMillicentsPerHour`.' }),
  })
  .meta({ id: 'QuoteLine' });

const Rejected = z.object({
  instanceId: Uuid,
  nodeName: text(191),
  region: text(60).nullable(),
  reason: z.enum([
    'other_instance',
    'instance_disabled',
    'region_mismatch',
    'not_public',
    'maintenance',
    'insufficient_memory',
    'insufficient_disk',
    'insufficient_cpu',
    'no_free_allocation',
  ]),
});

export const Quote = z
  .object({
    deployable: z.boolean().meta({ description: 'The deploy would succeed now: the runway and budget pass and a node can take it.' }),
    resources: ResourcesSchema,
    addons: Addons,
    lines: z.array(QuoteLine).max(4).meta({ description: 'The hourly price itemised: the resources, then each add-on bought.' }),
    planId: Uuid.optional().meta({
      description:
        "The plan the body names: the resources line is then the plan's price with its included add-ons, and only extras are itemised.",
    }),
    priceMillicentsPerHour: Cents.meta({
      description: 'The exact hourly price the deploy would charge (as `Server.priceMillicentsPerHour`).',
    }),
    priceCentsPerHour: Cents.meta({ description: 'Rounded up to a whole cent, as the server would show it.' }),
    monthly: z.object({
      hours: int32(0, 744).meta({ description: '730, or the monthly cap when it is lower.' }),
      estimateCents: Cents.meta({ description: 'hours × the exact price, rounded up to a whole cent.' }),
      capHours: int32(1, 744).nullable().meta({ description: 'The platform monthly cap in hours, or null.' }),
    }),
    runway: z.object({
      passes: z.boolean(),
      balanceCents: SignedCents,
      requiredCents: Cents.meta({ description: '24 hours of every active server with this one, or the platform minimum when higher.' }),
      shortfallCents: Cents.meta({ description: 'What a top-up must add for the deploy to pass (0 when it passes).' }),
      hourlyMillicentsAfter: Cents.meta({ description: "The account's exact burn per hour with this server." }),
    }),
    budget: z.object({
      passes: z.boolean(),
      message: text(300).nullable().meta({ description: 'Why not, as the deploy would say it (422 `limit_exceeded`).' }),
    }),
    placement: z.object({
      instanceId: Uuid.nullable().meta({ description: 'Where placement would put it now (null when no node can take it).' }),
      region: text(60).nullable(),
      rejected: z
        .array(Rejected)
        .max(10_000)
        .meta({ description: 'When nothing fits: every candidate node and why, as `no_capacity` lists them.' }),
      unansweredInstances: z.array(Uuid).max(1_000).meta({ description: 'Panels that did not answer (their nodes were not considered).' }),
    }),
  })
  .meta({ id: 'Quote' });
