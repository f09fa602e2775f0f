import type { Group, RouteDef } from './route-def.ts';
import { publicRoutes } from './routes/public.ts';
import { accountCoreRoutes, accountMoneyRoutes } from './routes/account.ts';
import { catalogRoutes } from './routes/catalog.ts';
import { serverActionRoutes, serverCoreRoutes, serverShareRoutes, serverSubdomainRoutes } from './routes/servers.ts';
import { serverActivityRoutes, serverUsageRoutes } from './routes/server-history.ts';
import {
  serverAddonRoutes,
  serverDatabaseRoutes,
  serverNetworkRoutes,
  serverScheduleRoutes,
  serverStartupRoutes,
  serverStorageRoutes,
} from './routes/server-tools.ts';
import { billingRoutes } from './routes/billing.ts';
import { paymentRoutes } from './routes/payments.ts';
import { adminRoutes } from './routes/admin.ts';
import { adminStorefrontRoutes } from './routes/admin-storefront.ts';
import { adminPanelRoutes } from './routes/admin-panels.ts';
import { devRoutes } from './routes/dev.ts';

export { ADMIN_GROUPS, GROUPS, toTemplatePath, type Group, type RouteDef } from './route-def.ts';

/**
 * The route table: the one source of truth for every endpoint. Each group's routes are defined
 * in its own module (routes/<group>.ts), with the schemas of its domain (schemas/<domain>.ts);
 * this is their union, in the order the OpenAPI document lists them. The local router, the API
 * Gateway routes (infra/), the OpenAPI document and the tests read it whole; a Lambda function
 * imports only its own group's module (functions/<group>/handler.ts), so its cold start builds
 * only the schemas its own routes use.
 */
export const routes = {
  ...publicRoutes,
  ...accountCoreRoutes,
  ...catalogRoutes,
  // Two functions' routes under /v1/servers, in the document's order: a server's startup settings
  // (server-tools) next to the server itself, its files and backups after its actions.
  ...serverCoreRoutes,
  ...serverStartupRoutes,
  ...serverActionRoutes,
  ...serverSubdomainRoutes,
  ...serverUsageRoutes,
  ...serverAddonRoutes,
  ...serverStorageRoutes,
  ...serverScheduleRoutes,
  ...serverNetworkRoutes,
  ...serverDatabaseRoutes,
  ...serverShareRoutes,
  ...serverActivityRoutes,
  // The account's ledger and budget (the account function) are tagged Billing, and sit with the billing group's routes.
  ...accountMoneyRoutes,
  ...billingRoutes,
  ...paymentRoutes,
  ...adminRoutes,
  ...adminPanelRoutes,
  ...adminStorefrontRoutes,
  ...devRoutes,
};

export type Routes = typeof routes;
export type RouteId = keyof Routes;
export type RoutesOfGroup<G extends Group> = { [K in RouteId]: Routes[K]['group'] extends G ? K : never }[RouteId];

export const routeEntries = (): [RouteId, RouteDef][] => Object.entries(routes) as [RouteId, RouteDef][];
