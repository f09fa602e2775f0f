import { listInstances, type InstanceView } from '../instances/index.ts';
import { topologyOf } from './index.ts';
import type { NodeCandidate } from '../placement/index.ts';

/**
 * The one impure part of placement: the candidate nodes of the given instances, read fresh from
 * the panels (a cached view could place onto a node that just filled up or went into maintenance).
 * Allocations are looked up only for the node placement picks (servers module), so a panel with
 * many nodes costs one allocations read per deploy.
 */
export async function loadCandidates(given?: InstanceView[]): Promise<{ candidates: NodeCandidate[]; unavailable: string[] }> {
  const instances = given ?? (await listInstances());
  const settled = await Promise.allSettled(instances.map((i) => topologyOf(i, true)));
  const candidates: NodeCandidate[] = [];
  const unavailable: string[] = [];
  settled.forEach((s, i) => {
    const instance = instances[i]!;
    if (s.status === 'rejected') {
      unavailable.push(instance.id);
      return;
    }
    const shortOf = new Map(s.value.locations.map((l) => [l.id, l.short]));
    for (const node of s.value.nodes) {
      candidates.push({
        instanceId: instance.id,
        instancePriority: instance.priority,
        instanceEnabled: instance.enabled,
        nodeId: node.id,
        nodeName: node.name,
        region: shortOf.get(node.location_id) ?? null,
        public: node.public !== false,
        maintenance: node.maintenance_mode,
        memory: node.memory,
        memoryOverallocate: node.memory_overallocate,
        allocatedMemory: node.allocated_resources.memory,
        disk: node.disk,
        diskOverallocate: node.disk_overallocate,
        allocatedDisk: node.allocated_resources.disk,
      });
    }
  });
  return { candidates, unavailable };
}
