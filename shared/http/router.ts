import { routeEntries, type Group } from '../api/routes.ts';
import { compileTable, type Matcher } from './match.ts';

/**
 * Matchers over the whole route table, for the local API and the public function.
 * The local API dispatches to a group with one; the public function answers a request outside
 * every function's routes with one (404, or 405 with Allow for a path known with other methods),
 * which in AWS it gets through API Gateway's `$default` route.
 */
export const routerForGroups = (groups: readonly Group[]): Matcher =>
  compileTable(Object.fromEntries(routeEntries().filter(([, def]) => groups.includes(def.group))));
