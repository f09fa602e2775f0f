import type { PanelTopologyItem, ServerAddress } from '../db/items.ts';
import type { InstanceView } from '../instances/index.ts';
import type { NodeCandidate } from '../placement/index.ts';

/**
 * Placement's view of one panel, from the shared copy of its topology (pure). A node's allocated
 * memory and disk are the panel's figures at the read plus what our own deploys placed on it
 * since (the copy's counters), so capacity stays honest between reads: the panel itself does not
 * check memory or disk when it is given an explicit allocation.
 */
export function candidatesOf(instance: Pick<InstanceView, 'id' | 'priority' | 'enabled'>, topology: PanelTopologyItem): NodeCandidate[] {
  const regionOf = new Map(topology.locations.map((l) => [l.id, l.short]));
  return topology.nodes.map((node) => ({
    instanceId: instance.id,
    instancePriority: instance.priority,
    instanceEnabled: instance.enabled,
    nodeId: node.id,
    nodeName: node.name,
    region: regionOf.get(node.locationId) ?? null,
    public: node.public,
    maintenance: node.maintenance,
    memory: node.memory,
    memoryOverallocate: node.memoryOverallocate,
    allocatedMemory: node.allocatedMemory + (topology.addedMemoryMb[node.id] ?? 0),
    disk: node.disk,
    diskOverallocate: node.diskOverallocate,
    allocatedDisk: node.allocatedDisk + (topology.addedDiskMb[node.id] ?? 0),
    freeAllocations: freeAllocationCount(topology, node.id),
    // CPU (Pelican): the panel's figures at the read; our placements since are not added for it.
    ...(node.cpu === undefined ? {} : { cpu: node.cpu, cpuOverallocate: node.cpuOverallocate, allocatedCpu: node.allocatedCpu }),
  }));
}

/**
 * Where players reach a server on this allocation, from the copy the allocation was taken from
 * (no panel call): `host` is the allocation's alias, else the node's FQDN, else the IP. Undefined
 * when the copy was read before it kept addresses.
 */
export function addressOf(topology: PanelTopologyItem, nodeId: number, allocationId: number): ServerAddress | undefined {
  const allocation = topology.allocationAddresses?.[nodeId]?.[allocationId];
  if (!allocation) return undefined;
  const fqdn = topology.nodes.find((n) => n.id === nodeId)?.fqdn;
  return { host: allocation.alias ?? fqdn ?? allocation.ip, ip: allocation.ip, alias: allocation.alias, port: allocation.port };
}

export const freeAllocationsOf = (topology: PanelTopologyItem, nodeId: number): number[] => [...(topology.freeAllocations[nodeId] ?? [])];

/**
 * How many allocations the copy can hand out on a node; undefined when it has none left but the
 * panel may have more (placement may pick the node, and the deploy asks the panel), 0 when the
 * panel itself listed none.
 */
export function freeAllocationCount(topology: PanelTopologyItem, nodeId: number): number | undefined {
  const free = topology.freeAllocations[nodeId]?.size ?? 0;
  if (free > 0) return free;
  return topology.exhaustedNodes?.has(nodeId) ? 0 : undefined;
}

/**
 * Whether a node's free set must be read from the panel before one is taken: it has none left
 * (and the panel may have more), or the panel refused an allocation from a set read no earlier
 * than this one, so this one may hold allocations that are gone too.
 */
export function needsRefill(topology: PanelTopologyItem, nodeId: number): boolean {
  if (freeAllocationsOf(topology, nodeId).length === 0) return true;
  return topology.doubtedAt !== undefined && topology.doubtedAt >= (topology.allocationsReadAt[nodeId] ?? 0);
}
