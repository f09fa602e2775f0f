import * as z from 'zod';
import { int32, int64, PanelId, SafeText, text, Timestamp, Uuid } from './common.ts';
import { Addons } from './addons.ts';

/** Plans (admin CRUD, catalog read) and the storefront's looks of regions (shared/plans). */

/** A picture customers' browsers load: https only, no credentials. */
const PictureUrl = z
  .string()
  .max(2000)
  .refine((v) => {
    try {
      const u = new URL(v);
      return u.protocol === 'https:' && !u.username && !u.password;
    } catch {
      return false;
    }
  }, 'must be an https URL without credentials')
  .meta({ format: 'uri' });

const Millicents = int64(1, 1_000_000_000);

export const PlanResources = z
  .object({
    ramMb: int32(256, 1_048_576),
    cpuPercent: int32(25, 10_000),
    diskMb: int32(512, 10_485_760),
  })
  .strict()
  .meta({ id: 'PlanResources', description: "The server's resources: a deploy with this plan must send exactly these." });

const planFields = {
  name: SafeText.trim().min(1).max(100),
  description: SafeText.max(1000),
  pictureUrl: PictureUrl.nullable().meta({ description: 'A picture for the storefront card (https), or null.' }),
  category: SafeText.trim().min(1).max(60).meta({ description: 'The storefront groups plans by it.', example: 'Minecraft' }),
  resources: PlanResources,
  addons: Addons.meta({ description: 'Add-ons the plan includes: a deploy with this plan must buy at least these.' }),
  eggIds: z.array(PanelId).max(100).meta({ description: 'The eggs a deploy with this plan may use (panel egg ids); empty: any egg.' }),
  setPriceMillicentsPerHour: Millicents.nullable().meta({
    description:
      "A price set for the plan, in 1/1000 cent an hour, charged whatever the resources cost; null: the price derived from the resources and add-ons at the settings' prices.",
  }),
  visible: z.boolean().meta({ description: 'Hidden plans are neither listed to customers nor deployable.' }),
};

export const CreatePlan = z.object(planFields).strict().meta({ id: 'CreatePlan' });

export const UpdatePlan = z
  .object(planFields)
  .partial()
  .strict()
  .refine((v) => Object.keys(v).length > 0, { message: 'Give at least one field to change' })
  .meta({ id: 'UpdatePlan', description: 'Any subset of the plan; omitted fields keep their value.' });

export const Plan = z
  .object({
    id: Uuid,
    ...planFields,
    name: text(100),
    description: text(1000),
    category: text(60),
    priceMillicentsPerHour: Millicents.meta({
      description: 'What a server on this plan is charged an hour now (the set price, or the derived one).',
    }),
    priceCentsPerHour: int64(1, 1_000_000).meta({ description: 'The same rounded up to a whole cent, for display.' }),
    monthlyEstimateCents: int64(1, 1_000_000_000).meta({ description: 'A 730-hour month at that price, rounded up to a whole cent.' }),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  })
  .meta({ id: 'Plan' });

export const PlanList = z
  .object({
    data: z.array(Plan).max(1000),
    customSizesAllowed: z
      .boolean()
      .meta({ description: 'Whether a deploy may give other resources than a plan (setting `customSizesAllowed`).' }),
  })
  .meta({ id: 'PlanList' });

export const DeletedPlan = z.object({ id: Uuid, deleted: z.literal(true) }).meta({ id: 'DeletedPlan' });

/** As GET /v1/eggs/{instanceId}/{eggId} (schemas/catalog.ts), kept here so the admin function does not load the catalog's schemas. */
export const EggLookParams = z.object({
  instanceId: Uuid,
  // Digits only (a write: ` 1` is not egg 1), as the list query's limit is read.
  eggId: z
    .string()
    .regex(/^[1-9]\d{0,9}$/, 'must be an egg id (digits)')
    .transform(Number)
    .pipe(
      z
        .number()
        .int()
        .max(2 ** 31),
    )
    .meta({ type: 'integer', format: 'int64', minimum: 1, maximum: 2 ** 31 }),
});

export const RegionParam = z.object({ region: z.string().trim().min(1).max(60) });

/** How the storefront names a region (panel location `short`): admin-set, shown beside the tag. */
export const RegionLook = z
  .object({
    displayName: SafeText.trim().min(1).max(100).nullable(),
    city: SafeText.trim().min(1).max(100).nullable(),
    country: z
      .string()
      .max(2)
      .regex(/^[A-Z]{2}$/, 'must be an ISO 3166-1 alpha-2 code')
      .nullable()
      .meta({ description: 'ISO 3166-1 alpha-2 country code.', example: 'DE' }),
  })
  .strict()
  .meta({ id: 'RegionLook' });

export const RegionLookResult = RegionLook.extend({ region: text(60) }).meta({ id: 'RegionLookResult' });

export const EggLook = z
  .object({
    pictureUrl: PictureUrl.nullable(),
    category: SafeText.trim().min(1).max(60).nullable().meta({ description: "null: the egg's nest name." }),
  })
  .strict()
  .meta({ id: 'EggLook' });

export const EggLookResult = z
  .object({ instanceId: Uuid, eggId: PanelId, pictureUrl: text(2000).nullable(), category: text(60).nullable() })
  .meta({ id: 'EggLookResult' });
