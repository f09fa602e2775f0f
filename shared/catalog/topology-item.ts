import type { AllocationClaim, CachedAllocationAddress, CachedLocation, CachedNode, PanelTopologyItem } from '../db/items.ts';
import { keys } from '../db/keys.ts';
import type { PanelAllocation, PanelLocation, PanelNode } from '../panel/types.ts';

/**
 * The shared copy of one panel's topology as a pure function of a panel read and the copy it
 * replaces (shared/catalog/topology.ts stores it). Kept pure so the bookkeeping of claims across
 * a refresh is table-testable.
 */
export interface TopologyRead {
  /** Epoch ms when the panel reads began. */
  readAt: number;
  locations: CachedLocation[];
  nodes: CachedNode[];
  /** Free allocation ids the panel listed, by node id; only nodes placement may use were asked. */
  free: Map<number, number[]>;
  /** Where the listed allocations are reached, by node id then allocation id (from the same listings as `free`). */
  addresses: Map<number, Record<string, CachedAllocationAddress>>;
}

/**
 * A claim older than this has settled one way or the other: the create timed out (20 s) and the
 * lookups by external id (a few seconds) ended. Dropping it undoes a claim whose deploy died.
 */
export const CLAIM_SETTLED_MS = 120_000;

/** Long after it is stale: a copy outlives a panel outage of a day (readers keep using it), then the table forgets it. */
const COPY_KEPT_S = 24 * 3600;

export const toCachedLocation = (l: PanelLocation): CachedLocation => ({ id: l.id, short: l.short, long: l.long });

export const toCachedNode = (n: PanelNode): CachedNode => ({
  id: n.id,
  name: n.name,
  locationId: n.location_id,
  fqdn: n.fqdn,
  ...(n.daemon_sftp ? { sftpPort: n.daemon_sftp } : {}),
  public: n.public !== false,
  maintenance: n.maintenance_mode,
  memory: n.memory,
  memoryOverallocate: n.memory_overallocate,
  disk: n.disk,
  diskOverallocate: n.disk_overallocate,
  allocatedMemory: n.allocated_resources.memory,
  allocatedDisk: n.allocated_resources.disk,
  ...(n.cpu === undefined ? {} : { cpu: n.cpu, cpuOverallocate: n.cpu_overallocate ?? 0, allocatedCpu: n.allocated_resources.cpu ?? 0 }),
});

/** The addresses of a node's listed allocations, by allocation id: what a deploy records as the server's address. */
export const addressesOf = (listed: PanelAllocation[]): Record<string, CachedAllocationAddress> =>
  Object.fromEntries(listed.map((a) => [String(a.id), { ip: a.ip, alias: a.alias || null, port: a.port }]));

/** Nodes placement may put a server on: the only ones whose allocations are worth a panel call. */
export const isPlaceable = (node: CachedNode): boolean => node.public && !node.maintenance;

/**
 * Claims whose create was still in flight when the panel was read: the panel listed their
 * allocation as free and did not count their memory yet, so the new copy keeps them out and
 * counted. A claim created before the read whose allocation is listed free again belonged to a
 * server deleted since: it goes.
 */
export function inFlightClaims(claims: Record<string, AllocationClaim>, read: TopologyRead): Record<string, AllocationClaim> {
  const inFlight = ([allocationId, claim]: [string, AllocationClaim]) =>
    read.readAt - claim.at < CLAIM_SETTLED_MS &&
    (claim.createdAt === undefined || claim.createdAt > read.readAt) &&
    (read.free.get(claim.nodeId) ?? []).includes(Number(allocationId));
  return Object.fromEntries(Object.entries(claims).filter(inFlight));
}

/** The allocations a copy may hand out: what the panel listed free, less those claimed by creates in flight. */
export const unclaimed = (listed: number[], claims: Record<string, AllocationClaim>): number[] =>
  listed.filter((id) => !Object.hasOwn(claims, String(id)));

export function topologyItem(
  instance: { id: string; baseUrl: string },
  read: TopologyRead,
  previous: Pick<PanelTopologyItem, 'claims' | 'version'> | undefined,
  ttlMs: number,
): PanelTopologyItem {
  const claims = previous ? inFlightClaims(previous.claims, read) : {};
  const freeAllocations: Record<string, Set<number>> = {};
  const exhausted: number[] = [];
  const addedMemoryMb: Record<string, number> = {};
  const addedDiskMb: Record<string, number> = {};
  const allocationsReadAt: Record<string, number> = {};
  for (const node of read.nodes) {
    addedMemoryMb[node.id] = 0;
    addedDiskMb[node.id] = 0;
    const listed = read.free.get(node.id);
    if (listed === undefined) continue;
    allocationsReadAt[node.id] = read.readAt;
    if (listed.length === 0) exhausted.push(node.id);
    // DynamoDB stores no empty set: a node without an entry has none left in the copy.
    const free = unclaimed(listed, claims);
    if (free.length > 0) freeAllocations[node.id] = new Set(free);
  }
  for (const claim of Object.values(claims)) {
    addedMemoryMb[claim.nodeId] = (addedMemoryMb[claim.nodeId] ?? 0) + claim.memoryMb;
    addedDiskMb[claim.nodeId] = (addedDiskMb[claim.nodeId] ?? 0) + claim.diskMb;
  }
  return {
    ...keys.panelTopology(instance.id),
    kind: 'panel-topology',
    instanceId: instance.id,
    baseUrl: instance.baseUrl,
    locations: read.locations,
    nodes: read.nodes,
    freeAllocations,
    allocationAddresses: Object.fromEntries(read.addresses),
    ...(exhausted.length > 0 ? { exhaustedNodes: new Set(exhausted) } : {}),
    addedMemoryMb,
    addedDiskMb,
    claims,
    allocationsReadAt,
    version: (previous?.version ?? 0) + 1,
    readAt: read.readAt,
    freshUntil: read.readAt + ttlMs,
    expiresAt: Math.floor(read.readAt / 1000) + COPY_KEPT_S,
  };
}
