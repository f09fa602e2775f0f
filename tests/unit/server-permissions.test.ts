import { describe, expect, it } from 'vitest';
import { routeEntries } from '../../shared/api/routes.ts';
import { accessOfRoute, allows, isServerRoute, SERVER_PERMISSIONS, serverRoutePermissions } from '../../shared/api/server-permissions.ts';

/**
 * The shared-access table (shared/api/server-permissions.ts) is the one place that decides what an
 * invitee may call: a route on one server added without a row would be owner-only at run time, but
 * the row must be chosen, so this fails naming every route left out.
 */
describe('server permission table', () => {
  const serverRoutes = routeEntries().filter(([, def]) => isServerRoute(def.path));

  it('has a row for every route under /v1/servers/:id', () => {
    const missing = serverRoutes.map(([id]) => id).filter((id) => !(id in serverRoutePermissions));
    expect(missing, `routes without a row in shared/api/server-permissions.ts: ${missing.join(', ')}`).toEqual([]);
  });

  it('names only routes that exist, on one server, with a known permission', () => {
    const onServer = new Set(serverRoutes.map(([id]) => id as string));
    const stray = Object.keys(serverRoutePermissions).filter((id) => !onServer.has(id));
    expect(stray).toEqual([]);
    for (const access of Object.values(serverRoutePermissions)) expect([...SERVER_PERMISSIONS, 'owner']).toContain(access);
  });

  it('keeps money, deletion, identity and access management for the owner', () => {
    for (const id of [
      'deleteServer',
      'updateServer',
      'reinstallServer',
      'listServerUsers',
      'createServerUser',
      'updateServerUser',
      'deleteServerUser',
    ])
      expect(accessOfRoute(id)).toBe('owner');
    // Unknown: owner-only (fail closed).
    expect(accessOfRoute('someRouteAddedLater')).toBe('owner');
  });

  it('lets a grant reach only its own routes; read-only is implied by every grant', () => {
    expect(allows([], 'read-only')).toBe(true);
    expect(allows(['files'], 'files')).toBe(true);
    expect(allows(['files'], 'console')).toBe(false);
    expect(allows([...SERVER_PERMISSIONS], 'owner')).toBe(false);
  });

  it('covers only paths on one server', () => {
    expect(isServerRoute('/v1/servers/:id')).toBe(true);
    expect(isServerRoute('/v1/servers/:id/files')).toBe(true);
    expect(isServerRoute('/v1/servers')).toBe(false);
    expect(isServerRoute('/v1/servers/quote')).toBe(false);
  });
});
