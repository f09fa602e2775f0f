import { describe, expect, it } from 'vitest';
import {
  DEFAULT_RETRY_AFTER_S,
  freeCapacity,
  type NodeCandidate,
  type PlacementRequest,
  place,
  placementFailure,
  rankFitting,
  unansweredOf,
} from '../../shared/placement/index.ts';
import { ApiError } from '../../shared/errors.ts';

const node = (over: Partial<NodeCandidate> & Pick<NodeCandidate, 'nodeId'>): NodeCandidate => ({
  instanceId: 'inst-a',
  instancePriority: 100,
  instanceEnabled: true,
  nodeName: `node-${over.nodeId}`,
  region: 'eu',
  public: true,
  maintenance: false,
  memory: 8192,
  memoryOverallocate: 0,
  allocatedMemory: 0,
  disk: 100_000,
  diskOverallocate: 0,
  allocatedDisk: 0,
  freeAllocations: 5,
  ...over,
});

const small: PlacementRequest = { ramMb: 1024, diskMb: 5000 };

describe('free capacity', () => {
  it('is capacity × (1 + overallocate %) − allocated, in whole MB', () => {
    expect(freeCapacity(node({ nodeId: 1, memory: 1000, memoryOverallocate: 50, allocatedMemory: 200 })).memoryMb).toBe(1300);
    expect(freeCapacity(node({ nodeId: 1, disk: 1000, diskOverallocate: -10, allocatedDisk: 0 })).diskMb).toBe(900);
    expect(freeCapacity(node({ nodeId: 1, memory: 333, memoryOverallocate: 10 })).memoryMb).toBe(366);
  });

  // The panel's rule (app/Models/Node.php, isViable): a server fits while allocated + requested <=
  // capacity × (1 + overallocate / 100). Its UI calls -1 "unlimited", but nothing special-cases it:
  // -1 is 0.99 × capacity, a node that takes slightly less than its size.
  it('-1 overallocation is 0.99 × capacity, as the panel computes it, not unlimited', () => {
    expect(freeCapacity(node({ nodeId: 1, memory: 8192, memoryOverallocate: -1 })).memoryMb).toBe(8110);
    expect(freeCapacity(node({ nodeId: 1, disk: 100_000, diskOverallocate: -1, allocatedDisk: 50_000 })).diskMb).toBe(49_000);
    // 1001 × 0.99 = 990.99: a whole-MB request of 990 fits, 991 does not (the panel's `<=`).
    const odd = node({ nodeId: 1, memory: 1001, memoryOverallocate: -1 });
    expect(rankFitting([odd], { ramMb: 990, diskMb: 1 }).fitting).toHaveLength(1);
    expect(rankFitting([odd], { ramMb: 991, diskMb: 1 }).rejected[0]?.reason).toBe('insufficient_memory');
    // A full-size request is refused on a -1 node, where "unlimited" would have taken it.
    const full = node({ nodeId: 2, memory: 8192, memoryOverallocate: -1, disk: 100_000, diskOverallocate: -1 });
    expect(rankFitting([full], { ramMb: 8192, diskMb: 1 }).rejected[0]?.reason).toBe('insufficient_memory');
    expect(rankFitting([full], { ramMb: 1, diskMb: 100_000 }).rejected[0]?.reason).toBe('insufficient_disk');
  });
});

describe('placement rules', () => {
  const cases: { name: string; nodes: NodeCandidate[]; request: PlacementRequest; expect: number | string }[] = [
    {
      name: 'most free memory wins within one priority',
      nodes: [node({ nodeId: 1, allocatedMemory: 4000 }), node({ nodeId: 2, allocatedMemory: 1000 })],
      request: small,
      expect: 2,
    },
    {
      name: 'lower instance priority wins over more free memory',
      nodes: [
        node({ nodeId: 1, instanceId: 'b', instancePriority: 50, allocatedMemory: 6000 }),
        node({ nodeId: 2, instancePriority: 100 }),
      ],
      request: small,
      expect: 1,
    },
    {
      name: 'overallocation counts as free memory',
      nodes: [node({ nodeId: 1, memory: 4096, memoryOverallocate: 100 }), node({ nodeId: 2, memory: 6144 })],
      request: small,
      expect: 1,
    },
    {
      name: 'tie on memory: more free disk wins',
      nodes: [node({ nodeId: 1, allocatedDisk: 50_000 }), node({ nodeId: 2, allocatedDisk: 10 })],
      request: small,
      expect: 2,
    },
    {
      name: 'full tie: lowest instance id, then lowest node id',
      nodes: [node({ nodeId: 9, instanceId: 'b' }), node({ nodeId: 7, instanceId: 'a' }), node({ nodeId: 3, instanceId: 'b' })],
      request: small,
      expect: 7,
    },
    { name: 'full tie within one instance: lowest node id', nodes: [node({ nodeId: 9 }), node({ nodeId: 4 })], request: small, expect: 4 },
    {
      name: 'maintenance is skipped',
      nodes: [node({ nodeId: 1, maintenance: true }), node({ nodeId: 2, allocatedMemory: 7000 })],
      request: small,
      expect: 2,
    },
    {
      name: 'disabled instance is skipped',
      nodes: [node({ nodeId: 1, instanceId: 'off', instanceEnabled: false, instancePriority: 1 }), node({ nodeId: 2 })],
      request: small,
      expect: 2,
    },
    {
      name: 'non-public node is skipped',
      nodes: [node({ nodeId: 1, public: false }), node({ nodeId: 2, allocatedMemory: 5000 })],
      request: small,
      expect: 2,
    },
    {
      name: 'must fit the disk too',
      nodes: [node({ nodeId: 1, allocatedDisk: 99_000 }), node({ nodeId: 2, allocatedMemory: 5000 })],
      request: small,
      expect: 2,
    },
    {
      name: 'must have a free allocation',
      nodes: [node({ nodeId: 1, freeAllocations: 0 }), node({ nodeId: 2, allocatedMemory: 5000 })],
      request: small,
      expect: 2,
    },
    {
      name: 'region restricts',
      nodes: [node({ nodeId: 1, region: 'us' }), node({ nodeId: 2, region: 'eu', allocatedMemory: 6000 })],
      request: { ...small, region: 'eu' },
      expect: 2,
    },
    {
      name: 'region null means anywhere',
      nodes: [node({ nodeId: 1, region: 'us' }), node({ nodeId: 2, region: 'eu', allocatedMemory: 6000 })],
      request: { ...small, region: null },
      expect: 1,
    },
    {
      name: 'instanceId restricts, even over a better node elsewhere',
      nodes: [node({ nodeId: 1, instanceId: 'a' }), node({ nodeId: 2, instanceId: 'b', allocatedMemory: 6000 })],
      request: { ...small, instanceId: 'b' },
      expect: 2,
    },
    { name: 'exact fit is a fit', nodes: [node({ nodeId: 1, memory: 1024, disk: 5000 })], request: small, expect: 1 },
    { name: 'one MB short is not', nodes: [node({ nodeId: 1, memory: 1023 })], request: small, expect: 'insufficient_memory' },
    {
      name: 'disabled instance named explicitly is still refused',
      nodes: [node({ nodeId: 1, instanceId: 'off', instanceEnabled: false })],
      request: { ...small, instanceId: 'off' },
      expect: 'instance_disabled',
    },
  ];

  for (const c of cases) {
    it(c.name, () => {
      if (typeof c.expect === 'number') {
        expect(place(c.nodes, c.request).nodeId).toBe(c.expect);
      } else {
        let error: ApiError | undefined;
        try {
          place(c.nodes, c.request);
        } catch (e) {
          error = e as ApiError;
        }
        expect(error?.code).toBe('no_capacity');
        expect((error!.details as { candidates: { reason: string }[] }).candidates.map((r) => r.reason)).toContain(c.expect);
      }
    });
  }

  it('no_capacity lists every candidate node with its reason', () => {
    const nodes = [
      node({ nodeId: 1, maintenance: true }),
      node({ nodeId: 2, region: 'us' }),
      node({ nodeId: 3, allocatedMemory: 8000 }),
      node({ nodeId: 4, allocatedDisk: 99_999 }),
      node({ nodeId: 5, freeAllocations: 0 }),
      node({ nodeId: 6, instanceId: 'x', instanceEnabled: false }),
    ];
    let error: ApiError | undefined;
    try {
      place(nodes, { ...small, region: 'eu' });
    } catch (e) {
      error = e as ApiError;
    }
    expect(error?.statusCode).toBe(503);
    const reasons = Object.fromEntries(
      (error!.details as { candidates: { nodeId: number; reason: string }[] }).candidates.map((r) => [r.nodeId, r.reason]),
    );
    expect(reasons).toEqual({
      1: 'maintenance',
      2: 'region_mismatch',
      3: 'insufficient_memory',
      4: 'insufficient_disk',
      5: 'no_free_allocation',
      6: 'instance_disabled',
    });
  });

  it('ranks all fitting nodes, best first', () => {
    const { fitting } = rankFitting(
      [node({ nodeId: 1, allocatedMemory: 3000 }), node({ nodeId: 2 }), node({ nodeId: 3, allocatedMemory: 1000 })],
      small,
    );
    expect(fitting.map((n) => n.nodeId)).toEqual([2, 3, 1]);
  });
});

describe('why nothing was placed', () => {
  const rejected = rankFitting([node({ nodeId: 1, allocatedMemory: 8000 })], small).rejected;

  it('every panel answered and nothing fits: no_capacity with each rejection', () => {
    const error = placementFailure(small, rejected, []);
    expect(error).toMatchObject({ code: 'no_capacity', statusCode: 503, headers: {} });
    expect((error.details as { candidates: unknown[] }).candidates).toHaveLength(1);
  });

  it('a panel did not answer: panel_unavailable naming it, Retry-After the soonest any may answer', () => {
    const error = placementFailure(small, rejected, [
      { instanceId: 'inst-a', retryAfterSeconds: 60 },
      { instanceId: 'inst-b', retryAfterSeconds: 30 },
    ]);
    expect(error).toMatchObject({ code: 'panel_unavailable', statusCode: 503, headers: { 'Retry-After': '30' } });
    expect(error.details).toEqual({
      instances: [
        { instanceId: 'inst-a', retryAfterSeconds: 60 },
        { instanceId: 'inst-b', retryAfterSeconds: 30 },
      ],
      retryAfterSeconds: 30,
    });
  });

  it("an unanswered panel's Retry-After comes from its error, else the default", () => {
    const limited = new ApiError('panel_unavailable', 'rate limited', {}, { 'Retry-After': '60' });
    expect(unansweredOf('inst-a', limited)).toEqual({ instanceId: 'inst-a', retryAfterSeconds: 60 });
    expect(unansweredOf('inst-a', new ApiError('panel_timeout', 'slow'))).toEqual({
      instanceId: 'inst-a',
      retryAfterSeconds: DEFAULT_RETRY_AFTER_S,
    });
    expect(unansweredOf('inst-a', new Error('network'))).toEqual({ instanceId: 'inst-a', retryAfterSeconds: DEFAULT_RETRY_AFTER_S });
  });
});

describe('CPU on Pelican nodes (Node::isViable counts it)', () => {
  const cpu = { ramMb: 1024, diskMb: 5000, cpuPercent: 200 };

  it('a node that says its CPU capacity rejects a request past its free CPU, with its overallocation', () => {
    const full = node({ nodeId: 1, cpu: 400, cpuOverallocate: 0, allocatedCpu: 300 });
    expect(rankFitting([full], cpu).rejected).toMatchObject([{ nodeId: 1, reason: 'insufficient_cpu' }]);
    const over = node({ nodeId: 2, cpu: 400, cpuOverallocate: 50, allocatedCpu: 300 }); // 600 − 300 = 300 free
    expect(rankFitting([over], cpu).fitting.map((n) => n.nodeId)).toEqual([2]);
    expect(rankFitting([node({ nodeId: 3, cpu: 400, allocatedCpu: 200 })], cpu).fitting.map((n) => n.nodeId)).toEqual([3]);
  });

  it('a Pterodactyl node (no CPU capacity) and a request without CPU are not checked on CPU', () => {
    expect(rankFitting([node({ nodeId: 1 })], cpu).fitting).toHaveLength(1);
    expect(rankFitting([node({ nodeId: 1, cpu: 100, allocatedCpu: 100 })], small).fitting).toHaveLength(1);
  });
});
