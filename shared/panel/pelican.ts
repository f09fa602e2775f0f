import { PanelClient } from './client.ts';
import type { BuildBody, CreateServerBody, PanelEgg, PanelKind, PanelLocation, PanelNode } from './types.ts';

/**
 * The Pelican adapter (pelican-dev/panel, the maintained fork of Pterodactyl): the same methods and
 * shapes as the Pterodactyl client, overriding only where Pelican differs (read against
 * pelican-dev/panel v1.0.0-beta38). The rest (servers, details, startup, suspend, users' PATCH,
 * subusers, files, backups, schedules, databases, allocations, the console) is the same on both.
 */
export class PelicanClient extends PanelClient {
  override readonly kind: PanelKind = 'pelican';

  /**
   * No locations (no Location model): a node carries `tags` (pelican-dev/panel app/Models/Node.php),
   * and its first tag is its region here. A region's id holds within one read (callers keep the
   * regions and nodes of a read together, shared/catalog/topology.ts). Capacity as `Node::isViable`
   * reads it: 0 is unlimited and an overallocation below 0 turns the check off, so either becomes
   * a capacity nothing fills; CPU counts as memory and disk do (none set: not checked).
   */
  override async topology(): Promise<{ locations: PanelLocation[]; nodes: PanelNode[] }> {
    const ids = new Map<string, number>();
    const nodes = (await this.listNodes()).map((n: PanelNode & { tags?: string[] }) => {
      const tag = n.tags?.[0];
      if (tag && !ids.has(tag)) ids.set(tag, ids.size + 1);
      for (const r of ['memory', 'disk', 'cpu'] as const)
        if (!(n[r]! > 0 && n[`${r}_overallocate`]! >= 0)) Object.assign(n, { [r]: UNLIMITED, [`${r}_overallocate`]: 0 });
      return { ...n, location_id: ids.get(tag!) ?? 0 };
    });
    return { locations: [...ids].map(([short, id]) => ({ id, short, long: null })), nodes };
  }

  /** No nests: every egg at `/api/application/eggs`, not paginated (pelican-dev/panel routes/api-application.php, EggController::index). */
  override async listAllEggs() {
    return (await this.eggList('/eggs')).map((egg) => {
      const nest = { id: NO_NEST, name: (egg as PanelEgg & { tags?: string[] }).tags?.[0] || 'Eggs' };
      return { egg: { ...egg, nest: NO_NEST }, nest };
    });
  }

  /** No first or last name: StoreUserRequest keeps email, external_id, username, password and the rest (pelican-dev/panel app/Http/Requests/Api/Application/Users/StoreUserRequest.php). */
  protected override userBody<T extends object>(body: T): object {
    const { first_name: _first, last_name: _last, ...rest } = body as T & { first_name?: string; last_name?: string };
    return rest;
  }

  /**
   * `oom_killer` (true: the kernel may kill it) where Pterodactyl has `oom_disabled`, so the meaning
   * is inverted (pelican-dev/panel app/Http/Requests/Api/Application/Servers/StoreServerRequest.php,
   * UpdateServerBuildConfigurationRequest.php). Answers carry both (ServerTransformer), so reads need nothing.
   */
  protected override buildBody(body: CreateServerBody | BuildBody): object {
    const { oom_disabled, ...rest } = body;
    const { oom_killer: _read, ...limits } = body.limits as typeof body.limits & { oom_killer?: boolean };
    return { ...rest, limits, ...(oom_disabled === undefined ? {} : { oom_killer: !oom_disabled }) };
  }

  /**
   * Limiters of one route and one server (pelican-dev/panel routes/api-client.php with
   * app/Enums/ResourceLimit.php, config/http.php): websocket credentials 5 a minute, backup restore 3
   * and subuser create 10 per 15 minutes, database create 2 a minute, file pull 5 per 10 minutes,
   * schedule and allocation create 2 a minute.
   */
  protected override perRouteLimited(path: string): boolean {
    return /\/(websocket|users|backups\/[^/]+\/restore|databases|files\/pull|schedules|network\/allocations)$/.test(path);
  }
}

/** Capacity of a resource Pelican does not check (MB): larger than any plan. */
const UNLIMITED = 1_000_000_000;

/** Pelican eggs have no nest: one stand-in id (the API's nestId stays a positive id), named by the egg's first tag. */
const NO_NEST = 1;
