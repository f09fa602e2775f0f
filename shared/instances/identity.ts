import * as accessPatterns from '../db/access-patterns.ts';
import type { InstanceItem } from '../db/items.ts';
import { keys } from '../db/keys.ts';
import { isConditionFailed, type NamedWrite, transact, writeItem } from '../db/write.ts';
import { ApiError } from '../errors.ts';
import { logger } from '../observability/logger.ts';
import { putMetric } from '../observability/metrics.ts';
import type { PanelClient } from '../panel/client.ts';

/**
 * A panel is identified by what it is, not by how its URL is spelled: by the uuids of its nodes
 * (Application API `GET /nodes`; a node's uuid is set when it is created and never changes). Each
 * node uuid an instance claims is a `panel-node-claim` item written in the same transaction as the
 * instance, with the condition that no instance claims it yet; so a second registration of the
 * same panel, under any URL, fails on the first node the two share.
 *
 * Nodes are claimed one item each, not as one hash of the set, so a node added to the panel later
 * does not make it another panel. The reconciler claims such new nodes, and the nodes of instances
 * registered before identities existed (or while their panel did not answer), on its next run
 * (claimPanelNodes); a node it finds claimed by another instance marks this one `duplicateOf` it.
 */

/** A transaction holds at most 100 items: the instance and this many of its nodes (more is no stronger an identity). */
export const MAX_CLAIMED_NODES = 50;

/** The panel's node uuids, sorted and lower-cased, at most MAX_CLAIMED_NODES. */
export async function panelNodeUuids(client: PanelClient): Promise<string[]> {
  const uuids = (await client.listNodes()).map((n) => n.uuid?.toLowerCase()).filter((u): u is string => Boolean(u));
  return [...new Set(uuids)].sort().slice(0, MAX_CLAIMED_NODES);
}

/** The claim items of a registration, each named by its node for the transaction. */
export function nodeClaimWrites(instanceId: string, nodeUuids: string[], at: string): NamedWrite[] {
  return nodeUuids.map((nodeUuid) => ({
    name: `node:${nodeUuid}`,
    Put: {
      Item: { ...keys.panelNodeClaim(nodeUuid), kind: 'panel-node-claim', nodeUuid, instanceId, claimedAt: at },
      ConditionExpression: 'attribute_not_exists(PK) OR instanceId = :me',
      ExpressionAttributeValues: { ':me': instanceId },
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
    },
  }));
}

export const alreadyRegistered = (existingInstanceId: string): ApiError =>
  new ApiError('panel_already_registered', `This panel is already registered as instance ${existingInstanceId}`, {
    instanceId: existingInstanceId,
  });

/** The instance that holds one of the claims a transaction failed on. */
export function claimHolder(err: unknown): string | undefined {
  if (!isConditionFailed(err)) return undefined;
  for (const name of err.anyStartingWith('node:')) {
    const holder = err.current.get(name)?.instanceId;
    if (typeof holder === 'string') return holder;
  }
  return undefined;
}

/** The deletes of an instance's claims, with its own delete (only its own claims: another's stay). */
export function releaseWrites(item: InstanceItem): NamedWrite[] {
  return (item.panelNodeUuids ?? []).map((nodeUuid) => ({
    name: `node:${nodeUuid}`,
    Delete: {
      Key: keys.panelNodeClaim(nodeUuid),
      ConditionExpression: 'attribute_not_exists(PK) OR instanceId = :me',
      ExpressionAttributeValues: { ':me': item.instanceId },
    },
  }));
}

/**
 * The reconciler's backfill: claims the panel's nodes that no instance claims yet (an instance
 * registered before identities, or while its panel did not answer; a node added since). A node
 * another instance claims makes this instance a duplicate of it: logged, counted
 * (`PanelRegisteredTwice`) and shown on the instance (`duplicateOf`), never acted on otherwise.
 * Returns the other instance, if any.
 */
export async function claimPanelNodes(
  item: { instanceId: string; panelNodeUuids?: string[] | undefined; duplicateOf?: string | undefined },
  client: PanelClient,
): Promise<string | undefined> {
  const nodes = await panelNodeUuids(client);
  const mine = new Set(item.panelNodeUuids ?? []);
  let duplicateOf: string | undefined;
  const claimed: string[] = [];
  const at = new Date().toISOString();
  for (const nodeUuid of nodes) {
    if (mine.has(nodeUuid)) continue;
    try {
      await transact(nodeClaimWrites(item.instanceId, [nodeUuid], at));
      claimed.push(nodeUuid);
    } catch (err) {
      const holder = claimHolder(err);
      if (!holder) throw err;
      duplicateOf ??= holder;
    }
  }
  if (claimed.length || duplicateOf !== item.duplicateOf) {
    const all = [...new Set([...mine, ...claimed])].sort();
    const set = [...(all.length ? ['panelNodeUuids = :nodes'] : []), ...(duplicateOf ? ['duplicateOf = :dup'] : [])];
    const values = { ...(all.length ? { ':nodes': all } : {}), ...(duplicateOf ? { ':dup': duplicateOf } : {}) };
    await writeItem({
      Update: {
        Key: keys.instance(item.instanceId),
        UpdateExpression: `${set.length ? `SET ${set.join(', ')}` : ''}${duplicateOf ? '' : ' REMOVE duplicateOf'}`.trim(),
        ConditionExpression: 'attribute_exists(PK)',
        ...(Object.keys(values).length ? { ExpressionAttributeValues: values } : {}),
      },
    });
  }
  if (duplicateOf) {
    putMetric('PanelRegisteredTwice', 1, { Instance: item.instanceId });
    logger.warn('instance: its panel is also registered as another instance', { instanceId: item.instanceId, duplicateOf });
  }
  return duplicateOf;
}

/** Which instance holds one of these nodes, if any (a registration that could not read its own claims' holder). */
export async function holderOfAny(nodeUuids: string[]): Promise<string | undefined> {
  for (const nodeUuid of nodeUuids) {
    const claim = await accessPatterns.panelNodeClaim(nodeUuid);
    if (claim) return claim.instanceId;
  }
  return undefined;
}
