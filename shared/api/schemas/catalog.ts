import * as z from 'zod';
import { Uuid, text, int32, Count, PanelId, SignedMb } from './common.ts';

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
