import * as z from 'zod';
import { PanelId, SafeText, Uuid, int32, text } from './common.ts';

/** A server's network allocations (ports) on its panel (shared/servers/network.ts). */

export const AllocationParams = z
  .object({
    id: Uuid,
    allocationId: z.coerce
      .number()
      .int()
      .min(1)
      .max(2 ** 31)
      .meta({ format: 'int64' }),
  })
  .strict();

export const ServerAllocation = z
  .object({
    id: PanelId.meta({ description: "The panel's allocation id." }),
    host: text(255).meta({ description: 'What players type: the alias, else the node FQDN, else the ip.' }),
    ip: text(255),
    alias: text(255).nullable(),
    port: int32(1, 65_535),
    notes: text(255).nullable(),
    primary: z.boolean().meta({ description: 'The address the server is reached at (`address` on the server).' }),
  })
  .meta({ id: 'ServerAllocation' });

export const AllocationList = z
  .object({
    data: z.array(ServerAllocation).max(100).meta({ description: 'Primary first, then by port.' }),
    limit: int32(0, 2_147_483_647).meta({
      description: "How many allocations the server may hold, the primary included (the panel's `feature_limits.allocations`).",
    }),
  })
  .meta({ id: 'AllocationList' });

export const CreateAllocation = z.object({}).strict().meta({ id: 'CreateAllocation' });

export const UpdateAllocation = z
  .object({
    notes: SafeText.max(255).nullable().optional().meta({ description: 'A note for the port (null or "" clears it).' }),
    primary: z
      .literal(true)
      .optional()
      .meta({ description: 'Make this the primary allocation (there is no un-making: make another one primary).' }),
  })
  .strict()
  .refine((b) => b.notes !== undefined || b.primary !== undefined, { message: 'Give notes or primary' })
  .meta({ id: 'UpdateAllocation' });

export const DeletedAllocation = z.object({ id: PanelId, deleted: z.literal(true) }).meta({ id: 'DeletedAllocation' });
