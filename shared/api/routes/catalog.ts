import { define, PANEL } from '../route-def.ts';
import { Brand } from '../schemas/brand.ts';
import { PlanList } from '../schemas/plans.ts';
import { EggDetail, EggList, EggParams, Pricing, PublicInstanceList, RegionList } from '../schemas/catalog.ts';

/** The catalog group: instances, regions, eggs. */
export const catalogRoutes = define({
  listInstances: {
    method: 'GET',
    path: '/v1/instances',
    group: 'catalog',
    tag: 'Catalog',
    auth: 'bearer',
    scope: 'servers:read',
    summary: 'Deployable instances (enabled panels)',
    response: PublicInstanceList,
  },
  listRegions: {
    method: 'GET',
    path: '/v1/regions',
    group: 'catalog',
    tag: 'Catalog',
    auth: 'bearer',
    scope: 'servers:read',
    summary: 'Region availability (stock): nodes, free memory and disk per region',
    description: 'Read from the panels, cached for 30 seconds.',
    response: RegionList,
  },
  listEggs: {
    method: 'GET',
    path: '/v1/eggs',
    group: 'catalog',
    tag: 'Catalog',
    auth: 'bearer',
    scope: 'servers:read',
    summary: 'Eggs (server templates) across instances',
    description: 'Read from the panels, cached for 30 seconds.',
    response: EggList,
  },
  getEgg: {
    method: 'GET',
    path: '/v1/eggs/:instanceId/:eggId',
    group: 'catalog',
    tag: 'Catalog',
    auth: 'bearer',
    scope: 'servers:read',
    summary: 'One egg with its variables, rules and allowed docker images',
    params: EggParams,
    response: EggDetail,
    errors: PANEL,
  },
  pricing: {
    method: 'GET',
    path: '/v1/pricing',
    group: 'catalog',
    tag: 'Catalog',
    auth: 'none',
    summary: 'Prices, limits and regions before you buy (no credential)',
    description:
      'What a server costs per resource (exact, per hour and per 730-hour month), the smallest server, the limits a deploy must respect, top-up rules and which regions can take a server now. The same for every caller: cacheable for 60 seconds, with an `ETag` (send `If-None-Match` for a 304). `POST /v1/servers/quote` prices one exact deploy body.',
    response: Pricing,
    cacheSeconds: 60,
  },
  getBrand: {
    method: 'GET',
    path: '/v1/brand',
    group: 'catalog',
    tag: 'Catalog',
    auth: 'none',
    summary: "The operator's brand: name, colour, logo, support and legal links (no credential)",
    description:
      'What the dashboard shows in its header and footer, set by an admin (the setting `brand`, PUT /v1/admin/brand/logo). Read afresh on every load: a change shows at the next page load.',
    response: Brand,
  },
  // The storefront's plans (shared/plans).
  listPlans: {
    method: 'GET',
    path: '/v1/plans',
    group: 'catalog',
    tag: 'Catalog',
    auth: 'bearer',
    scope: 'servers:read',
    summary: 'Plans on sale: resources, included add-ons, eggs and price',
    description:
      'Deploy one with `planId` beside the same resources (POST /v1/servers). `settings.customSizesAllowed` false: only plans may be deployed.',
    response: PlanList,
  },
});
