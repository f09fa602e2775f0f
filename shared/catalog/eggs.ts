import { getConfig } from '../config/env.ts';
import * as accessPatterns from '../db/access-patterns.ts';
import type { CachedEgg, PanelEggsItem } from '../db/items.ts';
import { keys } from '../db/keys.ts';
import { writeItem } from '../db/write.ts';
import { type InstanceView, panelClientFor } from '../instances/index.ts';
import { ruleList } from '../panel/rules.ts';
import type { PanelEgg, PanelNest } from '../panel/types.ts';
import { SharedCopies } from './shared-copy.ts';

/**
 * The shared copy of each panel's eggs with their variables (the panel's adapter reads them: the
 * nests and one read per nest on Pterodactyl, one read on Pelican), every PANEL_EGGS_TTL_S. A create the panel refuses on the egg or on a variable marks the
 * copy stale (the egg changed on the panel), so the next reader reads it again.
 */
const COPY_KEPT_S = 24 * 3600;

export const eggCopies = new SharedCopies<PanelEggsItem>({
  name: 'eggs',
  key: keys.panelEggs,
  stored: (instanceId) => accessPatterns.panelEggs(instanceId),
  refresh: refreshEggs,
});

export const eggsOf = async (instance: InstanceView): Promise<CachedEgg[]> => (await eggCopies.get(instance)).eggs;

/** The panel refused a create on the egg or one of its variables: the egg changed there, so the next reader reads it again. */
export const invalidateEggs = (instanceId: string): Promise<void> => eggCopies.markStale(instanceId);

async function refreshEggs(instance: InstanceView): Promise<PanelEggsItem> {
  const client = await panelClientFor(instance);
  const eggs = (await client.listAllEggs()).map(({ egg, nest }) => toCachedEgg(egg, nest));
  const readAt = Date.now();
  const item: PanelEggsItem = {
    ...keys.panelEggs(instance.id),
    kind: 'panel-eggs',
    instanceId: instance.id,
    baseUrl: instance.baseUrl,
    eggs,
    readAt,
    freshUntil: readAt + getConfig().panelEggsTtlMs,
    expiresAt: Math.floor(readAt / 1000) + COPY_KEPT_S,
  };
  // Unconditional: two readers that both found no copy read the same panel; the later write wins.
  await writeItem({ Put: { Item: item } });
  return item;
}

/** Only what the catalog and deploy read: the panel sends much more per egg and variable. */
function toCachedEgg(egg: PanelEgg, nest: Pick<PanelNest, 'id' | 'name'>): CachedEgg {
  return {
    id: egg.id,
    uuid: egg.uuid,
    name: egg.name,
    description: egg.description,
    nestId: nest.id,
    nestName: nest.name,
    dockerImage: egg.docker_image,
    dockerImages: egg.docker_images ?? {},
    startup: egg.startup,
    variables: (egg.relationships?.variables?.data ?? []).map(({ attributes: v }) => ({
      id: v.id,
      name: v.name,
      description: v.description,
      env: v.env_variable,
      defaultValue: v.default_value,
      userViewable: v.user_viewable,
      userEditable: v.user_editable,
      rules: v.rules,
    })),
  };
}

/** The panel's shape of a cached egg, for the variable checks that read it (shared/servers/egg-variables.ts). */
export function toPanelEgg(egg: CachedEgg): PanelEgg {
  return {
    id: egg.id,
    uuid: egg.uuid,
    name: egg.name,
    nest: egg.nestId,
    description: egg.description,
    docker_image: egg.dockerImage,
    docker_images: egg.dockerImages,
    startup: egg.startup,
    relationships: {
      variables: {
        object: 'list',
        data: egg.variables.map((v) => ({
          object: 'egg_variable',
          attributes: {
            id: v.id,
            name: v.name,
            description: v.description,
            env_variable: v.env,
            default_value: v.defaultValue,
            user_viewable: v.userViewable,
            user_editable: v.userEditable,
            rules: ruleList(v.rules),
          },
        })),
      },
    },
  };
}
