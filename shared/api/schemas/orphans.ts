import * as z from 'zod';
import { PanelId, text, Timestamp, Uuid } from './common.ts';

/** Panel servers the reconciler holds for an admin to confirm their removal (shared/servers/orphans.ts). */

export const HeldOrphan = z
  .object({
    id: text(36).meta({ description: "The panel server's external id: a server id of ours that no live record holds." }),
    instanceId: Uuid.meta({ description: 'The instance whose panel has the server.' }),
    panelServerId: PanelId.meta({ description: "The server's id on that panel." }),
    name: text(191).meta({ description: "The server's name on the panel." }),
    panelCreatedAt: text(40).meta({ description: 'When the panel created it.' }),
    heldAt: Timestamp.meta({ description: 'When the reconciler first held it.' }),
  })
  .meta({
    id: 'HeldOrphan',
    description:
      'A panel server whose external id is ours but that no live record on any instance holds, kept on the panel until an admin confirms its removal.',
  });

export const HeldOrphanList = z.object({ data: z.array(HeldOrphan).max(10_000) }).meta({ id: 'HeldOrphanList' });

export const ConfirmedOrphan = z
  .object({
    id: Uuid,
    removed: z
      .boolean()
      .meta({ description: 'Deleted from the panel now; false: the panel no longer had it (the hold is dropped either way).' }),
  })
  .meta({ id: 'ConfirmedOrphan' });
