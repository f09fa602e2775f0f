import { getConfig } from '../config/env.ts';
import * as accessPatterns from '../db/access-patterns.ts';
import { asKind, type CachedAllocationAddress, type Item, type PanelTopologyItem } from '../db/items.ts';
import { keys } from '../db/keys.ts';
import { type ConditionFailedError, DEFAULT_ATTEMPTS, isConditionFailed, retrying, writeIfFirst, writeItem } from '../db/write.ts';
import { type InstanceView, panelClientFor } from '../instances/index.ts';
import { freeCapacity } from '../placement/index.ts';
import { SharedCopies } from './shared-copy.ts';
import { addressesOf, isPlaceable, type TopologyRead, toCachedLocation, toCachedNode, topologyItem, unclaimed } from './topology-item.ts';

/**
 * The shared copy of each panel's topology: locations, nodes, the free allocations of each node
 * (a number set per node), and what our own deploys took since the read. A deploy claims an
 * allocation and reserves its memory and disk on the node in one conditional write before it asks
 * the panel to create, so concurrent deploys never pick the same allocation nor overfill a node
 * (the panel checks neither memory nor disk when it is given an allocation). A failed create gives
 * the claim back; a successful one leaves it in the copy until a read shows the server on the panel.
 */

/** One page of the panel's listing: enough allocations per node for a minute of deploys. */
const ALLOCATIONS_PER_READ = 100;

export const topologies = new SharedCopies<PanelTopologyItem>({
  name: 'topology',
  key: keys.panelTopology,
  stored: (instanceId) => accessPatterns.panelTopology(instanceId),
  refresh: refreshTopology,
});

export const topologyOf = (instance: InstanceView): Promise<PanelTopologyItem> => topologies.get(instance);

async function refreshTopology(instance: InstanceView): Promise<PanelTopologyItem> {
  const client = await panelClientFor(instance);
  const readAt = Date.now();
  const { locations, nodes: panelNodes } = await client.topology();
  const nodes = panelNodes.map(toCachedNode);
  const listings = await Promise.all(
    nodes.filter(isPlaceable).map(async (node) => [node.id, await client.listFreeAllocations(node.id, ALLOCATIONS_PER_READ)] as const),
  );
  return storeRead(instance, {
    readAt,
    locations: locations.map(toCachedLocation),
    nodes,
    free: new Map(listings.map(([nodeId, listed]) => [nodeId, listed.map((a) => a.id)])),
    addresses: new Map(listings.map(([nodeId, listed]) => [nodeId, addressesOf(listed)])),
  });
}

/** Replaces the copy, carrying the claims made up to the write: the put names the version it replaces. */
function storeRead(instance: InstanceView, read: TopologyRead): Promise<PanelTopologyItem> {
  return retrying(
    async () => {
      const stored = await accessPatterns.panelTopology(instance.id, true);
      const previous = stored?.baseUrl === instance.baseUrl ? stored : undefined;
      const item = topologyItem(instance, read, previous, getConfig().panelTopologyTtlMs);
      await writeItem({
        Put: {
          Item: item,
          ...(stored
            ? { ConditionExpression: 'version = :version', ExpressionAttributeValues: { ':version': stored.version } }
            : { ConditionExpression: 'attribute_not_exists(PK)' }),
        },
      });
      return item;
    },
    { retryIf: () => true, exhausted: () => new Error('The topology copy kept changing while it was being replaced') },
  );
}

export interface AllocationClaimed {
  instanceId: string;
  nodeId: number;
  allocationId: number;
  memoryMb: number;
  diskMb: number;
  /** When the node's free set it came from was read from the panel. */
  setReadAt: number;
}

/**
 * Takes `allocationId` off the node's free set and adds the server's memory and disk to the node's
 * counters, if the copy is still the one placement ranked (same read), still has the allocation,
 * and the node still has the room. Answers the claim and the new copy, or only the current copy
 * when the race was lost.
 */
export async function claimAllocation(
  instance: InstanceView,
  topology: PanelTopologyItem,
  nodeId: number,
  allocationId: number,
  request: { ramMb: number; diskMb: number },
): Promise<{ claim?: AllocationClaimed; topology: PanelTopologyItem | undefined }> {
  const node = topology.nodes.find((n) => n.id === nodeId);
  if (!node) return { topology };
  const room = freeCapacity(node);
  try {
    const after = await writeItem({
      Update: {
        Key: keys.panelTopology(instance.id),
        UpdateExpression:
          'DELETE freeAllocations.#node :allocationSet SET claims.#allocation = :claim ADD addedMemoryMb.#node :memory, addedDiskMb.#node :disk, version :one',
        ConditionExpression:
          'readAt = :readAt AND contains(freeAllocations.#node, :allocation) AND addedMemoryMb.#node <= :memoryRoom AND addedDiskMb.#node <= :diskRoom',
        ExpressionAttributeNames: { '#node': String(nodeId), '#allocation': String(allocationId) },
        ExpressionAttributeValues: {
          ':allocationSet': new Set([allocationId]),
          ':allocation': allocationId,
          ':claim': { nodeId, memoryMb: request.ramMb, diskMb: request.diskMb, at: Date.now() },
          ':memory': request.ramMb,
          ':disk': request.diskMb,
          ':one': 1,
          ':readAt': topology.readAt,
          ':memoryRoom': room.memoryMb - request.ramMb,
          ':diskRoom': room.diskMb - request.diskMb,
        },
        ReturnValues: 'ALL_NEW',
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      },
    });
    const claim = {
      instanceId: instance.id,
      nodeId,
      allocationId,
      memoryMb: request.ramMb,
      diskMb: request.diskMb,
      setReadAt: topology.allocationsReadAt[nodeId] ?? topology.readAt,
    };
    return { claim, topology: written(instance, after) };
  } catch (err) {
    if (!isConditionFailed(err)) throw err;
    return { topology: adopt(instance, currentOf(err)) };
  }
}

/**
 * Takes `allocationId` off the node's free set for an extra port of a server already on the node
 * (shared/servers/network.ts): no memory or disk moves, and any copy that still lists it will do.
 * The claim is given back, dropped or settled like a deploy's.
 */
export async function claimPort(
  instance: InstanceView,
  topology: PanelTopologyItem,
  nodeId: number,
  allocationId: number,
): Promise<{ claim?: AllocationClaimed; topology: PanelTopologyItem | undefined }> {
  try {
    const after = await writeItem({
      Update: {
        Key: keys.panelTopology(instance.id),
        UpdateExpression: 'DELETE freeAllocations.#node :allocationSet SET claims.#allocation = :claim ADD version :one',
        ConditionExpression: 'contains(freeAllocations.#node, :allocation)',
        ExpressionAttributeNames: { '#node': String(nodeId), '#allocation': String(allocationId) },
        ExpressionAttributeValues: {
          ':allocationSet': new Set([allocationId]),
          ':allocation': allocationId,
          ':claim': { nodeId, memoryMb: 0, diskMb: 0, at: Date.now() },
          ':one': 1,
        },
        ReturnValues: 'ALL_NEW',
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      },
    });
    const setReadAt = topology.allocationsReadAt[nodeId] ?? topology.readAt;
    return {
      claim: { instanceId: instance.id, nodeId, allocationId, memoryMb: 0, diskMb: 0, setReadAt },
      topology: written(instance, after),
    };
  } catch (err) {
    if (!isConditionFailed(err)) throw err;
    return { topology: adopt(instance, currentOf(err)) };
  }
}

/**
 * A resize grew a server on a node: its copy counts the extra memory and disk at once, as a
 * deploy's claim does, so deploys placed before the next read do not overfill the node. A copy
 * that is gone or has no counters for the node is left alone (the next read sees the panel).
 */
export async function countGrowth(instanceId: string, nodeId: number, grown: { memoryMb: number; diskMb: number }): Promise<void> {
  if (grown.memoryMb <= 0 && grown.diskMb <= 0) return;
  await writeIfFirst({
    Update: {
      Key: keys.panelTopology(instanceId),
      UpdateExpression: 'ADD addedMemoryMb.#node :memory, addedDiskMb.#node :disk, version :one',
      ConditionExpression: 'attribute_exists(addedMemoryMb.#node) AND attribute_exists(addedDiskMb.#node)',
      ExpressionAttributeNames: { '#node': String(nodeId) },
      ExpressionAttributeValues: { ':memory': Math.max(0, grown.memoryMb), ':disk': Math.max(0, grown.diskMb), ':one': 1 },
    },
  });
  topologies.forget(instanceId);
}

/**
 * Undoes a claim whose create did not happen: the counters go back down and the allocation goes
 * back into the free set. Works on whichever copy now holds the claim (a refresh carries claims
 * still in flight); a claim no copy holds any more is left alone.
 */
export const releaseClaim = (instance: InstanceView, claim: AllocationClaimed): Promise<PanelTopologyItem | undefined> =>
  undoClaim(instance, claim, { add: 'freeAllocations.#node :allocationSet', values: { ':allocationSet': new Set([claim.allocationId]) } });

/**
 * The panel refused the claimed allocation (something else took it): the counters go back down and
 * the allocation stays out. The copy has been shown to lag behind the panel, so every node's set
 * read no later than the refused one is doubted: read again before use (`needsRefill`).
 */
export async function dropRefusedClaim(instance: InstanceView, claim: AllocationClaimed): Promise<PanelTopologyItem | undefined> {
  const undone = await undoClaim(instance, claim, { values: {} });
  try {
    const after = await writeItem({
      Update: {
        Key: keys.panelTopology(instance.id),
        UpdateExpression: 'SET doubtedAt = :setReadAt',
        // Never moves back: a later refusal may have doubted more already.
        ConditionExpression: 'attribute_exists(PK) AND (attribute_not_exists(doubtedAt) OR doubtedAt < :setReadAt)',
        ExpressionAttributeValues: { ':setReadAt': claim.setReadAt },
        ReturnValues: 'ALL_NEW',
      },
    });
    return written(instance, after);
  } catch (err) {
    if (!isConditionFailed(err)) throw err;
    return undone;
  }
}

async function undoClaim(
  instance: InstanceView,
  claim: AllocationClaimed,
  extra: { add?: string; values: Record<string, unknown> },
): Promise<PanelTopologyItem | undefined> {
  try {
    const after = await writeItem({
      Update: {
        Key: keys.panelTopology(instance.id),
        UpdateExpression: `REMOVE claims.#allocation ADD addedMemoryMb.#node :lessMemory, addedDiskMb.#node :lessDisk, version :one${
          extra.add ? `, ${extra.add}` : ''
        }`,
        ConditionExpression: 'attribute_exists(claims.#allocation)',
        ExpressionAttributeNames: { '#node': String(claim.nodeId), '#allocation': String(claim.allocationId) },
        ExpressionAttributeValues: { ':lessMemory': -claim.memoryMb, ':lessDisk': -claim.diskMb, ':one': 1, ...extra.values },
        ReturnValues: 'ALL_NEW',
      },
    });
    return written(instance, after);
  } catch (err) {
    if (!isConditionFailed(err)) throw err;
    topologies.forget(instance.id);
    return undefined;
  }
}

/**
 * The panel created the server: a read of the panel from now on counts it, so a refresh after this
 * no longer carries the claim (it would count a server deleted since twice over).
 */
export async function settleClaim(instance: InstanceView, claim: AllocationClaimed): Promise<void> {
  try {
    await writeItem({
      Update: {
        Key: keys.panelTopology(instance.id),
        UpdateExpression: 'SET claims.#allocation.createdAt = :now',
        ConditionExpression: 'attribute_exists(claims.#allocation)',
        ExpressionAttributeNames: { '#allocation': String(claim.allocationId) },
        ExpressionAttributeValues: { ':now': Date.now() },
      },
    });
  } catch (err) {
    if (!isConditionFailed(err)) throw err;
  }
}

const refills = new Map<string, Promise<PanelTopologyItem>>();

/**
 * Reads a node's free allocations from the panel into the copy (see `needsRefill`, candidates.ts).
 * Allocations claimed by creates in flight stay out; a node the panel lists none for is marked
 * exhausted until the next read. Concurrent refills of one node in a process share one panel call.
 */
export function refillAllocations(instance: InstanceView, topology: PanelTopologyItem, nodeId: number): Promise<PanelTopologyItem> {
  const id = `${instance.id}:${nodeId}`;
  const running = refills.get(id);
  if (running) return running;
  const refill = readAndStoreFree(instance, topology, nodeId).finally(() => refills.delete(id));
  refills.set(id, refill);
  return refill;
}

async function readAndStoreFree(instance: InstanceView, topology: PanelTopologyItem, nodeId: number): Promise<PanelTopologyItem> {
  const readAt = Date.now();
  const listing = await (await panelClientFor(instance)).listFreeAllocations(nodeId, ALLOCATIONS_PER_READ);
  const listed = listing.map((a) => a.id);
  const addresses = addressesOf(listing);
  let current = topology;
  return retrying(
    async (attempt) => {
      try {
        return written(instance, await writeItem(freeSetWrite(current, nodeId, unclaimed(listed, current.claims), addresses, readAt)));
      } catch (err) {
        if (!isConditionFailed(err)) throw err;
        current = adopt(instance, currentOf(err)) ?? current;
        // Claims kept moving the copy: leave the node as it is, the deploy claims on or gives up.
        if (attempt === DEFAULT_ATTEMPTS - 1) return current;
        throw err;
      }
    },
    { retryIf: () => true, exhausted: () => new Error('The topology copy kept changing while a node was refilled') },
  );
}

/** The write that replaces a node's free set, under the version it was computed from (so no claim is undone). */
function freeSetWrite(
  topology: PanelTopologyItem,
  nodeId: number,
  free: number[],
  addresses: Record<string, CachedAllocationAddress>,
  readAt: number,
) {
  // The addresses go with the set; a copy read before they were kept has no map to set a node in yet.
  const mapped = topology.allocationAddresses !== undefined;
  const setAddresses = `allocationAddresses${mapped ? '.#node' : ''} = :addresses`;
  const replaceSet =
    free.length > 0
      ? {
          expression: `SET freeAllocations.#node = :free, allocationsReadAt.#node = :readAt, ${setAddresses} ADD version :one`,
          values: { ':free': new Set(free) },
        }
      : {
          // DynamoDB stores no empty set: none left means no entry, and the node is marked exhausted.
          expression: `SET allocationsReadAt.#node = :readAt, ${setAddresses} REMOVE freeAllocations.#node ADD exhaustedNodes :nodeSet, version :one`,
          values: { ':nodeSet': new Set([nodeId]) },
        };
  return {
    Update: {
      Key: keys.panelTopology(topology.instanceId),
      UpdateExpression: replaceSet.expression,
      ConditionExpression: 'version = :version',
      ExpressionAttributeNames: { '#node': String(nodeId) },
      ExpressionAttributeValues: {
        ...replaceSet.values,
        ':addresses': mapped ? addresses : { [nodeId]: addresses },
        ':readAt': readAt,
        ':one': 1,
        ':version': topology.version,
      },
      ReturnValues: 'ALL_NEW' as const,
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD' as const,
    },
  };
}

const currentOf = (err: ConditionFailedError): Item | undefined => err.current.get('item');

/** Reads a written or current item as the copy it is, and keeps it for this process's next reads. */
function adopt(instance: InstanceView, item: Item | undefined): PanelTopologyItem | undefined {
  if (!item) {
    topologies.forget(instance.id);
    return undefined;
  }
  const topology = asKind(item, 'panel-topology');
  topologies.remember(instance, topology);
  return topology;
}

/** The copy a write answered with (ReturnValues ALL_NEW always carries it). */
function written(instance: InstanceView, item: Item | undefined): PanelTopologyItem {
  const topology = adopt(instance, item);
  if (!topology) throw new Error('The topology write returned no item');
  return topology;
}
