import * as z from 'zod';
import { int32 } from './common.ts';

/** Add-ons (servers group): extra backup slots, databases and ports bought beyond what every server includes. */

const extra = (what: string) =>
  int32(0, 100).meta({ description: `Extra ${what} beyond what every server includes; at most the platform's maximum (settings.addons).` });

export const Addons = z
  .object({
    backups: extra('backup slots'),
    databases: extra('databases'),
    ports: extra('ports (allocations)'),
  })
  .strict()
  .meta({
    id: 'Addons',
    description:
      "Extras bought for a server, each priced per hour (settings.addons) and added to its hourly price. The panel's feature limits are what the settings include plus these.",
  });

/** PUT /v1/servers/{id}/addons: the extras the server should have from now on (all three). */
export const AddonsUpdate = Addons.meta({ id: 'AddonsUpdate' });

/** What a server may hold on the panel after an add-on change: included plus extras. */
export const FeatureLimits = z
  .object({ databases: int32(0, 200), allocations: int32(0, 200), backups: int32(0, 200) })
  .meta({ id: 'FeatureLimits', description: "The panel's feature limits of the server: what the settings include plus the add-ons." });
