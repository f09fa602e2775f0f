import { describe, expect, it } from 'vitest';
import { routerForGroups } from '../../shared/http/router.ts';
import { GROUPS, routeEntries, routes, toTemplatePath } from '../../shared/api/routes.ts';
import type { ApiError } from '../../shared/errors.ts';
import { compileTable } from '../../shared/http/match.ts';
import type { RouteDef } from '../../shared/api/route-def.ts';
import { publicRoutes } from '../../shared/api/routes/public.ts';
import { accountRoutes } from '../../shared/api/routes/account.ts';
import { catalogRoutes } from '../../shared/api/routes/catalog.ts';
import { serverRoutes } from '../../shared/api/routes/servers.ts';
import { serverToolRoutes } from '../../shared/api/routes/server-tools.ts';
import { serverHistoryRoutes } from '../../shared/api/routes/server-history.ts';
import { billingRoutes } from '../../shared/api/routes/billing.ts';
import { paymentRoutes } from '../../shared/api/routes/payments.ts';
import { adminRoutes } from '../../shared/api/routes/admin.ts';
import { adminStorefrontRoutes } from '../../shared/api/routes/admin-storefront.ts';
import { adminPanelRoutes } from '../../shared/api/routes/admin-panels.ts';
import { devRoutes } from '../../shared/api/routes/dev.ts';

/** What each function passes to createGroupHandler (functions/<group>/handler.ts, dev/handler.ts). */
const GROUP_TABLES: Record<(typeof GROUPS)[number], Record<string, RouteDef>> = {
  public: publicRoutes,
  account: accountRoutes,
  catalog: catalogRoutes,
  servers: serverRoutes,
  'server-tools': serverToolRoutes,
  'server-history': serverHistoryRoutes,
  billing: billingRoutes,
  payments: paymentRoutes,
  admin: adminRoutes,
  'admin-panels': adminPanelRoutes,
  'admin-storefront': adminStorefrontRoutes,
  dev: devRoutes,
};

const match = routerForGroups(GROUPS);

describe('router over the route table', () => {
  it('matches every route of the table by its own path', () => {
    for (const [id, def] of routeEntries()) {
      const concrete = def.path.replace(/:([A-Za-z]+)/g, 'x1');
      expect(match(def.method, concrete).id).toBe(id);
    }
  });

  it('captures and decodes parameters; a trailing slash is another path, as on API Gateway', () => {
    const m = match('DELETE', '/v1/keys/abc%20def');
    expect(m.id).toBe('revokeKey');
    expect(m.params).toEqual({ id: 'abc def' });
    const slashed = (() => {
      try {
        match('DELETE', '/v1/keys/abc%20def/');
      } catch (e) {
        return e as ApiError;
      }
    })();
    expect(slashed?.code).toBe('not_found');
  });

  /** The code the router answers a path with: the route's id, or the ApiError's code. */
  const outcome = (m: typeof match, method: string, path: string): string => {
    try {
      return `route ${m(method, path).id}`;
    } catch (e) {
      return (e as ApiError).code ?? String(e);
    }
  };

  it('an empty path parameter matches no route: /v1/servers//power is 404, not the server ""', () => {
    expect(outcome(match, 'POST', '/v1/servers//power')).toBe('not_found');
    // Every parameter of every route, emptied in turn, the others filled.
    for (const [id, def] of routeEntries()) {
      const names = [...def.path.matchAll(/:([A-Za-z]+)/g)].map((m) => m[1]!);
      for (const empty of names) {
        const path = def.path.replace(/:([A-Za-z]+)/g, (_, name: string) => (name === empty ? '' : 'x1'));
        expect(outcome(match, def.method, path), `${id} with :${empty} empty`).toBe('not_found');
      }
    }
  });

  it('a parameter whose percent-encoding is broken is 404, never an exception (a 500)', () => {
    expect(outcome(match, 'DELETE', '/v1/keys/%E0%A4%A')).toBe('not_found');
    expect(outcome(match, 'DELETE', '/v1/keys/%')).toBe('not_found');
  });

  it('a static segment wins over a parameter, whatever the order of the table', () => {
    const def = (path: string) => ({ method: 'GET', path }) as RouteDef;
    for (const table of [
      { byId: def('/v1/things/:id'), search: def('/v1/things/search') },
      { search: def('/v1/things/search'), byId: def('/v1/things/:id') },
    ]) {
      const m = compileTable(table);
      expect(m('GET', '/v1/things/search').id).toBe('search');
      expect(m('GET', '/v1/things/other')).toMatchObject({ id: 'byId', params: { id: 'other' } });
    }
  });

  it('tells 405 (with Allow) from 404', () => {
    const wrong = (() => {
      try {
        match('POST', '/v1/account');
      } catch (e) {
        return e as ApiError;
      }
    })();
    expect(wrong?.code).toBe('method_not_allowed');
    expect(wrong?.headers.Allow).toBe('GET');
    expect(() => match('GET', '/v1/keys/a/b')).toThrow(/No route/);
  });

  it("is the union of the groups' modules: each route once, in its own group's module", () => {
    for (const group of GROUPS) {
      const own = routeEntries()
        .filter(([, d]) => d.group === group)
        .map(([id]) => id);
      expect(Object.keys(GROUP_TABLES[group]).sort(), group).toEqual(own.sort());
      for (const [id, def] of Object.entries(GROUP_TABLES[group])) expect(def, id).toBe(routes[id as keyof typeof routes]);
    }
  });

  it("matches every route in its group's own table as in the whole table (a function compiles only its own)", () => {
    for (const group of GROUPS) {
      const own = compileTable(GROUP_TABLES[group]);
      for (const [id, def] of Object.entries(GROUP_TABLES[group])) {
        const concrete = def.path.replace(/:([A-Za-z]+)/g, 'x1');
        expect(own(def.method, concrete).id, id).toBe(match(def.method, concrete).id);
      }
    }
  });

  it('has no two routes with the same method and path', () => {
    const seen = new Set(routeEntries().map(([, d]) => `${d.method} ${toTemplatePath(d.path)}`));
    expect(seen.size).toBe(routeEntries().length);
  });

  it('gives every mutation an activity-log action and every bearer route a scope', () => {
    for (const [id, def] of routeEntries()) {
      if (def.group === 'dev') continue;
      // Authenticated mutations are logged by the pipeline; the webhook logs what it did itself. A
      // POST under a read scope computes and stores nothing (the quote), so it has no entry to log.
      const mutation = def.method !== 'GET' && def.auth === 'bearer' && !def.scope?.endsWith(':read');
      if (mutation) expect(def.audit, id).toBeTruthy();
      if (def.auth === 'bearer') expect(def.scope, id).toBeTruthy();
      if (def.group === 'admin') expect(def.admin && def.scope === 'admin', id).toBe(true);
    }
  });
});
