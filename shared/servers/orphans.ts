import type { z } from 'zod';
import type { HeldOrphan } from '../api/schemas/orphans.ts';
import * as accessPatterns from '../db/access-patterns.ts';
import type { HeldOrphanItem } from '../db/items.ts';
import { keys } from '../db/keys.ts';
import { writeIfFirst, writeItem } from '../db/write.ts';
import { ApiError, notFound } from '../errors.ts';
import { panelClientFor, toInstanceView } from '../instances/index.ts';
import { logger } from '../observability/logger.ts';
import { putMetric } from '../observability/metrics.ts';
import type { PanelClient } from '../panel/client.ts';
import { PanelRequestError } from '../panel/errors.ts';
import type { PanelServer } from '../panel/types.ts';
import { withServerLease } from './lease.ts';

/**
 * Orphans: panel servers whose external id is a server id of ours that no live record, on any
 * instance, holds (reconcile.ts finds them). With the setting `holdOrphansForConfirmation` (on
 * by default) the reconciler holds them here and an admin confirms each removal; off, it removes
 * them itself. Either way a removal is logged and counted (`ReconcilerRepairs`, Kind `orphan`).
 */

/** The reconciler holds an orphan (once: a hold already there keeps its first date). */
export async function holdOrphan(instanceId: string, panel: PanelServer, now: number): Promise<boolean> {
  const item: HeldOrphanItem = {
    ...keys.heldOrphan(instanceId, panel.id),
    kind: 'held-orphan',
    instanceId,
    panelServerId: panel.id,
    serverId: panel.external_id!,
    name: panel.name,
    panelCreatedAt: panel.created_at,
    heldAt: new Date(now).toISOString(),
  };
  return writeIfFirst({ Put: { Item: item, ConditionExpression: 'attribute_not_exists(PK)' } });
}

/** Holds of this instance that are orphans no more (gone from the panel, or claimed by a record since): dropped. */
export async function dropStaleHolds(instanceId: string, stillOrphans: ReadonlySet<number>): Promise<void> {
  for (const held of await accessPatterns.heldOrphans()) {
    if (held.instanceId === instanceId && !stillOrphans.has(held.panelServerId)) await dropHold(held);
  }
}

const dropHold = (held: HeldOrphanItem) => writeItem({ Delete: { Key: keys.heldOrphan(held.instanceId, held.panelServerId) } });

/** Removes an orphan from its panel (forced, as an unbilled server with no record may be in any state), logged and counted. */
export async function removeOrphan(
  client: PanelClient,
  instanceId: string,
  panel: Pick<PanelServer, 'id' | 'external_id'>,
  by: string,
): Promise<void> {
  await client.deleteServer(panel.id, true);
  putMetric('ReconcilerRepairs', 1, { Kind: 'orphan' });
  logger.warn('reconcile: removed a panel server without a live record', {
    instanceId,
    panelServerId: panel.id,
    serverId: panel.external_id,
    by,
  });
}

export async function listHeldOrphans(): Promise<z.infer<typeof HeldOrphan>[]> {
  const held = await accessPatterns.heldOrphans();
  return held
    .sort((a, b) => a.heldAt.localeCompare(b.heldAt))
    .map((h) => ({
      id: h.serverId,
      instanceId: h.instanceId,
      panelServerId: h.panelServerId,
      name: h.name,
      panelCreatedAt: h.panelCreatedAt,
      heldAt: h.heldAt,
    }));
}

/**
 * An admin confirms the removal of a held orphan (by its external id, our server id; one per
 * instance that holds it). Checked again first: a live record that holds the id now (on any
 * instance) makes it no orphan (409, hold dropped); a panel server gone or no longer carrying the
 * id is not touched. Under the server id's lease, like the reconciler's own repairs.
 */
export async function confirmOrphan(serverId: string, actor: string): Promise<{ id: string; removed: boolean }> {
  const holds = (await accessPatterns.heldOrphans()).filter((h) => h.serverId === serverId);
  if (!holds.length) throw notFound('Held orphan');
  return withServerLease(serverId, 'reconcile', async () => {
    const record = await accessPatterns.serverById(serverId);
    if (record && record.status !== 'deleted') {
      for (const held of holds) await dropHold(held);
      throw new ApiError(
        'conflict',
        `A record holds this server now (instance ${record.instanceId}): it is no orphan; the hold was dropped`,
      );
    }
    let removed = false;
    for (const held of holds) {
      const instance = await accessPatterns.instanceById(held.instanceId);
      if (instance) {
        const client = await panelClientFor(toInstanceView(instance));
        const panel = await client.getServer(held.panelServerId).catch((err: unknown) => {
          if (err instanceof PanelRequestError && err.panelStatus === 404) return undefined;
          throw err;
        });
        if (panel?.external_id === serverId) {
          await removeOrphan(client, held.instanceId, panel, `admin:${actor}`);
          removed = true;
        }
      }
      await dropHold(held);
    }
    return { id: serverId, removed };
  });
}
