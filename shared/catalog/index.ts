import type { z } from 'zod';
import { listInstances, panelClientFor, type InstanceView } from '../instances/index.ts';
import { notFound } from '../errors.ts';
import { logger, errorFields } from '../observability/logger.ts';
import type { EggDetail, EggSummary, Region } from '../api/schemas.ts';
import type { PanelEgg, PanelLocation, PanelNode } from '../panel/types.ts';
import { freeCapacity } from '../placement/index.ts';

/**
 * The catalog: what can be deployed where, read from the panels. Panel reads are cached in the
 * process for CATALOG_CACHE_MS so a busy catalog does not hammer the panels; a panel that does not
 * answer is reported in `unavailableInstances` instead of failing the whole listing.
 */
export const CATALOG_CACHE_MS = 30_000;

interface Cached<T> {
  value: Promise<T>;
  at: number;
}
const cache = new Map<string, Cached<unknown>>();

function cached<T>(key: string, load: () => Promise<T>, fresh = false): Promise<T> {
  const hit = cache.get(key) as Cached<T> | undefined;
  if (!fresh && hit && Date.now() - hit.at < CATALOG_CACHE_MS) return hit.value;
  const value = load();
  cache.set(key, { value, at: Date.now() });
  // A failed read is not cached: the next request tries the panel again.
  value.catch(() => cache.delete(key));
  return value;
}

export function clearCatalogCache(): void {
  cache.clear();
}

export interface InstanceTopology {
  instance: InstanceView;
  locations: PanelLocation[];
  nodes: PanelNode[];
}

/**
 * Locations and nodes of one instance, cached; `fresh` reads the panel now (placement does, so a
 * node that just went into maintenance or filled up is seen) and refreshes the cache.
 */
export function topologyOf(instance: InstanceView, fresh = false): Promise<InstanceTopology> {
  return cached(
    `topology:${instance.id}:${instance.baseUrl}`,
    async () => {
      const client = await panelClientFor(instance);
      const [locations, nodes] = await Promise.all([client.listLocations(), client.listNodes()]);
      return { instance, locations, nodes };
    },
    fresh,
  );
}

export interface EggWithNest {
  egg: PanelEgg;
  nestId: number;
  nestName: string;
}

/** Every egg of one instance, with variables (cached). */
export function eggsOf(instance: InstanceView): Promise<EggWithNest[]> {
  return cached(`eggs:${instance.id}:${instance.baseUrl}`, async () => {
    const client = await panelClientFor(instance);
    const nests = await client.listNests();
    const perNest = await Promise.all(
      nests.map(async (nest) => (await client.listEggs(nest.id)).map((egg) => ({ egg, nestId: nest.id, nestName: nest.name }))),
    );
    return perNest.flat();
  });
}

/** Runs `fn` for every enabled instance; instances whose panel fails are listed apart. */
async function acrossInstances<T>(fn: (instance: InstanceView) => Promise<T>): Promise<{ results: T[]; unavailable: string[] }> {
  const instances = (await listInstances()).filter((i) => i.enabled);
  const settled = await Promise.allSettled(instances.map(fn));
  const results: T[] = [];
  const unavailable: string[] = [];
  settled.forEach((s, i) => {
    if (s.status === 'fulfilled') results.push(s.value);
    else {
      unavailable.push(instances[i]!.id);
      logger.warn('catalog: panel unavailable', { instanceId: instances[i]!.id, ...errorFields(s.reason) });
    }
  });
  return { results, unavailable };
}

export async function listRegions(): Promise<{ data: z.infer<typeof Region>[]; unavailableInstances: string[] }> {
  const { results, unavailable } = await acrossInstances(topologyOf);
  const regions = new Map<string, z.infer<typeof Region>>();
  for (const { instance, locations, nodes } of results) {
    const byId = new Map(locations.map((l) => [l.id, l]));
    for (const node of nodes) {
      const location = byId.get(node.location_id);
      if (!location) continue;
      const region = regions.get(location.short) ?? {
        region: location.short,
        name: location.long,
        instances: [],
        nodes: 0,
        freeMemoryMb: 0,
        freeDiskMb: 0,
        largestFreeMemoryMb: 0,
      };
      if (!region.instances.includes(instance.id)) region.instances.push(instance.id);
      if (!node.maintenance_mode && node.public !== false) {
        const free = freeCapacity(node);
        region.nodes++;
        region.freeMemoryMb += Math.max(0, free.memoryMb);
        region.freeDiskMb += Math.max(0, free.diskMb);
        region.largestFreeMemoryMb = Math.max(region.largestFreeMemoryMb, free.memoryMb);
      }
      regions.set(location.short, region);
    }
  }
  return { data: [...regions.values()].sort((a, b) => a.region.localeCompare(b.region)), unavailableInstances: unavailable };
}

const summary = (instance: InstanceView, { egg, nestId, nestName }: EggWithNest): z.infer<typeof EggSummary> => ({
  instanceId: instance.id,
  instanceName: instance.name,
  eggId: egg.id,
  name: egg.name,
  description: egg.description,
  nestId,
  nestName,
  dockerImages: egg.docker_images,
});

export async function listEggs(): Promise<{ data: z.infer<typeof EggSummary>[]; unavailableInstances: string[] }> {
  const { results, unavailable } = await acrossInstances(async (instance) => (await eggsOf(instance)).map((e) => summary(instance, e)));
  return { data: results.flat(), unavailableInstances: unavailable };
}

/** One egg of one enabled instance with its variables, as the panel describes them. */
export async function findEgg(instanceId: string, eggId: number): Promise<{ instance: InstanceView; egg: EggWithNest }> {
  const instance = (await listInstances()).find((i) => i.id === instanceId && i.enabled);
  if (!instance) throw notFound('Egg');
  const egg = (await eggsOf(instance)).find((e) => e.egg.id === eggId);
  if (!egg) throw notFound('Egg');
  return { instance, egg };
}

export async function getEgg(instanceId: string, eggId: number): Promise<z.infer<typeof EggDetail>> {
  const { instance, egg } = await findEgg(instanceId, eggId);
  const variables = egg.egg.relationships?.variables?.data.map((d) => d.attributes) ?? [];
  return {
    ...summary(instance, egg),
    startup: egg.egg.startup,
    defaultDockerImage: egg.egg.docker_image,
    variables: variables.map((v) => ({
      env: v.env_variable,
      name: v.name,
      description: v.description,
      // Not viewable on the panel means not for customers' eyes (licence keys and the like).
      default: v.user_viewable ? v.default_value : null,
      editable: v.user_editable,
      rules: v.rules,
    })),
  };
}
