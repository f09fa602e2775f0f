import { describe, expect, it } from 'vitest';
import { candidatesOf, freeAllocationCount, needsRefill } from '../../shared/catalog/candidates.ts';
import { CLAIM_SETTLED_MS, inFlightClaims, type TopologyRead, topologyItem, unclaimed } from '../../shared/catalog/topology-item.ts';
import type { AllocationClaim, CachedNode } from '../../shared/db/items.ts';

/** The shared topology copy as pure functions of a panel read and the copy it replaces (shared/catalog). */
const T = 1_800_000_000_000;
const TTL = 60_000;

const node = (id: number, over: Partial<CachedNode> = {}): CachedNode => ({
  id,
  name: `node-${id}`,
  locationId: 1,
  public: true,
  maintenance: false,
  memory: 8192,
  memoryOverallocate: 0,
  disk: 100_000,
  diskOverallocate: 0,
  allocatedMemory: 1024,
  allocatedDisk: 2048,
  ...over,
});

const read = (free: [number, number[]][], over: Partial<TopologyRead> = {}): TopologyRead => ({
  readAt: T,
  locations: [{ id: 1, short: 'eu', long: 'Europe' }],
  nodes: [node(1), node(2), node(3, { maintenance: true })],
  free: new Map(free),
  addresses: new Map(),
  ...over,
});

const instance = { id: 'inst-a', baseUrl: 'http://panel' };
const claim = (nodeId: number, over: Partial<AllocationClaim> = {}): AllocationClaim => ({
  nodeId,
  memoryMb: 1024,
  diskMb: 2048,
  at: T - 1000,
  ...over,
});

describe('a copy from a panel read', () => {
  it('keeps the listed free allocations per node, marks nodes the panel listed none for, counts nothing yet', () => {
    const item = topologyItem(
      instance,
      read([
        [1, [11, 12]],
        [2, []],
      ]),
      undefined,
      TTL,
    );
    expect(item.freeAllocations).toEqual({ 1: new Set([11, 12]) });
    expect(item.exhaustedNodes).toEqual(new Set([2]));
    expect(item.addedMemoryMb).toEqual({ 1: 0, 2: 0, 3: 0 });
    expect(item.claims).toEqual({});
    expect(item.allocationsReadAt).toEqual({ 1: T, 2: T });
    expect(item).toMatchObject({ PK: 'PANEL#inst-a', SK: 'TOPOLOGY', kind: 'panel-topology', version: 1, readAt: T, freshUntil: T + TTL });
  });

  it('carries the claims of creates in flight at the read: their allocations stay out, their memory counted', () => {
    const previous = {
      version: 7,
      claims: {
        12: claim(1), // in flight: listed free, not created
        13: claim(1, { createdAt: T + 500 }), // created after the read began: the read may not count it
        21: claim(2, { createdAt: T - 500 }), // created before the read and listed free again: deleted since
        22: claim(2), // not listed free: it landed
        14: claim(1, { at: T - CLAIM_SETTLED_MS - 1 }), // too old: its deploy died
      },
    };
    const item = topologyItem(
      instance,
      read([
        [1, [11, 12, 13, 14]],
        [2, [21]],
      ]),
      previous,
      TTL,
    );
    expect(Object.keys(item.claims).sort()).toEqual(['12', '13']);
    expect(item.freeAllocations).toEqual({ 1: new Set([11, 14]), 2: new Set([21]) });
    expect(item.addedMemoryMb).toEqual({ 1: 2048, 2: 0, 3: 0 });
    expect(item.addedDiskMb).toEqual({ 1: 4096, 2: 0, 3: 0 });
    expect(item.version).toBe(8);
  });

  it('a node whose listed allocations are all claimed has none left, but is not exhausted', () => {
    const item = topologyItem(instance, read([[1, [11]]]), { version: 1, claims: { 11: claim(1) } }, TTL);
    expect(item.freeAllocations).toEqual({});
    expect(item.exhaustedNodes).toBeUndefined();
  });

  it('in-flight claims and unclaimed allocations', () => {
    expect(inFlightClaims({ 5: claim(1) }, read([[1, [5]]]))).toEqual({ 5: claim(1) });
    expect(inFlightClaims({ 5: claim(1) }, read([[1, []]]))).toEqual({});
    expect(unclaimed([4, 5, 6], { 5: claim(1) })).toEqual([4, 6]);
  });
});

describe("placement's view of a copy", () => {
  const view = { id: 'inst-a', priority: 10, enabled: true };
  /** Two allocations free on node 1, none on node 2, and 2000 MB placed on node 1 since the read. */
  const item = () => ({
    ...topologyItem(
      instance,
      read([
        [1, [11, 12]],
        [2, []],
      ]),
      undefined,
      TTL,
    ),
    addedMemoryMb: { 1: 2000 },
  });

  it('counts our placements since the read on top of the panel figures', () => {
    const [first, second] = candidatesOf(view, item());
    expect(first).toMatchObject({ instanceId: 'inst-a', instancePriority: 10, nodeId: 1, region: 'eu', allocatedMemory: 3024 });
    expect(second).toMatchObject({ nodeId: 2, allocatedMemory: 1024, freeAllocations: 0 });
  });

  it('free allocations: the set size; 0 when the panel listed none; unknown (undefined) when the copy ran dry', () => {
    const copy = item();
    expect(freeAllocationCount(copy, 1)).toBe(2);
    expect(freeAllocationCount(copy, 2)).toBe(0);
    copy.freeAllocations = {};
    expect(freeAllocationCount(copy, 1)).toBeUndefined();
  });

  it('a set is read again when it ran dry, or when the panel refused one from a set read no later', () => {
    const copy = item();
    expect(needsRefill(copy, 1)).toBe(false);
    expect(needsRefill({ ...copy, doubtedAt: T }, 1)).toBe(true);
    expect(needsRefill({ ...copy, doubtedAt: T, allocationsReadAt: { 1: T + 1 } }, 1)).toBe(false);
    expect(needsRefill({ ...copy, freeAllocations: {} }, 1)).toBe(true);
  });
});
