import type { z } from 'zod';
import type { EggDetail, EggSummary, Region } from '../api/schemas.ts';
import type { CachedEgg } from '../db/items.ts';
import { notFound } from '../errors.ts';
import { type InstanceView, listInstances } from '../instances/index.ts';
import { errorFields, logger } from '../observability/logger.ts';
import { ruleText } from '../panel/rules.ts';
import { freeCapacity } from '../placement/index.ts';
import { candidatesOf } from './candidates.ts';
import { eggCopies, eggsOf } from './eggs.ts';
import { topologies, topologyOf } from './topology.ts';
import { eggLookId, storefrontItems } from '../plans/index.ts';

/**
 * The catalog: what can be deployed where, from the shared copies of each panel's topology
 * (topology.ts, fresh for PANEL_TOPOLOGY_TTL_S) and eggs (eggs.ts, PANEL_EGGS_TTL_S), the same
 * copies deploys place from. A panel with no copy that does not answer is reported in
 * `unavailableInstances` instead of failing the whole listing.
 */
/** Forgets what this process keeps of the copies (admin changes to an instance); a changed URL makes the stored copies count as none. */
export function clearCatalogCache(): void {
  topologies.forget();
  eggCopies.forget();
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
  const [{ results, unavailable }, { regions: looks }] = await Promise.all([
    acrossInstances(async (instance) => {
      const topology = await topologyOf(instance);
      return { instance, topology, candidates: candidatesOf(instance, topology) };
    }),
    storefrontItems(),
  ]);
  const regions = new Map<string, z.infer<typeof Region>>();
  for (const { instance, topology, candidates } of results) {
    const locationOf = new Map(topology.locations.map((l) => [l.short, l]));
    for (const node of candidates) {
      const location = node.region === null ? undefined : locationOf.get(node.region);
      if (!location) continue;
      const region = regions.get(location.short) ?? {
        region: location.short,
        name: location.long,
        // The admin's look of the region (shared/plans), else the location's description, else the tag.
        displayName: looks.get(location.short)?.displayName ?? (location.long || location.short),
        city: looks.get(location.short)?.city ?? null,
        country: looks.get(location.short)?.country ?? null,
        instances: [],
        nodes: 0,
        freeMemoryMb: 0,
        freeDiskMb: 0,
        largestFreeMemoryMb: 0,
      };
      if (!region.instances.includes(instance.id)) region.instances.push(instance.id);
      if (!node.maintenance && node.public) {
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

type EggLooks = Awaited<ReturnType<typeof storefrontItems>>['eggs'];

/** An egg's category is its admin-set one, else its nest's name (Pterodactyl groups games by nest). */
const summary = (instance: InstanceView, egg: CachedEgg, looks: EggLooks): z.infer<typeof EggSummary> => ({
  pictureUrl: looks.get(eggLookId(instance.id, egg.id))?.pictureUrl ?? null,
  category: looks.get(eggLookId(instance.id, egg.id))?.category ?? egg.nestName,
  instanceId: instance.id,
  instanceName: instance.name,
  eggId: egg.id,
  name: egg.name,
  description: egg.description,
  nestId: egg.nestId,
  nestName: egg.nestName,
  dockerImages: egg.dockerImages,
});

export async function listEggs(): Promise<{ data: z.infer<typeof EggSummary>[]; unavailableInstances: string[] }> {
  const { eggs: looks } = await storefrontItems();
  const { results, unavailable } = await acrossInstances(async (instance) =>
    (await eggsOf(instance)).map((e) => summary(instance, e, looks)),
  );
  return { data: results.flat(), unavailableInstances: unavailable };
}

export async function getEgg(instanceId: string, eggId: number): Promise<z.infer<typeof EggDetail>> {
  const instance = (await listInstances()).find((i) => i.id === instanceId && i.enabled);
  if (!instance) throw notFound('Egg');
  const egg = (await eggsOf(instance)).find((e) => e.id === eggId);
  if (!egg) throw notFound('Egg');
  return {
    ...summary(instance, egg, (await storefrontItems()).eggs),
    startup: egg.startup,
    defaultDockerImage: egg.dockerImage,
    variables: egg.variables.map((v) => ({
      env: v.env,
      name: v.name,
      description: v.description,
      // Not viewable on the panel means not for customers' eyes (licence keys and the like).
      default: v.userViewable ? v.defaultValue : null,
      editable: v.userEditable,
      rules: ruleText(v.rules),
    })),
  };
}
