import { ApiError } from '../errors.ts';

/**
 * The placement engine: which node takes a new server. Pure functions over a snapshot of the
 * candidate nodes (shared/catalog/candidates.ts builds it from the shared copy of each panel's
 * topology), so every rule is table-testable.
 *
 * Rules (summarised in ARCHITECTURE.md, "The panel boundary"):
 *   - an instance id, when given, restricts the choice to that instance; a region, when given,
 *     to nodes tagged with it (the panel location `short` code); null means anywhere;
 *   - disabled instances, nodes in maintenance and non-public nodes are skipped;
 *   - a node fits when free memory and free disk (capacity × (1 + overallocate %) − allocated)
 *     both cover the request and it has a free allocation, and on a Pelican node free CPU the
 *     same way (`Node::isViable` counts it; pelican-dev/panel app/Models/Node.php); as in the panel's own check, -1
 *     (which its UI calls unlimited) is just -1 %: 0.99 × capacity;
 *   - lower instance priority wins; within equal priority, the most free memory; then the most
 *     free disk; then the lowest instance id and node id, so ties are deterministic.
 * When nothing fits, `no_capacity` 503 lists every candidate node with why it was rejected; when a
 * panel did not answer and nothing that answered fits, `panel_unavailable` 503 names those panels.
 */
export interface NodeCandidate {
  instanceId: string;
  instancePriority: number;
  instanceEnabled: boolean;
  nodeId: number;
  nodeName: string;
  region: string | null;
  public: boolean;
  maintenance: boolean;
  memory: number;
  memoryOverallocate: number;
  allocatedMemory: number;
  disk: number;
  diskOverallocate: number;
  allocatedDisk: number;
  /** Unassigned allocations; undefined when not looked up (then not a reason to reject). */
  freeAllocations?: number;
  /** Pelican nodes only: CPU percent capacity, overallocation and allocated (absent: CPU is not checked). */
  cpu?: number;
  cpuOverallocate?: number;
  allocatedCpu?: number;
}

export interface PlacementRequest {
  ramMb: number;
  diskMb: number;
  /** Checked on nodes that say their CPU capacity (Pelican). */
  cpuPercent?: number;
  region?: string | null;
  instanceId?: string;
}

export type RejectionReason =
  | 'other_instance'
  | 'instance_disabled'
  | 'region_mismatch'
  | 'not_public'
  | 'maintenance'
  | 'insufficient_memory'
  | 'insufficient_disk'
  | 'insufficient_cpu'
  | 'no_free_allocation';

export interface Rejection {
  instanceId: string;
  nodeId: number;
  nodeName: string;
  region: string | null;
  reason: RejectionReason;
  freeMemoryMb: number;
  freeDiskMb: number;
}

/** A Pelican node's free CPU percent: capacity × (100 + overallocate) / 100, floored, less what is allocated. */
const cpuFree = (node: NodeCandidate): number =>
  Math.floor(((node.cpu ?? 0) * (100 + (node.cpuOverallocate ?? 0))) / 100) - (node.allocatedCpu ?? 0);

export function freeCapacity(node: {
  memory: number;
  memory_overallocate?: number;
  memoryOverallocate?: number;
  disk: number;
  disk_overallocate?: number;
  diskOverallocate?: number;
  allocated_resources?: { memory: number; disk: number };
  allocatedMemory?: number;
  allocatedDisk?: number;
}) {
  const memOver = node.memoryOverallocate ?? node.memory_overallocate ?? 0;
  const diskOver = node.diskOverallocate ?? node.disk_overallocate ?? 0;
  const allocMem = node.allocatedMemory ?? node.allocated_resources?.memory ?? 0;
  const allocDisk = node.allocatedDisk ?? node.allocated_resources?.disk ?? 0;
  // Integer arithmetic: capacity × (100 + overallocate) / 100, floored.
  return {
    memoryMb: Math.floor((node.memory * (100 + memOver)) / 100) - allocMem,
    diskMb: Math.floor((node.disk * (100 + diskOver)) / 100) - allocDisk,
  };
}

export function rejectionOf(node: NodeCandidate, request: PlacementRequest): RejectionReason | undefined {
  const free = freeCapacity(node);
  if (request.instanceId && node.instanceId !== request.instanceId) return 'other_instance';
  if (!node.instanceEnabled) return 'instance_disabled';
  if (request.region != null && node.region !== request.region) return 'region_mismatch';
  if (!node.public) return 'not_public';
  if (node.maintenance) return 'maintenance';
  if (free.memoryMb < request.ramMb) return 'insufficient_memory';
  if (free.diskMb < request.diskMb) return 'insufficient_disk';
  if (node.cpu !== undefined && (request.cpuPercent ?? 0) > cpuFree(node)) return 'insufficient_cpu';
  if (node.freeAllocations !== undefined && node.freeAllocations < 1) return 'no_free_allocation';
  return undefined;
}

export function rankFitting(candidates: NodeCandidate[], request: PlacementRequest): { fitting: NodeCandidate[]; rejected: Rejection[] } {
  const fitting: NodeCandidate[] = [];
  const rejected: Rejection[] = [];
  for (const node of candidates) {
    const reason = rejectionOf(node, request);
    if (reason) {
      const free = freeCapacity(node);
      rejected.push({
        instanceId: node.instanceId,
        nodeId: node.nodeId,
        nodeName: node.nodeName,
        region: node.region,
        reason,
        freeMemoryMb: free.memoryMb,
        freeDiskMb: free.diskMb,
      });
    } else fitting.push(node);
  }
  fitting.sort((a, b) => {
    const fa = freeCapacity(a);
    const fb = freeCapacity(b);
    return (
      a.instancePriority - b.instancePriority ||
      fb.memoryMb - fa.memoryMb ||
      fb.diskMb - fa.diskMb ||
      a.instanceId.localeCompare(b.instanceId) ||
      a.nodeId - b.nodeId
    );
  });
  return { fitting, rejected };
}

export function noCapacity(request: PlacementRequest, rejected: Rejection[]): ApiError {
  const where = [request.instanceId ? `instance ${request.instanceId}` : null, request.region ? `region ${request.region}` : null]
    .filter(Boolean)
    .join(', ');
  return new ApiError(
    'no_capacity',
    `No node can take ${request.ramMb} MB RAM and ${request.diskMb} MB disk${where ? ` in ${where}` : ''}`,
    {
      request,
      candidates: rejected,
    },
  );
}

/** An instance whose panel did not answer (down, timing out, rate limiting us, or its call budget spent), and when to ask again. */
export interface Unanswered {
  instanceId: string;
  retryAfterSeconds: number;
}

/** What a client is told to wait when a panel gave no Retry-After: long enough not to pile on, short enough to recover. */
export const DEFAULT_RETRY_AFTER_S = 30;

/** The instance that failed to answer, with the Retry-After its error carries (shared/panel/errors.ts sets it). */
export function unansweredOf(instanceId: string, err: unknown): Unanswered {
  const retryAfter = err instanceof ApiError ? Number(err.headers['Retry-After']) : Number.NaN;
  return { instanceId, retryAfterSeconds: Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter : DEFAULT_RETRY_AFTER_S };
}

/** 503 `panel_unavailable` naming the instances; Retry-After is the soonest any of them may answer again. */
export function panelUnavailable(unanswered: Unanswered[]): ApiError {
  const retryAfterSeconds = Math.min(...unanswered.map((u) => u.retryAfterSeconds));
  return new ApiError(
    'panel_unavailable',
    'The panels that could take this server are not answering now; nothing was created or charged. Try again later.',
    { instances: unanswered, retryAfterSeconds },
    { 'Retry-After': String(retryAfterSeconds) },
  );
}

/**
 * Why nothing was placed: while a panel did not answer, the server might have fitted there, so the
 * honest answer is `panel_unavailable` (retry later); only when every panel answered is it `no_capacity`.
 */
export function placementFailure(request: PlacementRequest, rejected: Rejection[], unanswered: Unanswered[]): ApiError {
  return unanswered.length > 0 ? panelUnavailable(unanswered) : noCapacity(request, rejected);
}

/** The chosen node, or `no_capacity` with every rejection. */
export function place(candidates: NodeCandidate[], request: PlacementRequest): NodeCandidate {
  const { fitting, rejected } = rankFitting(candidates, request);
  const best = fitting[0];
  if (!best) throw noCapacity(request, rejected);
  return best;
}
